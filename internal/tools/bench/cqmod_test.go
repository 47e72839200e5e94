package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
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
		c.signal(&tally{c: c, postedAt: make([]time.Time, c.setup.depth())}, b)
		var got []uint64
		for _, wr := range b {
			if !wr.Unsignaled {
				got = append(got, wr.ID>>1)
			}
		}
		return got
	}
	bw := setupMsg{Test: TestWrite, Size: 8, Depth: 32, Iters: 100}
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

	for _, s := range []setupMsg{
		{Test: TestWrite, Size: 8, Depth: 1, Iters: 100, Flags: flagLatency},
		{Test: TestSend, Size: 8, Depth: 1, Iters: 100, Flags: flagLatency},
		{Test: TestPing, Size: 64, Depth: 1, Iters: 100},
	} {
		c := &conn{setup: s, cqMod: 10}
		assert.Equal(t, uint64(1), c.cqModulus(), "%v latency", s.Test)
	}
	assert.Equal(t, uint64(1), (&conn{setup: bw}).cqModulus(), "the server's conns: every one")
}

// TestCompleteThrough: a completion completes the operations before it
// only if each of them was posted without asking for one (Config.CQMod);
// one that skips an operation that did ask, or every operation when none
// was quiet, breaks the order of RFC 5040 §5.5 rule 15.
func TestCompleteThrough(t *testing.T) {
	c := &conn{setup: setupMsg{Test: TestWrite, Size: 8, Depth: 8, Iters: 100}, cqMod: 4, postList: 1}
	ty := &tally{c: c, postedAt: make([]time.Time, 8), lat: newLatRecorder(false)}
	var b []rdmap.SendWR
	for seq := range uint64(8) {
		b = c.appendOps(b, seq, make([]byte, 8))
	}
	c.signal(ty, b) // 3 and 7 ask for completions
	now := time.Now()
	assert.ErrorContains(t, ty.completeThrough(7, 0, now), "expected 3")
	assert.Zero(t, ty.done, "nothing counted on an error")
	assert.NoError(t, ty.completeThrough(3, 0, now))
	assert.Equal(t, uint64(4), ty.done)
	assert.NoError(t, ty.completeThrough(7, 0, now))
	assert.Equal(t, uint64(8), ty.done)

	every := &tally{c: &conn{setup: c.setup}, postedAt: make([]time.Time, 8), lat: newLatRecorder(false)}
	assert.ErrorContains(t, every.completeThrough(1, 0, now), "expected 0", "every operation signalled: no skipping")
	assert.NoError(t, every.completeThrough(0, 0, now))
}
