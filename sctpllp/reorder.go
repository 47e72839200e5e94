package sctpllp

import (
	"fmt"
	"math"
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
	sink    chunkSink
	budget  *heldBudget // the association's, shared by its streams
	early   *earlyChunks
	maxHeld int32
	next    uint16
}

// earlyChunks is what a reorder holds once a chunk arrived early, made then
// and kept: an idle session, and one whose chunks all arrive in order,
// holds none (thousands of sessions per association, each 40 octets
// without it).
type earlyChunks struct {
	held      map[uint16]heldChunk
	heldBytes int
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
	return reorder{sink: sink, maxHeld: int32(min(maxHeld, math.MaxInt32)), budget: budget}
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
		if r.early == nil {
			return nil
		}
		err := r.drain()
		if len(r.early.held) > 0 {
			r.early.gapSince = time.Now() // a new gap: the next one is missing
		}
		return err
	}
	if d > backend.MaxSSNWindow {
		return fmt.Errorf("%w: DDP-SSN %d, expected %d (duplicate or more than %d ahead)",
			ErrSSNWindow, ssn, r.next, backend.MaxSSNWindow)
	}
	x := r.early // nil until a valid early chunk is held: checks first
	var heldBytes int
	if x != nil {
		if _, dup := x.held[ssn]; dup {
			return fmt.Errorf("%w: duplicate DDP-SSN %d", ErrSSNWindow, ssn)
		}
		heldBytes = x.heldBytes
	}
	if heldBytes+len(body) > int(r.maxHeld) {
		return fmt.Errorf("%w: %d octets held, %d more for DDP-SSN %d, limit %d",
			ErrHeldLimit, heldBytes, len(body), ssn, r.maxHeld)
	}
	if !r.budget.take(len(body)) {
		return fmt.Errorf("%w: the association holds %d octets for re-sequencing, limit %d (Config.MaxHeldAssocBytes)",
			ErrHeldLimit, r.budget.n.Load(), r.budget.max)
	}
	if x == nil {
		x = new(earlyChunks)
		r.early = x
	}
	if x.held == nil {
		x.held = make(map[uint16]heldChunk)
	}
	if len(x.held) == 0 {
		x.gapSince = time.Now()
	}
	buf := bufpool.Get(len(body))
	copy(*buf, body)
	x.held[ssn] = heldChunk{ppid: ppid, buf: buf}
	x.heldBytes += len(body)
	return nil
}

// drain delivers the held chunks that have become contiguous; r.early is
// not nil.
func (r *reorder) drain() error {
	x := r.early
	for len(x.held) > 0 {
		h, ok := x.held[r.next]
		if !ok {
			return nil
		}
		ssn := r.next
		delete(x.held, ssn)
		r.next++
		x.heldBytes -= len(*h.buf)
		r.budget.give(len(*h.buf))
		if len(x.held) == 0 {
			x.gapSince = time.Time{}
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
func (r *reorder) pending() (chunks, octets int) {
	if r.early == nil {
		return 0, 0
	}
	return len(r.early.held), r.early.heldBytes
}

// gapSince is when the expected DDP-SSN began to be missing while later
// chunks are held; zero when none is held.
func (r *reorder) gapSince() time.Time {
	if r.early == nil {
		return time.Time{}
	}
	return r.early.gapSince
}

// heldAll reports whether every held chunk satisfies pred (true when none
// is held).
func (r *reorder) heldAll(pred func(ppid uint32, chunk []byte) bool) bool {
	if r.early == nil {
		return true
	}
	for _, h := range r.early.held {
		if !pred(h.ppid, *h.buf) {
			return false
		}
	}
	return true
}

// release frees every held chunk.
func (r *reorder) release() {
	x := r.early
	if x == nil {
		return
	}
	for k, h := range x.held {
		bufpool.Put(h.buf)
		delete(x.held, k)
	}
	r.budget.give(x.heldBytes)
	x.heldBytes = 0
	x.gapSince = time.Time{}
}
