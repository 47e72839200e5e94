// Package reseq is the RFC 5043 §10 re-sequencer of package sctpllp: a
// ring per DDP stream indexed by DDP-SSN, and the accounting of what it
// holds for the peer against the association's and the peer address's
// shares of a membudget.Budget.
package reseq

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// Sink receives the chunks of one DDP stream in DDP-SSN order: one chunk
// payload (DDP-SSN included), valid only during the call. A non-nil error
// stops the reorderer.
type Sink func(ssn uint16, ppid uint32, chunk []byte) error

// heldChunk is an early chunk copied into a pooled buffer; buf nil: none.
type heldChunk struct {
	buf  *[]byte
	ppid uint32
}

// Ring sizes: the ring covers DDP-SSNs [next, next+len); a chunk d ahead
// needs len > d, at most MaxSSNWindow+1 = 32768 entries (RFC 5043 §10).
const (
	MinRing       = 16
	HeldEntryCost = int(unsafe.Sizeof(heldChunk{}))
	EarlyCost     = int(unsafe.Sizeof(earlyChunks{}))
)

// reorder re-sequences one DDP Stream Session's chunks by DDP-SSN (RFC 5043
// §5.2.1, §10; never by TSN). The next expected chunk goes to the sink from
// the caller's buffer, then the held chunks it makes contiguous; an early
// one (at most MaxSSNWindow ahead) is copied into a pooled buffer in a ring
// indexed by DDP-SSN: O(1) per chunk whatever the order. A duplicate, an
// old DDP-SSN or one beyond the window is a violation (§10). What is held
// is charged to the association's Account and bounded by maxHeld
// before anything is committed. Not safe for concurrent use.
type Reorder struct {
	sink    Sink
	acct    *Account // the association's; nil: only maxHeld bounds it
	early   *earlyChunks
	maxHeld int32
	next    uint16
}

// earlyChunks is what a reorder holds once a chunk arrived early: an idle
// session, and one whose chunks all arrive in order, has none.
type earlyChunks struct {
	// ring[ssn&(len-1)] holds DDP-SSN ssn, for ssn in [next, next+len);
	// len is a power of two.
	ring    []heldChunk
	n       int // chunks held
	charged int // octets charged: this struct, the ring, the buffers
	// gapSince is when the expected DDP-SSN began to be missing while
	// later chunks are held; zero when none is held.
	gapSince time.Time
}

// Errors of Push and Account.Charge.
var (
	// ErrSSNWindow reports a DDP-SSN that is a duplicate or lies more than
	// 32767 ahead of the next expected one (RFC 5043 §10).
	ErrSSNWindow = errors.New("sctpllp: DDP-SSN outside the receive window")
	// ErrHeldLimit reports that a stream exceeded the bound on octets held
	// for re-sequencing (RFC 5043 §10).
	ErrHeldLimit = errors.New("sctpllp: re-sequencing buffer limit exceeded")
	// ErrMemoryShare reports a charge that did not fit the association's
	// or its peer address's share, or the process budget.
	ErrMemoryShare = errors.New("sctpllp: association over its memory share")
)

// New returns the re-sequencer of one stream: chunks go to sink, at most
// maxHeld octets are held, charged to acct (nil: only maxHeld bounds it).
func New(sink Sink, maxHeld int, acct *Account) Reorder {
	return Reorder{sink: sink, maxHeld: int32(min(maxHeld, math.MaxInt32)), acct: acct}
}

// idle reports that no chunk is held (the data path may bypass push).
func (r *Reorder) Idle() bool { return r.early == nil || r.early.n == 0 }

// RingFor is the ring length that holds a chunk d ahead.
func RingFor(d uint16) int {
	n := MinRing
	for n <= int(d) {
		n <<= 1
	}
	return n
}

