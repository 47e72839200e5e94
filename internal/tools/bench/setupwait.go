package bench

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// setupWaiter is a stream Start admitted that waits for its client's first
// message (the Setup). It holds no goroutine and no timer of its own: the
// server keeps its waiters in one list in admission order, and since they
// all have the same deadline (SetupTimeout after admission) one timer for
// the oldest serves them all. An idle stream costs this record (128
// octets) and one function value, less than a timer and its closures
// per stream (issue 21: memory per idle stream).
type setupWaiter struct {
	s        *Server
	ctx      context.Context
	ep       *rdmap.Endpoint
	peer     netip.Addr
	admitted time.Time
	claimed  atomic.Bool // run or expired: the stream is being served
	// In setupWait's list while listed; guarded by setupWait.mu.
	listed     bool
	prev, next *setupWaiter
}

// setupWait is the list of a server's setupWaiters, oldest first, and the
// one timer that ends the wait of those whose deadline passed.
type setupWait struct {
	mu         sync.Mutex
	head, tail *setupWaiter
	n          int
	timer      *time.Timer // armed for the head's deadline while the list is not empty
	stopped    bool        // the server ended: no new timer
	timeout    time.Duration
	expire     func(*setupWaiter) // runs a waiter whose deadline passed
}

// add appends a waiter admitted now and arms the timer if it is the only
// one. The admission time is taken under the lock, so the list stays in
// deadline order.
func (q *setupWait) add(w *setupWaiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w.admitted = time.Now()
	w.listed = true
	w.prev = q.tail
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
	if q.n == 1 && !q.stopped {
		q.armLocked()
	}
}

// armLocked arms the timer for the head's deadline; the list is not empty.
func (q *setupWait) armLocked() {
	d := time.Until(q.head.admitted.Add(q.timeout))
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
		return
	}
	q.timer.Reset(d)
}

// remove takes w off the list; a no-op if it is not on it.
func (q *setupWait) remove(w *setupWaiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(w)
}

func (q *setupWait) removeLocked(w *setupWaiter) {
	if !w.listed {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	q.n--
	// The timer stays armed for a head that left: fire finds nothing due
	// and re-arms for the new head.
}

// fire ends the wait of every waiter whose deadline passed and re-arms the
// timer for the next.
func (q *setupWait) fire() {
	now := time.Now()
	var due []*setupWaiter
	q.mu.Lock()
	for q.head != nil && !now.Before(q.head.admitted.Add(q.timeout)) {
		w := q.head
		q.removeLocked(w)
		due = append(due, w)
	}
	if q.head != nil && !q.stopped {
		q.armLocked()
	}
	q.mu.Unlock()
	for _, w := range due {
		if w.claimed.CompareAndSwap(false, true) {
			go q.expire(w)
		}
	}
}

// len returns the number of waiters.
func (q *setupWait) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// stop stops the timer for good (the server ended; every stream's
// endpoint has ended, so every waiter ran).
func (q *setupWait) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	if q.timer != nil {
		q.timer.Stop()
	}
}

// run serves the waiter's stream once, whichever of its Setup's arrival,
// its endpoint's end or its deadline comes first.
func (w *setupWaiter) run() {
	if !w.claimed.CompareAndSwap(false, true) {
		return
	}
	w.s.setup.remove(w)
	w.s.serveWaiter(w)
}
