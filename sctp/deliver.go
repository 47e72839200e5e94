package sctp

import (
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/goid"
)

// maxDeliveryEntries bounds the packets queued for the delivery goroutine
// (the memory they hold is bounded by the receive buffer, see
// Association.rxQueued). A packet whose DATA finds the queue full is not
// acknowledged (its DATA is dropped, RFC 9260 §6.2) and the sender
// retransmits it.
const maxDeliveryEntries = 1 << 16

// copyBelow is the size under which a received message is copied out of
// its packet into a pooled buffer of its own size class, so that a queue
// of small messages does not hold a 64 KiB packet buffer each.
const copyBelow = 1<<15 + 1

// rxMsg is one received user message: data points into the entry's packet
// buffer, into buf (a copy), or is a reassembled message of its own.
type rxMsg struct {
	sid  uint16
	ppid uint32
	data []byte
	buf  *[]byte
	cost int // octets charged to the receive window
}

// dqEntry is one received packet's messages and the buffer they point
// into (nil if none do).
type dqEntry struct {
	buf  *[]byte
	cost int // the packet buffer's octets charged to the receive window
	msgs []rxMsg
}

// deliveryQueue hands received messages from the goroutine that reads the
// socket to the one that calls the user's receive callback, in order. Its
// entries are a fixed ring whose message slices are reused: queueing
// allocates nothing in the steady state.
type deliveryQueue struct {
	a      *Association
	mu     sync.Mutex
	cond   sync.Cond
	ring   []dqEntry
	head   int
	n      int
	ended  bool
	fn     func(sid uint16, ppid uint32, b []byte)
	doneFn func(error)

	// cbMu is held while fn runs, and the user's closing checked under it:
	// Close and Abort wait for a call in progress (quiesce), so that once
	// they return fn is not called again. runner is the delivery
	// goroutine's id: Close or Abort called from fn itself does not wait
	// for its own caller.
	cbMu   sync.Mutex
	runner atomic.Uint64

	// The entry being filled by the receive path (under a.mu).
	cur      *dqEntry
	curBytes int
}

func (q *deliveryQueue) init(a *Association) {
	q.a = a
	q.cond.L = &q.mu
}

// full reports whether no entry is free; called by the receive path.
func (q *deliveryQueue) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n >= maxDeliveryEntries
}

// begin starts the entry of one received packet; a.mu is held.
func (q *deliveryQueue) begin() *dqEntry {
	if q.cur != nil {
		return q.cur
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n >= maxDeliveryEntries {
		return nil
	}
	if q.n == len(q.ring) {
		// Grow (up to maxDeliveryEntries), keeping the order.
		nr := make([]dqEntry, max(2*len(q.ring), 16))
		for i := 0; i < q.n; i++ {
			nr[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = nr, 0
	}
	e := &q.ring[(q.head+q.n)%len(q.ring)]
	e.msgs = e.msgs[:0]
	e.buf, e.cost = nil, 0
	q.cur = e
	return e
}

// commit queues the entry begun for a packet whose buffer is bp; it
// reports whether the buffer now belongs to the queue. a.mu is held.
func (q *deliveryQueue) commit(bp *[]byte, refsPacket bool) bool {
	e := q.cur
	q.cur = nil
	if e == nil || len(e.msgs) == 0 {
		return false
	}
	if refsPacket {
		e.buf = bp
		if bp != nil {
			e.cost = cap(*bp) // charged by handleData (rxPktCharged)
			q.a.rxQueued += e.cost
		}
	}
	q.mu.Lock()
	q.n++
	q.mu.Unlock()
	q.cond.Signal()
	return refsPacket
}

// end marks the end of the association: the goroutine hands over what is
// queued, then calls doneFn.
func (q *deliveryQueue) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// run is the delivery goroutine.
func (q *deliveryQueue) run() {
	a := q.a
	q.runner.Store(goid.ID())
	for {
		q.mu.Lock()
		for q.n == 0 && !q.ended {
			q.cond.Wait()
		}
		if q.n == 0 {
			q.mu.Unlock()
			break
		}
		e := q.ring[q.head] // a copy: the ring may grow meanwhile
		q.mu.Unlock()

		octets := e.cost
		for i := range e.msgs {
			m := &e.msgs[i]
			q.cbMu.Lock()
			if !a.userClosed.Load() && q.fn != nil {
				q.fn(m.sid, m.ppid, m.data)
			}
			q.cbMu.Unlock()
			octets += m.cost
			putBuf(m.buf)
			*m = rxMsg{}
		}
		putBuf(e.buf)

		q.mu.Lock()
		q.ring[q.head].buf, q.ring[q.head].cost = nil, 0
		q.head = (q.head + 1) % len(q.ring)
		q.n--
		q.mu.Unlock()
		a.delivered(octets)
	}
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	if a.rxAcct != nil {
		a.rxAcct.Close() // the association has ended and everything is handed over
	}
	if q.doneFn != nil {
		q.doneFn(err)
	}
}

// quiesce waits until no call of the receive callback is in progress,
// unless it is called from the callback itself; the user's closing is set
// already, so no call starts after it returns.
func (q *deliveryQueue) quiesce() {
	if r := q.runner.Load(); r != 0 && r == goid.ID() {
		return // Close or Abort from fn: its own call is the one in progress
	}
	q.cbMu.Lock()
	q.cbMu.Unlock() //nolint:staticcheck // a barrier
}
