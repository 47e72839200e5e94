//go:build linux

package netem

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/internal/tcpcc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestLink makes a TUN link: the userspace model is what these tests
// are about, whatever the kernel has.
func newTestLink(t *testing.T, p Profile) *Link {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs root, TUN and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("netem links need root (network namespaces, TUN); make test runs as root")
	}
	l, err := NewLink(p, LinkOptions{Backend: BackendTUN, Seed: 42})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

// udpPair opens a UDP socket in A and one in B.
func udpPair(t *testing.T, l *Link) (a, b *net.UDPConn) {
	t.Helper()
	require.NoError(t, l.InA(func() (err error) {
		a, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.AddrA)})
		return err
	}))
	require.NoError(t, l.InB(func() (err error) {
		b, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.AddrB)})
		return err
	}))
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// TestLink_Delay: a UDP round trip through a link of 10 ms each way takes
// 20 ms (within the timer's precision), and the link counts the packets.
func TestLink_Delay(t *testing.T) {
	l := newTestLink(t, Profile{Delay: 10 * time.Millisecond})
	a, b := udpPair(t, l)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := a.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = a.WriteToUDP(buf[:n], from)
		}
	}()
	var rtts []time.Duration
	buf := make([]byte, 2048)
	for range 20 {
		t0 := time.Now()
		_, err := b.WriteToUDP([]byte("ping"), a.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		require.NoError(t, b.SetReadDeadline(time.Now().Add(2*time.Second)))
		_, _, err = b.ReadFromUDP(buf)
		require.NoError(t, err)
		rtts = append(rtts, time.Since(t0))
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	t.Logf("round trips: min %v, median %v, max %v", rtts[0], rtts[10], rtts[19])
	assert.GreaterOrEqual(t, rtts[0], 20*time.Millisecond)
	assert.Less(t, rtts[10], 25*time.Millisecond)
	ab, ba := l.Counters()
	assert.GreaterOrEqual(t, ab.Delivered, uint64(20))
	assert.GreaterOrEqual(t, ba.Delivered, uint64(20))
}

// TestLink_RateAndQueue: UDP offered at 1.5 times the bottleneck's rate
// arrives at the rate, the rest tail-dropped at the bounded queue; and a
// TCP flow through the same link reaches at least 90% of it: the
// emulator is not the bottleneck (issue 22: shown before any figure).
func TestLink_RateAndQueue(t *testing.T) {
	const rate = 50e6
	l := newTestLink(t, Profile{Delay: 5 * time.Millisecond, Rate: rate})
	a, b := udpPair(t, l)
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		total := 0
		for {
			require.NoError(t, a.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
			n, _, err := a.ReadFromUDP(buf)
			if err != nil {
				got <- total
				return
			}
			total += n + 28
		}
	}()
	const size, offered, d = 1400, 1.5 * rate, time.Second
	pkt := make([]byte, size)
	start := time.Now()
	sent := 0
	for time.Since(start) < d {
		// Pace the sender at the offered rate.
		if float64(sent)*8 > offered*time.Since(start).Seconds() {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		_, err := b.WriteToUDP(pkt, a.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		sent += size + 28
	}
	recv := <-got
	udpRate := float64(recv) * 8 / d.Seconds()
	_, ba := l.Counters()
	t.Logf("UDP: offered %.1f Mbit/s, received %.1f Mbit/s; B→A %+v", float64(sent)*8/d.Seconds()/1e6, udpRate/1e6, ba)
	// The bounds leave room for a busy CI host, where the paced sender
	// itself may fall behind.
	assert.InDelta(t, rate, udpRate, 0.2*rate, "UDP through the bottleneck at its rate")
	assert.Positive(t, ba.QueueDrops, "the queue is bounded: the excess is dropped")

	// TCP: A listens, B sends for 2 s.
	var ln net.Listener
	require.NoError(t, l.InA(func() (err error) {
		ln, err = net.Listen("tcp4", l.AddrA+":0")
		return err
	}))
	defer ln.Close()
	recvd := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			recvd <- 0
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		recvd <- n
	}()
	var c net.Conn
	require.NoError(t, l.InB(func() (err error) {
		c, err = net.Dial("tcp4", ln.Addr().String())
		return err
	}))
	buf := make([]byte, 64<<10)
	start = time.Now()
	for time.Since(start) < 2*time.Second {
		_, err := c.Write(buf)
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	n := <-recvd
	tcpRate := float64(n) * 8 / time.Since(start).Seconds()
	t.Logf("TCP: %.1f Mbit/s through a %.0f Mbit/s bottleneck", tcpRate/1e6, rate/1e6)
	assert.GreaterOrEqual(t, tcpRate, 0.8*rate, "TCP fills the bottleneck (95% here, unloaded)")
}

// TestLink_LossAndOutage: 10% random loss loses about a tenth of the
// packets; a link set down passes nothing, and passes again once up.
func TestLink_LossAndOutage(t *testing.T) {
	l := newTestLink(t, Profile{Loss: 0.1})
	a, b := udpPair(t, l)
	// count sends n datagrams from B and counts those A receives, read
	// as they come (a socket buffer would not hold them all).
	count := func(n int) int {
		got := make(chan int, 1)
		go func() {
			k := 0
			buf := make([]byte, 64)
			for {
				_ = a.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				if _, _, err := a.ReadFromUDP(buf); err != nil {
					got <- k
					return
				}
				k++
			}
		}()
		for range n {
			_, err := b.WriteToUDP([]byte("x"), a.LocalAddr().(*net.UDPAddr))
			require.NoError(t, err)
			time.Sleep(20 * time.Microsecond)
		}
		return <-got
	}
	got := count(5000)
	assert.InDelta(t, 4500, got, 150, "about 10%% lost")
	_, ba := l.Counters()
	assert.Equal(t, uint64(5000-got), ba.Lost)

	require.NoError(t, l.SetDown(true))
	assert.Zero(t, count(100), "down: nothing passes")
	require.NoError(t, l.SetDown(false))
	require.NoError(t, l.SetProfile(Profile{}))
	assert.Equal(t, 100, count(100), "up again, no loss")
}

// TestLink_LossOnly: with LossOnly, the loss hits only the packets it
// selects (here UDP to one port); the others all arrive; the kernel
// backend refuses it.
func TestLink_LossOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root, TUN and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("netem links need root (network namespaces, TUN); make test runs as root")
	}
	var port atomic.Uint32
	sel := func(p []byte) bool { // IPv4, UDP, destination port
		ihl := int(p[0]&0xf) * 4
		return p[0]>>4 == 4 && len(p) >= ihl+8 && p[9] == 17 && uint32(binary.BigEndian.Uint16(p[ihl+2:])) == port.Load()
	}
	l, err := NewLink(Profile{Loss: 1}, LinkOptions{LossOnly: sel})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, BackendTUN, l.Backend, "LossOnly picks the TUN backend")
	a1, b := udpPair(t, l)
	var a2 *net.UDPConn
	require.NoError(t, l.InA(func() (err error) {
		a2, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.AddrA)})
		return err
	}))
	defer a2.Close()
	port.Store(uint32(a1.LocalAddr().(*net.UDPAddr).Port))
	for range 50 {
		for _, a := range []*net.UDPConn{a1, a2} {
			_, err := b.WriteToUDP([]byte("x"), a.LocalAddr().(*net.UDPAddr))
			require.NoError(t, err)
		}
	}
	buf := make([]byte, 16)
	got := 0
	for {
		_ = a2.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := a2.ReadFromUDP(buf); err != nil {
			break
		}
		got++
	}
	assert.Equal(t, 50, got, "the other port: nothing lost")
	_ = a1.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, _, err = a1.ReadFromUDP(buf)
	assert.Error(t, err, "the selected port: everything lost")
	_, ba := l.Counters()
	assert.Equal(t, uint64(50), ba.Lost)
	assert.GreaterOrEqual(t, ba.Exempt, uint64(50), "the other port's, and whatever else the namespace sends")

	_, err = NewLink(Profile{}, LinkOptions{Backend: BackendKernel, LossOnly: sel})
	assert.ErrorContains(t, err, "LossOnly needs the TUN backend")
}

