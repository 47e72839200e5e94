package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// startServerStats is startServer that also returns the server, for its
// counters.
func startServerStats(t *testing.T, llp string, cfg ServerConfig) (string, *Server, func()) {
	t.Helper()
	return startServerOpts(t, transport.Options{LLP: llp}, cfg)
}

// startServerOpts is startServerStats with the listener's options.
func startServerOpts(t *testing.T, o transport.Options, cfg ServerConfig) (string, *Server, func()) {
	t.Helper()
	ln, err := transport.Listen(o, "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	return ln.Addr(), srv, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// legitRun is a legitimate client's short Write and Read runs, which must
// complete while the server is under attack. A run's stream slot is freed
// when the server sees the client's graceful close, a moment after the
// client's Run returned: with MaxStreams 1 the next run waits for it, as
// a client of a full server would retry.
func legitRun(t *testing.T, llp, addr string, srv *Server) {
	t.Helper()
	for _, test := range []Test{TestWrite, TestRead} {
		require.Eventually(t, func() bool { return srv.activeStreams() == 0 }, 10*time.Second, time.Millisecond,
			"the previous stream's slot is freed")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: test, Size: 4096, Depth: 4, Iters: 50})
		cancel()
		require.NoError(t, err, "legitimate %v run", test)
		assert.Equal(t, uint64(50), res.Forward.Ops)
	}
}

// TestServer_SetupAmplificationRefused: one 32-octet Setup must not make
// the server allocate gigabytes. A stream's buffers are reserved from the
// server's budget (MaxMemory) before anything is allocated: a Setup that
// does not fit (16 MiB Sends: the registered buffer and the two receive
// buffers the sink of a bandwidth Send holds at this size, 48 MiB against
// a 32 MiB budget) is refused with statusNoMemory (the client's error
// names the budget), the server allocates well under the request (at most
// 64 MiB in this process during the attack), counts the refusal, and
// keeps serving within budget.
func TestServer_SetupAmplificationRefused(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, srv, stop := startServerStats(t, llp, ServerConfig{MaxMemory: 32 << 20, MaxSize: 64 << 20})
			defer stop()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: TestSend,
					Size: 16 << 20, Depth: MaxDepth, Iters: 1})
				cancel()
				require.ErrorIs(t, err, errRefused)
				assert.Contains(t, err.Error(), "memory budget")
			}
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, allocated, uint64(64<<20), "octets allocated while four Setups asked for 4 x 48 MiB")
			legitRun(t, llp, addr, srv)
			require.Eventually(t, func() bool { return srv.Stats().Reserved == 0 }, 5*time.Second, 10*time.Millisecond,
				"every reservation given back")
			st := srv.Stats()
			assert.Equal(t, uint64(4), st.RefusedMemory)
			assert.Equal(t, int64(32<<20), st.MaxMemory)
			t.Logf("%s: %d MiB allocated in the process during 4 refused Setups; %+v", llp, allocated>>20, st)
		})
	}
}

// TestServer_SilentClientReleasedAfterDeadline: a client that opens a
// stream and never sends its Setup held a slot for as long as it stayed;
// with one slot, every other client was refused ("server busy"). The
// Setup deadline ends the silent stream and frees the slot, counted.
//
// The server is a transport.Starter: a stream waiting for its Setup holds
// no goroutine, and the deadline is a timer.
func TestServer_SilentClientReleasedAfterDeadline(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			const deadline = 300 * time.Millisecond
			addr, srv, stop := startServerStats(t, llp, ServerConfig{MaxStreams: 1, SetupTimeout: deadline})
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// The attacker: a bench stream that says Hello and then nothing.
			opts := transport.Options{LLP: llp, PrivateData: []byte(Hello)}
			pd := new(rdmap.Device).AllocPD()
			silent, err := transport.Dial(ctx, opts, addr, 1, pd, func(ep *rdmap.Endpoint) error {
				return ep.PostRecv(0, make([]byte, ctrlLen))
			})
			require.NoError(t, err)
			defer func() { _ = silent.Close(ctx) }()
			require.Eventually(t, func() bool { return srv.activeStreams() == 1 }, 5*time.Second, time.Millisecond)
			start := time.Now()
			require.Eventually(t, func() bool { return srv.Stats().SetupTimeouts == 1 }, 10*time.Second, 5*time.Millisecond,
				"the silent stream is ended after the Setup deadline")
			assert.GreaterOrEqual(t, time.Since(start), deadline/2)
			require.Eventually(t, func() bool { return srv.activeStreams() == 0 }, 5*time.Second, time.Millisecond, "slot freed")
			legitRun(t, llp, addr, srv)
		})
	}
}

// TestServer_ClientShareLeavesReserve: one client (one peer address) can
// take at most MaxStreams less the reserve; the reserve stays for other
// clients (4096 idle sessions of one attacker locked every other client
// out before). Both LLPs.
func TestServer_ClientShareLeavesReserve(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, srv, stop := startServerStats(t, llp, ServerConfig{MaxStreams: 8, StreamReserve: 2})
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pd := new(rdmap.Device).AllocPD()
			greedy, err := transport.Dial(ctx, transport.Options{LLP: llp, PrivateData: []byte(Hello), Pion: transport.SCTPOptions{LocalAddr: "127.0.0.1"}, MPA: transport.MPAOptions{LocalAddr: "127.0.0.1"}}, addr, 6, pd, nil)
			require.NoError(t, err, "a client's share: 8 - 2")
			defer greedy.Close(ctx)
			_, err = transport.Dial(ctx, transport.Options{LLP: llp, PrivateData: []byte(Hello), Pion: transport.SCTPOptions{LocalAddr: "127.0.0.1"}, MPA: transport.MPAOptions{LocalAddr: "127.0.0.1"}}, addr, 1, pd, nil)
			require.ErrorIs(t, err, transport.ErrRejected)
			assert.Contains(t, err.Error(), "share")
			assert.Equal(t, uint64(1), srv.Stats().RefusedShare)
			other, err := transport.Dial(ctx, transport.Options{LLP: llp, PrivateData: []byte(Hello), Pion: transport.SCTPOptions{LocalAddr: "127.0.0.2"}, MPA: transport.MPAOptions{LocalAddr: "127.0.0.2"}}, addr, 2, pd, nil)
			require.NoError(t, err, "another client uses the reserve")
			require.NoError(t, other.Close(ctx))
		})
	}
}

// TestServer_FailureLogRateLimited: a burst of failing streams logs at
// most logBurst lines a second, then one line counting the rest.
func TestServer_FailureLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	s := NewServer(ServerConfig{Log: &buf})
	for i := range 50 {
		s.logFailure(fmt.Sprintf("stream failed %d", i))
	}
	assert.Equal(t, logBurst, strings.Count(buf.String(), "stream failed"))
	s.logMu.Lock()
	s.logWindow = time.Now().Add(-2 * time.Second)
	s.logMu.Unlock()
	s.logFailure("stream failed again")
	assert.Contains(t, buf.String(), "(40 more stream failures not logged)")
	assert.Contains(t, buf.String(), "stream failed again")
}
