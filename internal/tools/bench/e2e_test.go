package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// startServer runs a bench server on loopback and returns its address and
// a stop function that waits for it.
func startServer(t *testing.T, llp string, cfg ServerConfig) (string, func()) {
	t.Helper()
	addr, _, stop := startServerStats(t, llp, cfg)
	return addr, stop
}

func TestRunEveryTest(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.SCTPNative, transport.MPA} {
		runEveryTest(t, llp, transport.Options{LLP: llp}, transport.Options{LLP: llp})
	}
}

// TestRunEveryTest_Secure runs every bench test, both directions, over
// sctp-native inside DTLS (RFC 8261) and MPA inside TLS 1.3, each with
// mutual certificate authentication from PEM files.
func TestRunEveryTest_Secure(t *testing.T) {
	sd, cd, st, ct := securetest.Configs(t)
	runEveryTest(t, "sctp-native+dtls", transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: sd}}, transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: cd}})
	runEveryTest(t, "mpa+tls", transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: st}}, transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: ct}})
}

func runEveryTest(t *testing.T, name string, so, co transport.Options) {
	{
		addr, _, stop := startServerOpts(t, so, ServerConfig{})
		for _, tc := range Tests {
			for _, lat := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/lat=%v", name, tc, lat), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					res, err := Run(ctx, Config{Transport: co, Addr: addr, Test: tc,
						Size: 1000, Streams: 2, Depth: 4, Iters: 20, Latency: lat, Bidir: !lat})
					require.NoError(t, err)
					assert.Equal(t, uint64(40), res.Forward.Ops)
					if !lat {
						assert.Equal(t, uint64(40), res.Reverse.Ops)
					}
					assert.Positive(t, res.Forward.Lat.Min)
					assert.LessOrEqual(t, res.Forward.Lat.Min, res.Forward.Lat.Median)
					assert.LessOrEqual(t, res.Forward.Lat.Median, res.Forward.Lat.Max)
				})
			}
		}
		stop()
	}
}

func TestPingVerifies(t *testing.T) {
	addr, stop := startServer(t, transport.SCTPPion, ServerConfig{})
	defer stop()
	var lines []PingLine
	res, err := Run(context.Background(), Config{Addr: addr, Test: TestPing, Size: 4096, Iters: 5,
		OnPing: func(l PingLine) { lines = append(lines, l) }})
	require.NoError(t, err)
	assert.Equal(t, uint64(5), res.Forward.Ops)
	require.Len(t, lines, 5)
	assert.Equal(t, uint64(4), lines[4].Seq)
}

func TestServerRejects(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		addr, stop := startServer(t, llp, ServerConfig{MaxStreams: 1, MaxSize: 4096})
		_, err := Run(context.Background(), Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: TestWrite, Size: 64, Streams: 2, Iters: 1})
		require.ErrorIs(t, err, transport.ErrRejected, llp)
		assert.Contains(t, err.Error(), "server busy")
		// The first run's admitted stream frees its slot when the server
		// sees the association go, a moment after Run returned: a client
		// of a full server retries.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = Run(context.Background(), Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: TestWrite, Size: 8192, Iters: 1})
			if !errors.Is(err, transport.ErrRejected) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		require.ErrorIs(t, err, errRefused, llp)
		assert.Contains(t, err.Error(), "max-size")
		stop()
	}
}

func TestDuration(t *testing.T) {
	addr, stop := startServer(t, transport.MPA, ServerConfig{})
	defer stop()
	res, err := Run(context.Background(), Config{Transport: transport.Options{LLP: transport.MPA}, Addr: addr,
		Test: TestSend, Size: 256, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Positive(t, res.Forward.Ops)
	assert.GreaterOrEqual(t, res.Forward.Elapsed, 200*time.Millisecond)
}

// TestServerStopEndsRun: a server told to stop mid-run (serve's Ctrl-C or
// SIGTERM) sends its Report saying so and closes its streams gracefully;
// the client returns ErrServerEnded alone, one line, on every LLP, with
// what it measured before, whatever the test and direction.
func TestServerStopEndsRun(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.SCTPPion, transport.MPA} {
		for _, c := range []struct {
			test       Test
			lat, bidir bool
		}{{TestWrite, false, false}, {TestSend, true, false}, {TestRead, false, true}} {
			t.Run(fmt.Sprintf("%s/%v/lat=%v/bidir=%v", llp, c.test, c.lat, c.bidir), func(t *testing.T) {
				addr, stop := startServer(t, llp, ServerConfig{})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				type out struct {
					res *Result
					err error
				}
				done := make(chan out, 1)
				ctr := &Counters{}
				go func() {
					res, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: c.test, Size: 4096,
						Streams: 2, Latency: c.lat, Bidir: c.bidir, Duration: 30 * time.Second, Counters: ctr})
					done <- out{res, err}
				}()
				require.Eventually(t, func() bool { return ctr.Ops.Load() > 10 }, 10*time.Second, time.Millisecond)
				stop()
				o := <-done
				require.ErrorIs(t, o.err, ErrServerEnded)
				assert.Equal(t, "the server ended the run", o.err.Error())
				assert.False(t, errors.Is(o.err, context.DeadlineExceeded))
				require.NotNil(t, o.res, "partial results are kept")
				assert.Positive(t, o.res.Forward.Ops)
				for _, sr := range o.res.PerStream {
					if sr.Err != nil {
						assert.ErrorIs(t, sr.Err, ErrServerEnded, "stream %d: no Terminate, no other cause", sr.Stream)
					}
				}
			})
		}
	}
}