// TestLink_TCPCongestion: the namespaces take the TCP congestion control
// asked for (reno: every kernel allows it in a namespace), and report
// it; one the kernel does not have is an error.
func TestLink_TCPCongestion(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root, TUN and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("netem links need root (network namespaces, TUN); make test runs as root")
	}
	l, err := NewLink(Profile{}, LinkOptions{Backend: BackendTUN, TCPCongestion: "reno"})
	require.NoError(t, err)
	assert.Equal(t, "reno", l.TCPCongestion())
	var def string
	require.NoError(t, l.InB(func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
		def = strings.TrimSpace(string(b))
		return err
	}))
	assert.Equal(t, "reno", def, "namespace B's default")
	l.Close()
	_, err = NewLink(Profile{}, LinkOptions{Backend: BackendTUN, TCPCongestion: "no-such-cc"})
	assert.ErrorContains(t, err, `"no-such-cc"`)

	// CUBIC, Linux's default: where the host does not allow it as a
	// namespace's default (net.ipv4.tcp_allowed_congestion_control), the
	// link still takes it and sockets ask for it themselves (as root).
	l, err = NewLink(Profile{}, LinkOptions{Backend: BackendTUN, TCPCongestion: "cubic"})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, "cubic", l.TCPCongestion())
	var cc string
	require.NoError(t, l.InA(func() error {
		lc := net.ListenConfig{Control: tcpcc.Control(l.TCPCongestion())}
		ln, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort(l.AddrA, "0"))
		if err != nil {
			return err
		}
		defer ln.Close()
		cc, err = tcpcc.Of(ln.(*net.TCPListener))
		return err
	}))
	assert.Equal(t, "cubic", cc)
}

