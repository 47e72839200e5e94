package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// TestSignal: with Config.CQMod, a bandwidth list asks for completions of
// every cq_mod-th operation and of the run's last only; with a Duration
// of the list's last as well; the modulus is at most the depth less the
// post list plus one, and 1 (every operation) in latency mode, for
// ping-pongs and on the server.
func TestSignal(t *testing.T) {
	signaled := func(c *conn, from, to uint64) []uint64 {
		var b []rdmap.SendWR
		for seq := from; seq < to; seq++ {
			b = c.appendOps(b, seq, make([]byte, 8))
		}
		c.signal(b)
		var got []uint64
		for _, wr := range b {
			if !wr.Unsignaled {
				got = append(got, wr.ID>>1)
			}
		}
		return got
	}
	bw := Setup{Test: TestWrite, Size: 8, Depth: 32, Iters: 100}
	c := &conn{setup: bw, cqMod: 10, postList: 1}
	assert.Equal(t, uint64(10), c.cqModulus())
	assert.Equal(t, []uint64{9, 19, 29}, signaled(c, 0, 32))
	assert.Equal(t, []uint64{89, 99}, signaled(c, 80, 100), "the run's last")

	c.setup.Iters, c.setup.Duration = 0, time.Second
	assert.Equal(t, []uint64{9, 19, 22}, signaled(c, 0, 23), "with a duration, the list's last too")

	c = &conn{setup: bw, cqMod: 100, postList: 8}
	assert.Equal(t, uint64(32-8+1), c.cqModulus(), "at most depth - list + 1")
	c = &conn{setup: bw, cqMod: 100, postList: 32}
	assert.Equal(t, uint64(1), c.cqModulus())
	assert.Len(t, signaled(c, 0, 32), 32)

	for _, s := range []Setup{
		{Test: TestWrite, Size: 8, Depth: 1, Iters: 100, Flags: FlagLatency},
		{Test: TestSend, Size: 8, Depth: 1, Iters: 100, Flags: FlagLatency},
		{Test: TestPing, Size: 64, Depth: 1, Iters: 100},
	} {
		c := &conn{setup: s, cqMod: 10}
		assert.Equal(t, uint64(1), c.cqModulus(), "%v latency", s.Test)
	}
	assert.Equal(t, uint64(1), (&conn{setup: bw}).cqModulus(), "the server's conns: every one")
}

// TestRunCQMod: bandwidth runs with Config.CQMod complete every operation
// over sctp-native and MPA, for every test (the atomics still check the
// values the signalled ones return), with iteration counts cq_mod does
// not divide, with post lists, and with a duration (whose last operation
// is not known when it is posted); the server checks the count of Sends
// and Writes with Immediate against the Fin.
func TestRunCQMod(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, _, stop := startServerStats(t, llp, ServerConfig{})
			defer stop()
			for _, c := range []struct {
				test                   Test
				depth, postList, cqMod int
				iters                  uint64
			}{
				{TestWrite, 16, 0, 100, 1001}, {TestRead, 16, 0, 7, 1001}, {TestSend, 16, 0, 5, 1001},
				{TestWriteImm, 16, 0, 5, 500}, {TestFetchAdd, 8, 0, 3, 333}, {TestCmpSwap, 8, 0, 3, 333},
				{TestRead, 8, 3, 100, 777}, {TestWrite, 16, 4, 13, 1001}, {TestSend, 8, 0, 8, 0}, {TestRead, 8, 3, 4, 0},
			} {
				name := fmt.Sprintf("%+v", c)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cfg := Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: c.test, Size: 4096,
					Depth: c.depth, PostList: c.postList, CQMod: c.cqMod, Iters: c.iters}
				if c.iters == 0 {
					cfg.Duration = 200 * time.Millisecond
				}
				res, err := Run(ctx, cfg)
				cancel()
				require.NoError(t, err, name)
				if c.iters > 0 {
					assert.Equal(t, c.iters, res.Forward.Ops, name)
				} else {
					assert.Positive(t, res.Forward.Ops, name)
				}
				assert.Equal(t, res.Forward.Ops, res.PerStream[0].Ops, name)
			}
		})
	}
}
