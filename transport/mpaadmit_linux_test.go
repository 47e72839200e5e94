package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// serveMPAListener runs an MPA listener with o's caps and the echo handler.
func serveMPAListener(t *testing.T, o Options) (*Listener, func()) {
	t.Helper()
	o.LLP = MPA
	ln, err := Listen(o, "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, new(rdmap.Device).AllocPD(), echoHandler{}) }()
	return ln, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// dialFrom opens TCP connections to addr from local address ip.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	return c
}

// floodConn opens a connection that will send nothing; a connection the
// listener resets before connect returns yields nil.
func floodConn(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	require.NoError(t, err)
	return c
}

// legitMPA completes an MPA start-up from ip (RFC 5044 §7.1.2) and closes.
func legitMPA(t *testing.T, ip, addr string) {
	t.Helper()
	nc := dialFrom(t, ip, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mpa.Client(ctx, nc, &mpa.Config{Enhanced: true, PrivateData: []byte("ok")})
	require.NoError(t, err, "a legitimate MPA client from %s", ip)
	_ = c.Abort()
}

// TestMPA_SilentConnectionFlood_Bounded: 1,000 TCP connections that never
// send an MPA Request. At most MaxStartupsPerAddress of one address are in
// start-up at once, the rest are reset at once and counted; what the
// listener holds stays small (each connection in start-up allocates one
// startup-frame buffer); a legitimate client from another address
// completes its start-up during the flood; the silent ones are closed
// after StartupTimeout and counted.
func TestMPA_SilentConnectionFlood_Bounded(t *testing.T) {
	const n = 1000
	ln, stop := serveMPAListener(t, Options{MPA: MPAOptions{MaxStartups: 100, MaxStartupsPerAddress: 20, StartupTimeout: 500 * time.Millisecond}})
	defer stop()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var flood []net.Conn
	for range n {
		if c := floodConn(t, "127.0.0.1", ln.Addr()); c != nil {
			flood = append(flood, c)
		}
	}
	defer func() {
		for _, c := range flood {
			_ = c.Close()
		}
	}()
	require.Eventually(t, func() bool {
		st := ln.Stats().MPA
		return st.Admitted+st.RefusedPerAddress == n
	}, 10*time.Second, 5*time.Millisecond)
	st := ln.Stats().MPA
	assert.LessOrEqual(t, st.InStartup, 20)
	assert.GreaterOrEqual(t, st.RefusedPerAddress, uint64(n-40))
	legitMPA(t, "127.0.0.2", ln.Addr())
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d silent connections: %+v; heap in use %+d KiB", n, st, growth>>10)
	assert.Less(t, growth, int64(8<<20))

	require.Eventually(t, func() bool {
		st = ln.Stats().MPA
		return st.InStartup == 0 && st.StartupTimeouts >= 20
	}, 10*time.Second, 10*time.Millisecond, "silent start-ups timed out: %+v", ln.Stats().MPA)
	legitMPA(t, "127.0.0.1", ln.Addr()) // the flooding address, once its connections are gone
}

// TestMPA_StartupCaps: MaxStartups bounds the start-ups from all addresses
// together.
func TestMPA_StartupCaps(t *testing.T) {
	ln, stop := serveMPAListener(t, Options{MPA: MPAOptions{MaxStartups: 10, MaxStartupsPerAddress: 4, StartupTimeout: 5 * time.Second}})
	defer stop()
	var conns []net.Conn
	for i := range 5 {
		for range 4 {
			if c := floodConn(t, fmt.Sprintf("127.0.0.%d", 10+i), ln.Addr()); c != nil {
				conns = append(conns, c)
			}
		}
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	require.Eventually(t, func() bool { st := ln.Stats().MPA; return st.Admitted+st.RefusedStartups == 20 }, 10*time.Second, 5*time.Millisecond)
	st := ln.Stats().MPA
	assert.Equal(t, uint64(10), st.Admitted)
	assert.Equal(t, uint64(10), st.RefusedStartups)
	assert.Equal(t, 10, st.InStartup)
}

// TestMPA_RefusesNearFDLimit: with RLIMIT_NOFILE lowered, connections are
// refused (reset) while the listener's open connections come within
// FDReserve of the limit, before the process runs out of descriptors;
// once they close, clients are served again.
func TestMPA_RefusesNearFDLimit(t *testing.T) {
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	lim := syscall.Rlimit{Cur: uint64(len(fds) + 400), Max: old.Max}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	defer func() { require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)) }()
	ln, stop := serveMPAListener(t, Options{MPA: MPAOptions{MaxStartups: 1000, MaxStartupsPerAddress: 1000, StartupTimeout: 5 * time.Second, FDReserve: 250}})
	defer stop()
	st := ln.Stats().MPA
	require.Equal(t, int(lim.Cur), st.FDLimit)
	var conns []net.Conn
	for range 200 {
		if c := floodConn(t, "127.0.0.1", ln.Addr()); c != nil {
			conns = append(conns, c)
		}
	}
	require.Eventually(t, func() bool { st = ln.Stats().MPA; return st.Admitted+st.RefusedFDs == 200 }, 10*time.Second, 5*time.Millisecond)
	assert.Positive(t, st.RefusedFDs)
	assert.LessOrEqual(t, st.Open+st.FDReserve, st.FDLimit)
	for _, c := range conns {
		_ = c.Close()
	}
	require.Eventually(t, func() bool { return ln.Stats().MPA.Open == 0 }, 10*time.Second, 5*time.Millisecond)
	legitMPA(t, "127.0.0.1", ln.Addr())
}

// TestMPA_ConnectCloseChurn_Bounded: four rounds of 500 connections opened
// and closed at once (4,000 x 4 took +617 MB before): the listener's heap
// comes back within 4 MiB and every connection is accounted for.
func TestMPA_ConnectCloseChurn_Bounded(t *testing.T) {
	ln, stop := serveMPAListener(t, Options{MPA: MPAOptions{MaxStartups: 1000, MaxStartupsPerAddress: 1000}})
	defer stop()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for round := range 4 {
		for range 500 {
			if c := floodConn(t, "127.0.0.1", ln.Addr()); c != nil {
				_ = c.Close()
			}
		}
		require.Eventually(t, func() bool { return ln.Stats().MPA.Open == 0 }, 10*time.Second, 5*time.Millisecond, "round %d", round)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	st := ln.Stats().MPA
	t.Logf("2,000 connect+close: %+v; heap in use %+d KiB", st, growth>>10)
	assert.Less(t, growth, int64(4<<20))
	assert.Equal(t, uint64(2000), st.Admitted)
	assert.Equal(t, uint64(2000), st.StartupFailures, "each ended before its MPA Request")
	legitMPA(t, "127.0.0.1", ln.Addr())
}
