package rdmap

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/ring"
)

// CQ is a completion queue. Endpoints push completions; the user polls
// (Poll waits, PollN does not) or is called back (SetHandler).
//
// A CQ has a depth. Overflow is never a silent drop (RFC 5040 §8.1.1 item
// 10): a completion that finds the CQ full is kept in an overflow list, the
// CQ reports errCQOverflow from err, and the Endpoint whose completion
// overflowed is terminated (a local catastrophic error); Endpoints that do
// not use the CQ are unaffected. Polling returns the kept completions in
// order.
type CQ struct {
	depth      int32
	overflowed bool // guarded by mu
	// hPending, hRunning: see handler below; guarded by mu.
	hPending, hRunning bool

	mu sync.Mutex
	// ring holds up to depth completions; it grows on demand so that an
	// idle CQ costs little memory (thousands of streams each have two).
	ring     ring.Ring[Completion]
	overflow *[]Completion // made by the first overflow (rare): 16 octets less per CQ

	// wake is where Polls wait: its channel holds a token when a waiting
	// Poll may find a completion (a Poll that takes one and leaves more
	// behind passes the token on), and a completion is signalled there
	// only while a Poll waits (pollers.n), so that a CQ polled once (at
	// set-up) and then handled costs its completions no channel
	// operation. wake is made by the first Poll that waits: the CQs of
	// idle streams hold none. Guarded by mu (the channel itself is used
	// outside it).
	wake *pollers
	// handler is SetHandler's function (nil: none), read without mu by
	// the receive path. hPending: completions were added since the
	// handler last started and somebody (a receive path that will
	// dispatch, a goroutine of its own, the running call) will run it;
	// hRunning: a call is in progress. Guarded by mu.
	handler atomic.Pointer[func()]
}

// NewCQ returns a completion queue holding depth completions (minimum 1).
func NewCQ(depth int) *CQ {
	depth = min(max(depth, 1), math.MaxInt32)
	return &CQ{depth: int32(depth)}
}

// Depth returns the CQ's capacity.
func (cq *CQ) queueDepth() int { return int(cq.depth) }

// Err returns an error wrapping errCQOverflow once the CQ has overflowed.
func (cq *CQ) err() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.overflowed {
		return fmt.Errorf("%w (depth %d)", errCQOverflow, cq.depth)
	}
	return nil
}

// push adds c; it reports whether c overflowed the CQ. deferred says that
// the caller's goroutine will run the handler once it holds no lock of
// the endpoint: if no call runs, push reserves the next one for it
// (claimed; the caller then calls runClaimed). Otherwise a goroutine of
// its own runs the handler, unless a run is already due.
func (cq *CQ) push(c *Completion, deferred bool) (overflow, claimed bool) {
	cq.mu.Lock()
	if cq.ring.Len() == int(cq.depth) {
		cq.overflowLocked(c)
		overflow = true
	} else {
		cq.ring.Push(*c)
	}
	spawn := false
	if cq.handler.Load() != nil {
		switch {
		case cq.hRunning:
			cq.hPending = true // the running call goes once more
		case deferred:
			cq.hRunning, cq.hPending, claimed = true, false, true
		case !cq.hPending:
			cq.hPending, spawn = true, true
		}
	}
	if !spawn && (cq.wake == nil || cq.wake.n == 0) {
		// The path of a handler's completions: nobody else to tell.
		cq.mu.Unlock()
		return overflow, claimed
	}
	cq.tellUnlock(spawn)
	return overflow, claimed
}

// overflowLocked keeps c beyond the depth (RFC 5040 §8.1.1 item 10: never
// a silent drop). mu is held.
func (cq *CQ) overflowLocked(c *Completion) {
	if cq.overflow == nil {
		cq.overflow = new([]Completion)
	}
	*cq.overflow = append(*cq.overflow, *c)
	cq.overflowed = true
}

// tellUnlock releases mu and tells of a completion just added: a waiting
// Poll, and (spawn) a goroutine of its own that runs the handler. mu is
// held on entry.
func (cq *CQ) tellUnlock(spawn bool) {
	wake := cq.wake.waiting()
	cq.mu.Unlock()
	signal(wake)
	if spawn {
		go cq.dispatch()
	}
}

