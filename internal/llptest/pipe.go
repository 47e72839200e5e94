// Package llptest provides an in-process LLP: a connected pair of
// llp.Stream values joined by bounded, lossless queues. It is a complete
// implementation of the llp.Stream contract (ordering, segment boundaries,
// flow control, MULPDU, graceful and abortive teardown), used to test the DDP
// and RDMAP layers without a network, and to inject crafted segments.
package llptest

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// defaultMULPDU is the MULPDU of a new pipe end: an Ethernet-sized segment.
const defaultMULPDU = 1448

// defaultDepth is the number of segments a direction queues before
// SendSegment blocks.
const defaultDepth = 256

// Pipe is one end of an in-process LLP stream pair.
type Pipe struct {
	name   string
	mulpdu atomic.Int64
	out    *queue // segments this end sends
	in     *queue // segments this end receives
	peer   *Pipe

	startOnce sync.Once
	done      chan struct{} // closed when the delivery goroutine ends

	sentSegs, sentBytes atomic.Uint64
	recvSegs, recvBytes atomic.Uint64

	// Tap, if set before Start, sees every segment this end sends, before it
	// is queued. Tests use it to inspect the wire.
	tap atomic.Pointer[func([]byte)]
}

// NewPair returns two connected ends with DefaultMULPDU and DefaultDepth.
func NewPair() (a, b *Pipe) { return newPairDepth(defaultDepth) }

// newPairDepth returns two connected ends whose queues hold depth segments.
func newPairDepth(depth int) (a, b *Pipe) {
	ab, ba := newQueue(depth), newQueue(depth)
	a = &Pipe{name: "a", out: ab, in: ba, done: make(chan struct{})}
	b = &Pipe{name: "b", out: ba, in: ab, done: make(chan struct{})}
	a.peer, b.peer = b, a
	a.mulpdu.Store(defaultMULPDU)
	b.mulpdu.Store(defaultMULPDU)
	return a, b
}

// SetMULPDU changes the MULPDU this end reports (and enforces on send).
func (p *Pipe) SetMULPDU(n int) { p.mulpdu.Store(int64(n)) }

// SetTap installs f to observe every segment sent by this end. f must not
// retain the slice.
func (p *Pipe) SetTap(f func(seg []byte)) { p.tap.Store(&f) }

// MULPDU implements llp.Stream.
func (p *Pipe) MULPDU() int { return int(p.mulpdu.Load()) }

// SendSegment implements llp.Stream.
func (p *Pipe) SendSegment(hdr, payload []byte) error {
	n := len(hdr) + len(payload)
	if n > p.MULPDU() {
		return fmt.Errorf("llptest: %d octets > MULPDU %d: %w", n, p.MULPDU(), llp.ErrSegmentTooLarge)
	}
	seg := make([]byte, n)
	copy(seg, hdr)
	copy(seg[len(hdr):], payload)
	if f := p.tap.Load(); f != nil {
		(*f)(seg)
	}
	if err := p.out.push(seg); err != nil {
		return err
	}
	p.sentSegs.Add(1)
	p.sentBytes.Add(uint64(n))
	return nil
}

// Inject queues a raw segment toward the peer as if this end had sent it,
// bypassing the MULPDU check. Tests use it to send crafted or hostile input.
func (p *Pipe) Inject(seg []byte) error {
	return p.out.push(append([]byte(nil), seg...))
}

// Start implements llp.Stream.
func (p *Pipe) Start(h llp.Handler) {
	started := false
	p.startOnce.Do(func() {
		started = true
		go p.deliver(h)
	})
	if !started {
		panic("llptest: Start called twice")
	}
}

func (p *Pipe) deliver(h llp.Handler) {
	defer close(p.done)
	broken := false
	for {
		seg, err := p.in.pop()
		if seg == nil {
			h.HandleClosed(err)
			return
		}
		if broken {
			continue // RFC 5041 §7.1: drop after an error, keep draining
		}
		p.recvSegs.Add(1)
		p.recvBytes.Add(uint64(len(seg)))
		if h.HandleSegment(seg) != nil {
			broken = true
		}
	}
}

// Close implements llp.Stream: the peer sees a graceful end after the
// segments already queued.
func (p *Pipe) Close() error {
	p.out.close(nil)
	return nil
}

// Abort implements llp.Stream: both directions end at once with
// llp.ErrAborted, discarding queued segments.
func (p *Pipe) Abort() error {
	p.out.abort(llp.ErrAborted)
	p.in.abort(llp.ErrAborted)
	return nil
}

// Done is closed when this end's delivery goroutine has returned (after
// HandleClosed).
func (p *Pipe) Done() <-chan struct{} { return p.done }

// Info implements llp.Stream.
func (p *Pipe) Info() llp.Info {
	return llp.Info{
		Kind:             "pipe",
		LocalAddr:        p.name,
		RemoteAddr:       p.peer.name,
		SegmentsSent:     p.sentSegs.Load(),
		SegmentsReceived: p.recvSegs.Load(),
		BytesSent:        p.sentBytes.Load(),
		BytesReceived:    p.recvBytes.Load(),
	}
}

// queue is a bounded FIFO of segments with graceful close and abort.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  [][]byte
	depth  int
	closed bool  // no more pushes; pops drain then report err
	err    error // reported once drained (nil: graceful)
}

func newQueue(depth int) *queue {
	q := &queue{depth: depth}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(seg []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) >= q.depth && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		if q.err != nil {
			return fmt.Errorf("llptest: send: %w", q.err)
		}
		return llp.ErrClosed
	}
	q.items = append(q.items, seg)
	q.cond.Broadcast()
	return nil
}

// pop returns the next segment, or nil and the close cause once drained.
func (q *queue) pop() ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, q.err
	}
	seg := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	q.cond.Broadcast()
	return seg, nil
}

func (q *queue) close(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed, q.err = true, err
	}
	q.cond.Broadcast()
}

func (q *queue) abort(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = nil
	if !q.closed || q.err == nil {
		q.closed, q.err = true, err
	}
	q.cond.Broadcast()
}
