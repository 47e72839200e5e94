package ddp

import "github.com/sctp-rdma/sctp-rdma/internal/ring"

// This file holds the receive-side bookkeeping of one untagged buffer queue
// (RFC 5041 §5.1.2): the posted buffers in MSN order and the placement
// state of the message in progress.

// postedBuf is one posted untagged buffer.
type postedBuf struct {
	buf    []byte
	cookie uint64
}

// span is the half-open octet range [start, end) of a message.
type span struct{ start, end uint64 }

// placement tracks which octets of the untagged message in progress have
// been placed, so that a segment placing octets twice, or a last segment
// that leaves holes, is detected before any of its payload is written
// (RFC 5041 §7.1: cease placement on error). Segments in increasing MO order
// (the normal case, RFC 5041 §5.3) only extend prefix; others are kept in
// extra, sorted and disjoint, until the prefix reaches them.
type placement struct {
	active bool   // a segment of the message has been accepted
	prefix uint64 // octets [0, prefix) are placed
	extra  []span // placed ranges above prefix, sorted, disjoint, not touching prefix
	placed uint64 // total octets placed
	maxEnd uint64 // highest end of any placed range
}

// noPlacement is what a nil *placement reads as: nothing placed.
var noPlacement placement

// check validates the payload range [mo, end) of the next segment, the last
// segment of the message if last. It changes nothing. The causes are
// reported as CodeInvalidMO by the Receiver. A nil p has nothing placed.
func (p *placement) check(mo, end uint64, last bool) error {
	if p == nil {
		p = &noPlacement
	}
	if end > mo {
		if mo < p.prefix {
			return errOverlap
		}
		for _, s := range p.extra {
			if s.start < end && mo < s.end {
				return errOverlap
			}
		}
	}
	if last {
		// RFC 5041 §4.1: the L segment carries the highest MO and is posted
		// after every other segment of the message; with an in-order LLP
		// every octet must be placed once it has arrived (§5.4).
		if p.maxEnd > end {
			return errBeyondLast
		}
		if p.placed+(end-mo) != end {
			return errHole
		}
	}
	return nil
}

// add records [mo, end) as placed; check must have accepted it.
func (p *placement) add(mo, end uint64) {
	p.active = true
	if end == mo {
		return
	}
	p.placed += end - mo
	p.maxEnd = max(p.maxEnd, end)
	if mo == p.prefix {
		p.prefix = end
		k := 0
		for k < len(p.extra) && p.extra[k].start == p.prefix {
			p.prefix = p.extra[k].end
			k++
		}
		if k > 0 {
			p.extra = p.extra[:copy(p.extra, p.extra[k:])]
		}
		return
	}
	i := 0
	for i < len(p.extra) && p.extra[i].start < mo {
		i++
	}
	// Merge with the neighbours it touches.
	if i > 0 && p.extra[i-1].end == mo {
		p.extra[i-1].end = end
		if i < len(p.extra) && p.extra[i].start == end {
			p.extra[i-1].end = p.extra[i].end
			p.extra = append(p.extra[:i], p.extra[i+1:]...)
		}
		return
	}
	if i < len(p.extra) && p.extra[i].start == end {
		p.extra[i].start = mo
		return
	}
	p.extra = append(p.extra, span{})
	copy(p.extra[i+1:], p.extra[i:])
	p.extra[i] = span{mo, end}
}

// posted returns the number of buffers waiting on q, of either kind.
func (q *rxQueue) posted() int {
	if q.credSize > 0 {
		return int(q.credits)
	}
	return q.bufs.Len()
}

// front returns the buffer of the message in progress (or the next one);
// q.posted() must be > 0.
func (q *rxQueue) front() []byte {
	if q.credSize == 0 {
		return q.bufs.Front().buf
	}
	x := q.more()
	if x.scratch == nil {
		x.scratch = make([]byte, q.credSize)
	}
	return x.scratch
}

// reset forgets the message, keeping extra's memory; nil is a no-op.
func (p *placement) reset() {
	if p != nil {
		*p = placement{extra: p.extra[:0]}
	}
}

// active reports a message in progress; false for nil.
func (p *placement) inProgress() bool { return p != nil && p.active }

// rxQueue is one untagged buffer queue (one QN) of a Receiver. Its
// buffers are either the ULP's (bufs, PostUntagged) or, once PostCredits
// was called for it, the Receiver's own: credits implicit buffers of
// credSize octets, filled one message at a time in scratch.
type rxQueue struct {
	bufs ring.Ring[postedBuf] // storage made by the first post
	// credits is the number of implicit buffers posted (PostCredits) and
	// not yet delivered; credSize their size, 0 for a queue of the ULP's
	// buffers.
	credits  uint32
	credSize uint32
	// headMSN is the MSN of bufs.front() if any, else the MSN the next
	// Posted buffer receives; it is also the MSN of the next message to
	// arrive on this queue. Starts at 1 (RFC 5041 §4.3).
	headMSN uint32
	// x holds what only some queues need, made on first use: an idle
	// queue, and one of single-segment messages in posted buffers, has
	// none (thousands of streams hold four queues each; 32 octets each).
	x *queueExtra
}

// queueExtra is the part of an rxQueue made on first use.
type queueExtra struct {
	// prog is the placement of the message in progress, made by its
	// first segment that is not also its last and kept for the next.
	prog placement
	// scratch holds the message in progress of a credit queue, reused for
	// every message.
	scratch []byte
}

// more returns q.x, making it on first use.
func (q *rxQueue) more() *queueExtra {
	if q.x == nil {
		q.x = new(queueExtra)
	}
	return q.x
}

// progress returns the placement of the message in progress, making it
// on first use.
func (q *rxQueue) progress() *placement { return &q.more().prog }

// placed returns the placement of the message in progress, nil when the
// queue never needed one (which reads as nothing placed).
func (q *rxQueue) placed() *placement {
	if q.x == nil {
		return nil
	}
	return &q.x.prog
}