// push processes one received chunk payload (DDP-SSN included); ssn is its
// DDP-SSN, already parsed by the caller.
func (r *Reorder) Push(ssn uint16, ppid uint32, body []byte) error {
	d := ssn - r.next
	if d == 0 {
		r.next++
		if err := r.sink(ssn, ppid, body); err != nil {
			return err
		}
		if r.Idle() {
			return nil
		}
		err := r.drain()
		if r.early != nil && r.early.n > 0 {
			r.early.gapSince = time.Now() // a new gap: the next one is missing
		}
		return err
	}
	if d > contract.MaxSSNWindow {
		return fmt.Errorf("%w: DDP-SSN %d, expected %d (duplicate or more than %d ahead)",
			ErrSSNWindow, ssn, r.next, contract.MaxSSNWindow)
	}
	x := r.early // nil until a valid early chunk is held: checks first
	charged, ringLen := 0, 0
	if x != nil {
		ringLen = len(x.ring)
		if int(d) < ringLen && x.ring[int(ssn)&(ringLen-1)].buf != nil {
			return fmt.Errorf("%w: duplicate DDP-SSN %d", ErrSSNWindow, ssn)
		}
		charged = x.charged
	}
	cost := BufCost(len(body))
	grow := 0
	if int(d) >= ringLen {
		grow = RingFor(d)
		cost += (grow - ringLen) * HeldEntryCost
	}
	if x == nil {
		cost += EarlyCost
	}
	if charged+cost > int(r.maxHeld) {
		return fmt.Errorf("%w: %d octets held, %d more for DDP-SSN %d, limit %d (Config.MaxHeldBytes)",
			ErrHeldLimit, charged, cost, ssn, r.maxHeld)
	}
	if err := r.acct.Charge(cost); err != nil {
		return err
	}
	if x == nil {
		x = new(earlyChunks)
		r.early = x
	}
	if grow > 0 {
		x.resize(r.next, grow)
	}
	if x.n == 0 {
		x.gapSince = time.Now()
	}
	buf := bufpool.Get(len(body))
	copy(*buf, body)
	x.ring[int(ssn)&(len(x.ring)-1)] = heldChunk{buf: buf, ppid: ppid}
	x.n++
	x.charged += cost
	return nil
}

// resize moves the held chunks into a ring of n entries; next is the
// first DDP-SSN it covers.
func (x *earlyChunks) resize(next uint16, n int) {
	ring := make([]heldChunk, n)
	if old := len(x.ring); old > 0 && x.n > 0 {
		for k := range old {
			ssn := int(next) + k
			if h := x.ring[ssn&(old-1)]; h.buf != nil {
				ring[ssn&(n-1)] = h
			}
		}
	}
	x.ring = ring
}

// drain delivers the held chunks that have become contiguous; r.early is
// not nil. A ring longer than MinRing is freed once empty.
func (r *Reorder) drain() error {
	x := r.early
	mask := len(x.ring) - 1
	for x.n > 0 {
		i := int(r.next) & mask
		h := x.ring[i]
		if h.buf == nil {
			return nil
		}
		ssn := r.next
		x.ring[i] = heldChunk{}
		x.n--
		r.next++
		c := HeldCost(cap(*h.buf))
		x.charged -= c
		r.acct.Release(c)
		if x.n == 0 {
			x.gapSince = time.Time{}
			r.shrink()
		}
		err := r.sink(ssn, h.ppid, *h.buf)
		bufpool.Put(h.buf)
		if err != nil {
			return err
		}
	}
	return nil
}

// shrink frees an empty ring longer than MinRing (a far gap must not keep
// its 512 KiB once closed); a short one stays for the next gap.
func (r *Reorder) shrink() {
	x := r.early
	if len(x.ring) <= MinRing {
		return
	}
	c := x.charged
	r.early = nil
	r.acct.Release(c)
}

// pending returns the number of held chunks and the octets charged for
// them (buffers, ring, bookkeeping).
func (r *Reorder) Pending() (chunks, octets int) {
	if r.early == nil {
		return 0, 0
	}
	return r.early.n, r.early.charged
}

// gapSince is when the expected DDP-SSN began to be missing while later
// chunks are held; zero when none is held.
func (r *Reorder) GapSince() time.Time {
	if r.early == nil {
		return time.Time{}
	}
	return r.early.gapSince
}

// heldAll reports whether every held chunk satisfies pred (true when none
// is held).
func (r *Reorder) HeldAll(pred func(ppid uint32, chunk []byte) bool) bool {
	if r.early == nil {
		return true
	}
	for _, h := range r.early.ring {
		if h.buf != nil && !pred(h.ppid, *h.buf) {
			return false
		}
	}
	return true
}

// release frees every held chunk and gives back what was charged.
func (r *Reorder) Release() {
	x := r.early
	if x == nil {
		return
	}
	r.early = nil
	if x.n > 0 {
		for i, h := range x.ring {
			if h.buf != nil {
				bufpool.Put(h.buf)
				x.ring[i] = heldChunk{}
			}
		}
	}
	r.acct.Release(x.charged)
}

// Next is the DDP-SSN expected next.
func (r *Reorder) Next() uint16 { return r.next }

// InOrder reports whether ssn is the next expected DDP-SSN with nothing
// held, and if so takes it as delivered: the data path's shortcut past
// Push.
func (r *Reorder) InOrder(ssn uint16) bool {
	if ssn != r.next || !r.Idle() {
		return false
	}
	r.next++
	return true
}
