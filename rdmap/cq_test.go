package rdmap

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCQ_OrderPollNAndOverflow(t *testing.T) {
	cq := NewCQ(3)
	assert.Equal(t, 3, cq.queueDepth())
	for i := range 5 {
		over, _ := cq.push(&Completion{WRID: uint64(i)}, false)
		assert.Equal(t, i >= 3, over)
	}
	require.ErrorIs(t, cq.err(), errCQOverflow)
	assert.Equal(t, 5, cq.queued())
	dst := make([]Completion, 2)
	require.Equal(t, 2, cq.PollN(dst))
	assert.Equal(t, []uint64{0, 1}, []uint64{dst[0].WRID, dst[1].WRID})
	c, ok := cq.tryPoll()
	require.True(t, ok)
	assert.Equal(t, uint64(2), c.WRID)
	c, err := cq.Poll(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(3), c.WRID)
	require.Equal(t, 1, cq.PollN(make([]Completion, 10)))
	_, ok = cq.tryPoll()
	assert.False(t, ok)
	assert.Equal(t, 1, NewCQ(0).queueDepth())
}

func TestCQ_PollWaitsAndCancels(t *testing.T) {
	cq := NewCQ(4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := cq.Poll(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var wg sync.WaitGroup
	got := make(chan uint64, 4)
	for range 4 {
		wg.Go(func() {
			c, err := cq.Poll(context.Background())
			if assert.NoError(t, err) {
				got <- c.WRID
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	for i := range 4 {
		cq.push(&Completion{WRID: uint64(i)}, false)
	}
	wg.Wait()
	close(got)
	sum := uint64(0)
	for id := range got {
		sum += id
	}
	assert.Equal(t, uint64(6), sum)
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "WriteImm", WRWriteImm.String())
	assert.Equal(t, "WorkType(99)", WorkType(99).String())
	assert.Equal(t, "CmpSwap", atomicCmpSwap.String())
	assert.Equal(t, "reserved atomic opcode 0x1", atomicOp(1).String())
}

// An idle CQ holds no channel (thousands of idle streams have two CQs
// each), and a Poll that waits is woken by the next completion.
func TestCQ_LazyChannels(t *testing.T) {
	cq := NewCQ(4)
	assert.Nil(t, cq.wake)
	cq.push(&Completion{WRID: 1}, false)
	assert.Nil(t, cq.wake, "a push makes no channel")
	c, err := cq.Poll(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.WRID)

	got := make(chan Completion)
	go func() {
		c, _ := cq.Poll(context.Background())
		got <- c
	}()
	require.Eventually(t, func() bool {
		cq.mu.Lock()
		defer cq.mu.Unlock()
		return cq.wake != nil
	}, 5*time.Second, time.Millisecond)
	cq.push(&Completion{WRID: 2}, false)
	assert.Equal(t, uint64(2), (<-got).WRID)
}

// A completion is signalled on the Polls' channel only while a Poll waits:
// a CQ polled once and then drained by PollN (bench polls at set-up, then
// hands completions to a handler) costs its completions no channel
// operation; every waiting Poll is still woken, one completion each, and a
// Poll that gave up (its context ended) is no longer counted.
func TestCQ_SignalsOnlyWaitingPolls(t *testing.T) {
	cq := NewCQ(8)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := cq.Poll(ctx)
		gaveUp <- err
	}()
	waiting := func(n int) func() bool {
		return func() bool {
			cq.mu.Lock()
			defer cq.mu.Unlock()
			return cq.wake != nil && cq.wake.n == n
		}
	}
	require.Eventually(t, waiting(1), 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	require.True(t, waiting(0)())

	for i := range 3 {
		cq.push(&Completion{WRID: uint64(i)}, false)
	}
	assert.Zero(t, len(cq.wake.ch), "nobody waits: no token")
	var dst [4]Completion
	require.Equal(t, 3, cq.PollN(dst[:]))

	got := make(chan uint64, 3)
	for range 3 {
		go func() {
			c, err := cq.Poll(context.Background())
			assert.NoError(t, err)
			got <- c.WRID
		}()
	}
	require.Eventually(t, waiting(3), 5*time.Second, time.Millisecond)
	for i := range 3 {
		cq.push(&Completion{WRID: uint64(10 + i)}, false)
	}
	seen := map[uint64]bool{}
	for range 3 {
		select {
		case id := <-got:
			seen[id] = true
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting Poll was not woken")
		}
	}
	assert.Equal(t, map[uint64]bool{10: true, 11: true, 12: true}, seen)
	require.True(t, waiting(0)())
}

// TestCQ_SetHandlerOneShot: a handler set on a CQ that already holds a
// completion is called for it, and a handler that removes itself is a
// one-shot wake-up (what replaced a callback registered for the next
// completion): later completions call nothing.
func TestCQ_SetHandlerOneShot(t *testing.T) {
	cq := NewCQ(4)
	cq.push(&Completion{WRID: 7}, false)
	calls := make(chan Completion, 4)
	cq.SetHandler(func() {
		cq.SetHandler(nil)
		c, _ := cq.tryPoll()
		calls <- c
	})
	assert.Equal(t, uint64(7), (<-calls).WRID)
	cq.push(&Completion{WRID: 8}, false)
	assert.Nil(t, cq.handler.Load(), "the handler removed itself")
	assert.Equal(t, 1, cq.queued(), "nothing took the later completion")
	assert.Empty(t, calls)
}
