package sctpllp

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// chunkSink receives the chunks of one DDP stream in DDP-SSN order.
type chunkSink interface {
	// deliverChunk handles one chunk payload (DDP-SSN included). chunk is
	// valid only during the call. A non-nil error stops the reorderer.
	deliverChunk(ssn uint16, ppid uint32, chunk []byte) error
}

// heldChunk is an early chunk copied into a pooled buffer.
type heldChunk struct {
	ppid uint32
	buf  *[]byte
}

// reorder re-sequences the chunks of one DDP Stream Session by DDP-SSN
// (RFC 5043 §5.2.1, §10): the SCTP chunks are unordered, so the receiver
// restores the submission order from the DDP-SSN and never from the TSN.
//
// A chunk carrying the next expected DDP-SSN is handed to the sink straight
// from the caller's buffer, without a copy, followed by every held chunk it
// makes contiguous. A chunk that is early (at most MaxSSNWindow ahead) is
// copied into a pooled buffer and held; the held octets are bounded by
// maxHeld. A duplicate of a held chunk, a DDP-SSN that was already
// delivered or one further ahead than the window is a protocol violation
// (RFC 5043 §10: "An invalid DDP-SSN MAY result in termination of the DDP
// stream"); the resources of an early chunk are committed only after that
// validity check.
//
// reorder is not safe for concurrent use.
type reorder struct {
	next      uint16
	sink      chunkSink
	held      map[uint16]heldChunk // nil until the first early chunk
	heldBytes int
	maxHeld   int
	budget    *heldBudget // the association's, shared by its streams
	// gapSince is when the expected DDP-SSN began to be missing while
	// later chunks are held; zero when none is held.
	gapSince time.Time
}

// heldBudget bounds the octets held for re-sequencing by all the streams
// of one association together (Config.MaxHeldAssocBytes).
type heldBudget struct {
	max int64
	n   atomic.Int64
}

// take reserves n octets, or reports that they do not fit.
func (b *heldBudget) take(n int) bool {
	if b == nil {
		return true
	}
	if b.n.Add(int64(n)) > b.max {
		b.n.Add(-int64(n))
		return false
	}
	return true
}

// give returns n octets.
func (b *heldBudget) give(n int) {
	if b != nil {
		b.n.Add(-int64(n))
	}
}

func newReorder(sink chunkSink, maxHeld int, budget *heldBudget) reorder {
	return reorder{sink: sink, maxHeld: maxHeld, budget: budget}
}

// push processes one received chunk payload (DDP-SSN included); ssn is its
// DDP-SSN, already parsed by the caller.
func (r *reorder) push(ssn uint16, ppid uint32, body []byte) error {
	d := ssn - r.next
	if d == 0 {
		r.next++
		if err := r.sink.deliverChunk(ssn, ppid, body); err != nil {
			return err
		}
		err := r.drain()
		if len(r.held) > 0 {
			r.gapSince = time.Now() // a new gap: the next one is missing
		}
		return err
	}
	if d > backend.MaxSSNWindow {
		return fmt.Errorf("%w: DDP-SSN %d, expected %d (duplicate or more than %d ahead)",
			ErrSSNWindow, ssn, r.next, backend.MaxSSNWindow)
	}
	if _, dup := r.held[ssn]; dup {
		return fmt.Errorf("%w: duplicate DDP-SSN %d", ErrSSNWindow, ssn)
	}
	if r.heldBytes+len(body) > r.maxHeld {
		return fmt.Errorf("%w: %d octets held, %d more for DDP-SSN %d, limit %d",
			ErrHeldLimit, r.heldBytes, len(body), ssn, r.maxHeld)
	}
	if !r.budget.take(len(body)) {
		return fmt.Errorf("%w: the association holds %d octets for re-sequencing, limit %d (Config.MaxHeldAssocBytes)",
			ErrHeldLimit, r.budget.n.Load(), r.budget.max)
	}
	if r.held == nil {
		r.held = make(map[uint16]heldChunk)
	}
	if len(r.held) == 0 {
		r.gapSince = time.Now()
	}
	buf := bufpool.Get(len(body))
	copy(*buf, body)
	r.held[ssn] = heldChunk{ppid: ppid, buf: buf}
	r.heldBytes += len(body)
	return nil
}

// drain delivers the held chunks that have become contiguous.
func (r *reorder) drain() error {
	for len(r.held) > 0 {
		h, ok := r.held[r.next]
		if !ok {
			return nil
		}
		ssn := r.next
		delete(r.held, ssn)
		r.next++
		r.heldBytes -= len(*h.buf)
		r.budget.give(len(*h.buf))
		if len(r.held) == 0 {
			r.gapSince = time.Time{}
		}
		err := r.sink.deliverChunk(ssn, h.ppid, *h.buf)
		bufpool.Put(h.buf)
		if err != nil {
			return err
		}
	}
	return nil
}

// pending returns the number of held chunks and octets.
func (r *reorder) pending() (chunks, octets int) { return len(r.held), r.heldBytes }

// heldAll reports whether every held chunk satisfies pred (true when none
// is held).
func (r *reorder) heldAll(pred func(ppid uint32, chunk []byte) bool) bool {
	for _, h := range r.held {
		if !pred(h.ppid, *h.buf) {
			return false
		}
	}
	return true
}

// release frees every held chunk.
func (r *reorder) release() {
	for k, h := range r.held {
		bufpool.Put(h.buf)
		delete(r.held, k)
	}
	r.budget.give(r.heldBytes)
	r.heldBytes = 0
	r.gapSince = time.Time{}
}