// TestRxDepthCreditWindow: the active side of a credited test keeps at
// most RxDepth messages beyond the passive side's last credit, whatever
// its depth, and the passive side posts RxDepth receive buffers (and two
// spares). A window wider than the buffers posted would end the run with
// a Terminate (RFC 5041 §7.1: an untagged message without a buffer is
// fatal); a narrower one is what the server reserves memory for.
func TestRxDepthCreditWindow(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, srv, stop := startServerStats(t, llp, ServerConfig{})
			defer stop()
			for _, c := range []struct {
				test           Test
				depth, rxDepth int
			}{
				{TestSend, 16, 1}, {TestSend, 16, 2}, {TestWriteImm, 8, 3}, {TestSend, 4, 64}, {TestSend, 16, 0},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				ctr := &Counters{}
				type out struct {
					res *Result
					err error
				}
				done := make(chan out, 1)
				cfg := Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: c.test, Size: 4096,
					Depth: c.depth, RxDepth: c.rxDepth, Iters: 3000, Counters: ctr}
				go func() {
					res, err := Run(ctx, cfg)
					done <- out{res, err}
				}()
				want := c.rxDepth
				if want == 0 {
					want = DefaultRxDepth(4096, c.depth, 1)
				}
				// The server reserved the registered buffer and want+2
				// data receives of 4096 octets while the test runs.
				require.Eventually(t, func() bool { return ctr.Ops.Load() > 0 }, 10*time.Second, time.Millisecond)
				assert.Equal(t, int64(4096+(want+2)*4096), srv.Stats().Reserved, "%+v", c)
				o := <-done
				cancel()
				require.NoError(t, o.err, "%+v", c)
				assert.Equal(t, uint64(3000), o.res.Forward.Ops, "%+v", c)
				assert.Equal(t, want, o.res.RxDepth, "%+v", c)
			}
		})
	}
}

func TestDefaultRxDepth(t *testing.T) {
	for _, c := range []struct{ size, depth, streams, want int }{
		{64 << 10, 16, 1, 128},           // 8 MiB of 64 KiB buffers
		{1 << 20, 16, 1, 16},             // never below depth
		{8 << 20, 16, 1, 16},             //
		{1 << 10, 16, 1, MaxRxDepth},     // at most MaxRxDepth
		{64 << 10, 128, 1, 128},          // a window of depth
		{64 << 10, 16, 256, 16},          // 256 MiB for all streams, not below depth
		{64 << 10, 16, 32, 128},          // 32 × 8 MiB fits
		{64 << 10, 16, 128, 32},          // 128 × 2 MiB
		{0, 1, 0, MaxRxDepth},            // nonsense sizes and counts are taken as 1
		{8 << 20, MaxDepth, 1, MaxDepth}, //
	} {
		assert.Equal(t, c.want, DefaultRxDepth(c.size, c.depth, c.streams), "%+v", c)
	}
}

// TestPostList: bandwidth runs posted in lists (Config.PostList,
// perftest's --post_list) and with completions asked for every cq_mod-th
// operation only (Config.CQMod, perftest's -Q) complete every operation
// over sctp-native and MPA, with lists longer than the depth, iteration
// counts neither divides, and a duration (whose last operation is not
// known when it is posted); the atomics still check the values the
// signalled ones return, and the server checks the count of Sends and
// Writes with Immediate against the Fin.
func TestPostList(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, _, stop := startServerStats(t, llp, ServerConfig{})
			defer stop()
			for _, c := range []struct {
				test                   Test
				depth, postList, cqMod int
				iters                  uint64
			}{
				{TestRead, 8, 0, 0, 1001}, {TestRead, 8, 3, 0, 1001}, {TestRead, 4, 100, 0, 77}, {TestRead, 16, 1, 0, 500},
				{TestFetchAdd, 8, 5, 0, 333}, {TestWrite, 16, 4, 0, 1001}, {TestSend, 8, 3, 0, 1001}, {TestRead, 8, 3, 0, 0},
				{TestWrite, 16, 0, 100, 1001}, {TestRead, 16, 0, 7, 1001}, {TestSend, 16, 0, 5, 1001},
				{TestWriteImm, 16, 0, 5, 500}, {TestFetchAdd, 8, 0, 3, 333}, {TestCmpSwap, 8, 0, 3, 333},
				{TestRead, 8, 3, 100, 777}, {TestWrite, 16, 4, 13, 1001}, {TestSend, 8, 0, 8, 0}, {TestRead, 8, 3, 4, 0},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cfg := Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: c.test, Size: 4096,
					Depth: c.depth, PostList: c.postList, CQMod: c.cqMod, Iters: c.iters}
				if c.iters == 0 {
					cfg.Duration = 200 * time.Millisecond
				}
				res, err := Run(ctx, cfg)
				cancel()
				require.NoError(t, err, "%+v", c)
				if c.iters > 0 {
					assert.Equal(t, c.iters, res.Forward.Ops, "%+v", c)
				} else {
					assert.Positive(t, res.Forward.Ops, "%+v", c)
				}
			}
		})
	}
}
