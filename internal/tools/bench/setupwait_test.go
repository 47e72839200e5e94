package bench

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestWait returns a setupWait whose expired waiters are recorded.
func newTestWait(timeout time.Duration) (*setupWait, func() []*setupWaiter) {
	var mu sync.Mutex
	var expired []*setupWaiter
	q := &setupWait{timeout: timeout, expire: func(w *setupWaiter) {
		mu.Lock()
		defer mu.Unlock()
		expired = append(expired, w)
	}}
	return q, func() []*setupWaiter {
		mu.Lock()
		defer mu.Unlock()
		return append([]*setupWaiter(nil), expired...)
	}
}

// claim is what setupWaiter.run does before serving: the Setup came first.
func claim(q *setupWait, w *setupWaiter) bool {
	if !w.claimed.CompareAndSwap(false, true) {
		return false
	}
	q.remove(w)
	return true
}

// Streams waiting for their Setup share one timer: each whose deadline
// passes is expired once, not before its deadline (the timer takes them in
// admission order, each expiry then runs in a goroutine of its own); one
// whose Setup came first (claimed) is off the list and never expired, even
// when it was the oldest (the timer re-arms for the next).
func TestSetupWait_OneTimerExpiresInOrder(t *testing.T) {
	const timeout = 600 * time.Millisecond // the claims below come well before it, even on a loaded host
	q, expired := newTestWait(timeout)
	ws := make([]*setupWaiter, 6)
	for i := range ws {
		ws[i] = &setupWaiter{}
		q.add(ws[i])
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 6, q.len())
	timer := q.timer
	require.NotNil(t, timer)

	require.True(t, claim(q, ws[0]), "the oldest gets its Setup")
	require.True(t, claim(q, ws[3]), "one in the middle too")
	assert.False(t, claim(q, ws[3]), "a waiter is claimed once")
	assert.Equal(t, 4, q.len())

	require.Eventually(t, func() bool { return len(expired()) == 4 }, 5*time.Second, time.Millisecond)
	got := expired()
	// Each expiry runs in a goroutine of its own: they may record in any order.
	assert.ElementsMatch(t, []*setupWaiter{ws[1], ws[2], ws[4], ws[5]}, got, "claimed ones left out")
	for _, w := range got {
		assert.GreaterOrEqual(t, time.Since(w.admitted), timeout, "not before the deadline")
		assert.True(t, w.claimed.Load())
		assert.False(t, claim(q, w), "an expired waiter is not served again")
	}
	assert.Zero(t, q.len())
	assert.Same(t, timer, q.timer, "one timer for the server, re-armed")
	time.Sleep(timeout)
	assert.Len(t, expired(), 4, "nothing expires twice")

	// The list refills: the same timer serves the next waiter.
	w := &setupWaiter{}
	q.add(w)
	require.Eventually(t, func() bool { return len(expired()) == 5 }, 5*time.Second, time.Millisecond)
	assert.Same(t, w, expired()[4])
	assert.Same(t, timer, q.timer)
}

// A waiter whose Setup arrives as its deadline passes is served once: by
// whichever claims it first.
func TestSetupWait_RaceOfSetupAndDeadline(t *testing.T) {
	for range 50 {
		q, expired := newTestWait(time.Millisecond)
		w := &setupWaiter{}
		q.add(w)
		time.Sleep(time.Millisecond)
		if claim(q, w) {
			// The timer fires, or fired, and finds nothing due.
			time.Sleep(5 * time.Millisecond)
			assert.Empty(t, expired(), "a waiter the Setup claimed never expires")
		} else {
			// The timer claimed it; its expiry runs in a goroutine.
			require.Eventually(t, func() bool { return len(expired()) == 1 }, 5*time.Second, time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
		assert.LessOrEqual(t, len(expired()), 1, "served exactly once")
		assert.Zero(t, q.len())
		q.stop()
	}
}

// Once the server has ended, no waiter expires.
func TestSetupWait_StopEndsTheTimer(t *testing.T) {
	q, expired := newTestWait(20 * time.Millisecond)
	q.add(&setupWaiter{})
	q.stop()
	time.Sleep(60 * time.Millisecond)
	assert.Empty(t, expired())
}

// What the server holds per stream waiting for its Setup stays within Go's
// size classes of 176 and 128 octets (a field beyond costs 16 per stream).
func TestSetupWait_IdleStreamRecordSizes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(conn{}), uintptr(176), "conn")
	assert.LessOrEqual(t, unsafe.Sizeof(setupWaiter{}), uintptr(128), "setupWaiter")
}