// The kernel backend's qdisc is what `tc qdisc add … netem` would set:
// microseconds, per cent, octets per second, a queue limit in packets.
func TestNetemQdisc(t *testing.T) {
	q, err := netemAttrs(Profile{Delay: 25 * time.Millisecond, Jitter: time.Millisecond, Loss: 0.001, Duplicate: 0.02, Reorder: 0.05, ReorderCorr: 0.5, Rate: 20e6}, 1500)
	require.NoError(t, err)
	assert.Equal(t, uint32(25000), q.Latency)
	assert.Equal(t, uint32(1000), q.Jitter)
	assert.Equal(t, uint64(2.5e6), q.Rate64)
	assert.Equal(t, uint32(Profile{Delay: 25 * time.Millisecond, Rate: 20e6}.QueueOctets()/1500), q.Limit, "one bandwidth-delay product in packets")
	assert.InDelta(t, 0.1, q.Loss, 1e-6)
	assert.InDelta(t, 2, q.Duplicate, 1e-6)
	assert.InDelta(t, 5, q.ReorderProb, 1e-6)
	assert.InDelta(t, 50, q.ReorderCorr, 1e-6)
	q, err = netemAttrs(Profile{}, 1500)
	require.NoError(t, err)
	assert.Equal(t, uint32(10000), q.Limit, "no bottleneck: netem's usual limit")
	_, err = netemAttrs(Profile{Loss: 0.01, LossBurst: 4}, 1500)
	assert.ErrorIs(t, err, ErrBurstsNeedTUN)
}

// Namespaces are made and removed without iproute2 (netlink and system
// calls: the busybox guest of internal/tools/vmtest has no usable ip or tc),
// where `ip netns` and pmtu/netns.In find them.
func TestNamespaceLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root, TUN and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("network namespaces need root; make test runs as root")
	}
	ns, err := newNamespace("nmtest" + fmt.Sprint(os.Getpid()))
	require.NoError(t, err)
	path := filepath.Join(netnsDir, ns.name)
	require.FileExists(t, path)
	var addrs []net.Addr
	require.NoError(t, netns.In(ns.name, func() (err error) {
		ifc, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		assert.NotZero(t, ifc.Flags&net.FlagUp, "lo is up")
		addrs, err = ifc.Addrs()
		return err
	}))
	assert.NotEmpty(t, addrs)
	_, err = newNamespace(ns.name)
	assert.Error(t, err, "the name is taken")
	ns.close()
	assert.NoFileExists(t, path)
}