// SetHandler makes f the CQ's completion handler (nil: none), called
// after completions are added, and soon if the CQ already holds some; f
// takes them with PollN. Calls never overlap; completions added while f
// runs lead to one more call. A one-shot wake-up is a handler that
// removes itself. f may run on the goroutine that receives the endpoint's
// messages: it must not block. It may post (PostSend, PostRecv) but must
// not wait for a completion (Poll, Endpoint.Do), which only the blocked
// goroutine could deliver.
func (cq *CQ) SetHandler(f func()) {
	// The direct hand-off of a completion, what a kernel consumer's
	// completion handler is to an RDMA device: a completion made by an
	// arriving message (a Send received, a Read or Atomic Response placed)
	// is handed to f by the receiving goroutine once it holds no lock of
	// the endpoint; one made by the transmit goroutine (a Send or Write
	// handed to the LLP) by that goroutine between two messages. No
	// goroutine is woken for either. Completions made elsewhere (a small
	// request issued by its poster, a flush) go to f from a goroutine of
	// its own. A small request posted from f to an idle send queue is
	// handed to the LLP from f itself, which waits while the LLP applies
	// flow control: a handler posts no more than the peer reads.
	cq.mu.Lock()
	if f == nil {
		cq.handler.Store(nil)
		cq.mu.Unlock()
		return
	}
	cq.handler.Store(&f)
	spawn := cq.ring.Len()+cq.overflowLen() > 0 && !cq.hPending && !cq.hRunning
	if spawn {
		cq.hPending = true
	}
	cq.mu.Unlock()
	if spawn {
		go cq.dispatch()
	}
}

// dispatch runs the handler while a run is due and no other call runs.
func (cq *CQ) dispatch() {
	cq.mu.Lock()
	if !cq.hPending || cq.hRunning {
		cq.mu.Unlock()
		return
	}
	cq.hRunning, cq.hPending = true, false
	cq.mu.Unlock()
	cq.runClaimed()
}

// runClaimed runs the handler for a run reserved to the caller (hRunning
// set by it), and again while completions came meanwhile.
func (cq *CQ) runClaimed() {
	for {
		if f := cq.handler.Load(); f != nil {
			(*f)()
		}
		cq.mu.Lock()
		if !cq.hPending {
			cq.hRunning = false
			cq.mu.Unlock()
			return
		}
		cq.hPending = false
		cq.mu.Unlock()
	}
}

// overflowLen is the number of completions kept beyond the depth; mu is
// held.
func (cq *CQ) overflowLen() int {
	if cq.overflow == nil {
		return 0
	}
	return len(*cq.overflow)
}

// popLocked removes the oldest completion; cq.mu held, n > 0.
func (cq *CQ) popLocked() Completion {
	var c Completion
	cq.popToLocked(&c)
	return c
}

// popToLocked removes the oldest completion into *dst; cq.mu held, n > 0.
func (cq *CQ) popToLocked(dst *Completion) {
	cq.ring.PopTo(dst)
	if cq.overflowLen() > 0 {
		o := *cq.overflow
		cq.ring.Push(o[0])
		o[0] = Completion{}
		*cq.overflow = o[1:]
	}
}

// PollN moves up to len(dst) completions into dst without blocking and
// returns how many.
func (cq *CQ) PollN(dst []Completion) int {
	cq.mu.Lock()
	k := 0
	for k < len(dst) && cq.ring.Len() > 0 {
		cq.popToLocked(&dst[k])
		k++
	}
	cq.mu.Unlock()
	return k
}

// Poll waits for the oldest completion or for ctx to end. Any number of
// goroutines may poll at once.
func (cq *CQ) Poll(ctx context.Context) (Completion, error) {
	waited := false
	for {
		cq.mu.Lock()
		if waited {
			cq.wake.n--
			waited = false
		}
		if cq.ring.Len() > 0 {
			c := cq.popLocked()
			var pass chan struct{}
			if cq.ring.Len() > 0 {
				pass = cq.wake.waiting()
			}
			cq.mu.Unlock()
			signal(pass)
			return c, nil
		}
		if cq.wake == nil {
			cq.wake = &pollers{ch: make(chan struct{}, 1)}
		}
		cq.wake.n++
		waited = true
		wake := cq.wake.ch
		cq.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			cq.mu.Lock()
			cq.wake.n--
			cq.mu.Unlock()
			return Completion{}, ctx.Err()
		}
	}
}

// pollers is where the Polls of a CQ wait.
type pollers struct {
	ch chan struct{}
	n  int // Polls waiting (registered under the CQ's mu before they wait)
}

// waiting returns the channel to signal if a Poll waits, else nil. The
// CQ's mu is held.
func (p *pollers) waiting() chan struct{} {
	if p == nil || p.n == 0 {
		return nil
	}
	return p.ch
}

// signal puts a token in ch unless it holds one; a nil ch is ignored.
func signal(ch chan struct{}) {
	if ch == nil {
		return
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}
