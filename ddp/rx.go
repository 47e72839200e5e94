package ddp

import (
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"math"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// posted is an untagged buffer drain returns: posted with PostUntagged
// and never delivered.
type posted struct {
	// QN and MSN identify the message the buffer was reserved for.
	QN, MSN uint32
	// Cookie is the value given to PostUntagged.
	Cookie uint64
	// Buf is the buffer given to PostUntagged.
	Buf []byte
}

// Receiver is the Data Sink side of one DDP Stream (RFC 5041 §5, §7.1). It
// implements llp.Handler: the LLP hands it every received segment in order,
// from one goroutine at a time. It validates each segment, places tagged
// payload into memory the ULP names (ULP.TaggedTarget) and untagged payload
// into buffers posted with PostUntagged, and delivers every complete message
// to the ULP (ULP.Deliver) in the order the messages complete.
//
// Receive rules and the choices this implementation makes where RFC 5041
// leaves room:
type Receiver struct {
	//   - A segment shorter than its DDP header (or empty) has no row in
	//     RFC 5041 §7.2. RFC 5041 §6.2.2 makes "DDP Header has one or more
	//     invalid fields" fatal, and the header's fields cannot even be read, so
	//     it is reported as Type 0x0 Local Catastrophic, Code 0x00, wrapping
	//     ErrTruncated, with an empty RecvError.Header. A bad DV is Type 0x1
	//     Code 0x04 (T=1) or Type 0x2 Code 0x06 (T=0); the DV is checked before
	//     the length.
	//   - Tagged segments (RFC 5041 §7.1 tagged checks): a non-empty segment
	//     whose TO+length wraps 64 bits is Code 0x03 (check 5) before the ULP is
	//     asked; a segment of a message in progress naming a different STag than
	//     its first non-empty segment is Code 0x00 wrapping ErrSTagChanged
	//     (RFC 5041 §4.2); checks 1-4 are the ULP's (TaggedTarget). Zero-length
	//     Tagged segments are not checked or placed (RFC 5041 §5.2) but count
	//     toward delivery. FirstTO is the TO of the message's first segment in
	//     arrival order; Length the sum of its payloads.
	//   - Untagged segments (RFC 5041 §7.1 untagged checks, §7.2 codes): after
	//     ULP.CheckUntagged, an unknown QN is 0x01. The LLP delivers in order
	//     and a DDP Data Source posts a message's L segment after all its other
	//     segments (RFC 5041 §4.1), so each queue has at most one message in
	//     progress, the one for its oldest posted buffer; the only acceptable
	//     MSN is that buffer's MSN (the next expected one). That MSN with no
	//     buffer posted is 0x02; any other MSN is 0x03 (wrapping ErrIncomplete
	//     when it is the following MSN and the message in progress never got its
	//     L segment). A non-empty segment with MO at or beyond the buffer's end
	//     is 0x04, with MO+length beyond it 0x05; a zero-length segment only
	//     needs MO <= buffer length. Segments of one message may come in any MO
	//     order; one that would place octets already placed is 0x04 wrapping
	//     ErrOverlap, and an L segment that leaves octets below its end unplaced
	//     is 0x04 wrapping ErrHole (or ErrBeyondLast if octets were placed above
	//     its end, since the L segment carries the highest MO). Zero-length
	//     untagged messages consume a buffer. Messages of different queues may
	//     be interleaved.
	//   - Every check happens before any octet of the segment is placed. On the
	//     first error the Receiver builds a *RecvError (copy of the DDP header,
	//     segment length), calls ULP.Failed once, returns the error from
	//     HandleSegment and drops every later segment (RFC 5041 §7.1). An error
	//     returned by ULP.Deliver is reported the same way with Message set.
	//
	// PostUntagged, Posted and Drain may be called from any goroutine, including
	// from inside the ULP callbacks (a Receiver made by NewReceiverGuarded:
	// with the ULP's lock held). Steady-state placement and delivery allocate
	// nothing.
	ulp ULP

	// mu guards queues and stopped: own, or the ULP's (guarded).
	mu      *sync.Mutex
	own     sync.Mutex
	guarded bool
	queues  []rxQueue // guarded by mu
	inline  [4]rxQueue
	stopped error // guarded by mu; non-nil: PostUntagged refused

	drained atomic.Bool
	closed  atomic.Bool

	// Used only by the LLP's delivery goroutine. scr is made by the
	// first segment: an idle stream's Receiver holds none.
	scr     *rxScratch
	failure *RecvError
	tag     struct {
		active  bool
		haveTag bool // stag was taken from a non-empty segment
		stag    uint32
		firstTO uint64
		length  uint64
	}
}

var _ llp.Handler = (*Receiver)(nil)

// rxScratch is the parsed segment and the message being delivered, reused
// for every segment (Receiver.scr).
type rxScratch struct {
	seg iwarpwire.DDPSegment
	msg Message
}

// newReceiver returns a Receiver delivering to ulp with untagged queues
// 0..numQueues-1 (RDMAP uses 4: QN 0 Send and Immediate Data, QN 1 Read and
// Atomic Requests, QN 2 Terminate, QN 3 Atomic Responses; RFC 5040 §5,
// RFC 7306 §8). It panics if ulp is nil or numQueues < 1.
func newReceiver(ulp ULP, numQueues int) *Receiver {
	if ulp == nil || numQueues < 1 {
		panic(fmt.Sprintf("ddp: NewReceiver(%v, %d): need a ULP and at least one queue", ulp, numQueues))
	}
	r := &Receiver{ulp: ulp}
	r.mu = &r.own
	r.initQueues(numQueues)
	return r
}

// NewReceiverGuarded is NewReceiver for a ULP whose own lock mu guards the
// Receiver, so that a message costs one lock, not one of each layer's (a
// ULP such as RDMAP takes its lock for every message anyway, and posts its
// receive buffers under it):
func NewReceiverGuarded(ulp ULP, numQueues int, mu *sync.Mutex) *Receiver {
	//   - the ULP calls PostUntagged, PostCredits, Posted and Drain with mu
	//     held; they do not take it;
	//   - HandleSegment takes mu to check and place an untagged segment, and
	//     holds it while it calls ULP.Deliver, for tagged messages too: Deliver
	//     runs with mu held and must not take it;
	//   - CheckUntagged, TaggedTarget, Failed and Closed are called without mu
	//     (tagged payload is placed without it).
	//
	// It panics if ulp or mu is nil or numQueues < 1.
	if ulp == nil || mu == nil || numQueues < 1 {
		panic(fmt.Sprintf("ddp: NewReceiverGuarded(%v, %d, %p): need a ULP, a lock and at least one queue", ulp, numQueues, mu))
	}
	r := &Receiver{ulp: ulp, mu: mu, guarded: true}
	r.initQueues(numQueues)
	return r
}

// lock and unlock guard the methods the ULP calls: in a guarded Receiver
// the ULP holds mu already.
func (r *Receiver) lock() {
	if !r.guarded {
		r.mu.Lock()
	}
}

func (r *Receiver) unlock() {
	if !r.guarded {
		r.mu.Unlock()
	}
}

func (r *Receiver) initQueues(numQueues int) {
	if numQueues <= len(r.inline) {
		r.queues = r.inline[:numQueues] // one allocation for RDMAP's four
	} else {
		r.queues = make([]rxQueue, numQueues)
	}
	for i := range r.queues {
		r.queues[i].headMSN = 1 // RFC 5041 §4.3: the initial MSN is 1
	}
}

// PostUntagged adds buf to the end of queue qn and returns the MSN of the
// message it will receive: 1 for the first buffer of a queue, then one more
// for each (modulo 2^32, RFC 5041 §4.3). The buffer belongs to the Receiver
// until it is delivered (Message.Buffer) or returned by Drain. It fails with
// ErrBadQueue for an unknown qn, ErrQueueFull with 2^31-1 buffers waiting, and
// an error wrapping ErrStopped after a receive failure, Drain, or the end of
// the LLP stream. Safe for concurrent use.
func (r *Receiver) PostUntagged(qn uint32, buf []byte, cookie uint64) (msn uint32, err error) {
	r.lock()
	if err := r.admitPost(qn); err != nil {
		r.unlock()
		return 0, err
	}
	q := &r.queues[qn]
	msn = q.headMSN + uint32(q.bufs.Len())
	q.bufs.Push(postedBuf{buf: buf, cookie: cookie})
	r.unlock()
	return msn, nil
}

// admitPost refuses a buffer posted after the Receiver stopped, to an
// unknown or credit queue, or beyond 2^31-1 waiting. The lock is held.
func (r *Receiver) admitPost(qn uint32) error {
	if r.stopped != nil {
		return r.stopped
	}
	if uint64(qn) >= uint64(len(r.queues)) {
		return fmt.Errorf("ddp: post QN %d of %d: %w", qn, len(r.queues), errBadQueue)
	}
	q := &r.queues[qn]
	if q.credSize > 0 {
		return fmt.Errorf("ddp: post a buffer on QN %d: %w", qn, errCreditQueue)
	}
	if q.bufs.Len() >= math.MaxInt32 {
		return fmt.Errorf("ddp: post QN %d: %w", qn, errQueueFull)
	}
	return nil
}

// PostCredits posts n buffers of size octets that the Receiver owns on
// queue qn, for a ULP's internal queue whose messages it consumes at once
// (RDMAP's Read Request, Terminate and Atomic Response queues, RFC 5040
// §5, RFC 7306 §8): an idle queue then holds no memory, and every message
// of the queue is placed into one buffer of size octets, allocated when
// the first segment arrives. A message delivered from such a queue has
// Message.Buffer valid only until ULP.Deliver returns and Message.Cookie 0;
// each delivery consumes one buffer, and the ULP posts one back (n = 1)
// when it is ready for another message. The checks of RFC 5041 §7.1 are
// those of posted buffers (no buffer: 0x02, beyond size: 0x04/0x05).
func (r *Receiver) PostCredits(qn uint32, n, size int) error {
	// The first call makes qn a credit queue; it fails with ErrCreditQueue if
	// buffers were posted on qn with PostUntagged or size differs from the
	// first call's, ErrBadQueue for an unknown qn, ErrQueueFull past 2^31
	// buffers, and an error wrapping ErrStopped after a receive failure,
	// Drain or the end of the LLP stream. Drain returns nothing for a credit
	// queue. Safe for concurrent use.
	r.lock()
	defer r.unlock()
	if r.stopped != nil {
		return r.stopped
	}
	if uint64(qn) >= uint64(len(r.queues)) {
		return fmt.Errorf("ddp: post credits on QN %d of %d: %w", qn, len(r.queues), errBadQueue)
	}
	if n < 0 || size <= 0 || size > math.MaxUint32 {
		return fmt.Errorf("ddp: post %d credits of %d octets on QN %d: %w", n, size, qn, errCreditQueue)
	}
	q := &r.queues[qn]
	switch {
	case q.credSize == 0 && q.bufs.Len() > 0:
		return fmt.Errorf("ddp: post credits on QN %d, which holds posted buffers: %w", qn, errCreditQueue)
	case q.credSize != 0 && q.credSize != uint32(size):
		return fmt.Errorf("ddp: post credits of %d octets on QN %d, whose credits are %d: %w", size, qn, q.credSize, errCreditQueue)
	case uint64(q.credits)+uint64(n) > 1<<31:
		return fmt.Errorf("ddp: post QN %d: %w", qn, errQueueFull)
	}
	q.credSize = uint32(size)
	q.credits += uint32(n)
	return nil
}

// Posted returns the number of buffers posted on qn and not yet delivered
// (including one being filled); 0 for an unknown qn.
func (r *Receiver) Posted(qn uint32) int {
	r.lock()
	defer r.unlock()
	if uint64(qn) >= uint64(len(r.queues)) {
		return 0
	}
	return r.queues[qn].posted()
}

// Drain removes every posted buffer not yet delivered; the ULP completes
// its own outstanding requests with a flush error (RFC 5041 §6.2.2).
// Afterwards PostUntagged fails with ErrStopped and every further segment
// is dropped without placement: HandleSegment returns an error wrapping
// ErrStopped and ULP.Failed is not called. Safe for concurrent use.
func (r *Receiver) Drain() { r.drain() }

// drain is Drain returning the removed buffers, by QN and then MSN; a
// second drain returns nothing.
func (r *Receiver) drain() []posted {
	r.lock()
	defer r.unlock()
	r.drained.Store(true)
	if r.stopped == nil {
		r.stopped = fmt.Errorf("%w: drained", errStopped)
	}
	var out []posted
	for qn := range r.queues {
		q := &r.queues[qn]
		for q.bufs.Len() > 0 {
			p := q.bufs.Pop()
			out = append(out, posted{QN: uint32(qn), MSN: q.headMSN, Cookie: p.cookie, Buf: p.buf})
			q.headMSN++
		}
		q.headMSN += q.credits
		q.credits = 0
		q.placed().reset()
	}
	return out
}

// HandleClosed implements llp.Handler: it stops posting and calls
// ULP.Closed(err) exactly once.
func (r *Receiver) HandleClosed(err error) {
	if !r.closed.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	if r.stopped == nil {
		cause := err
		if cause == nil {
			cause = llp.ErrClosed
		}
		r.stopped = fmt.Errorf("%w: LLP stream ended: %w", errStopped, cause)
	}
	r.mu.Unlock()
	r.ulp.Closed(err)
}

// HandleSegment implements llp.Handler: it validates, places and, on the
// Last segment of a message, delivers one DDP segment (see Receiver). It
// returns nil, or the *RecvError of the first failure (also for every
// segment after it), or an error wrapping ErrStopped after Drain.
func (r *Receiver) HandleSegment(b []byte) error {
	if r.failure != nil {
		return r.failure
	}
	if r.drained.Load() {
		return fmt.Errorf("ddp: segment dropped: %w: drained", errStopped)
	}
	if r.scr == nil {
		r.scr = new(rxScratch)
	}
	if err := iwarpwire.ParseDDPSegment(b, &r.scr.seg); err != nil {
		return r.fail(b, err, nil)
	}
	if r.scr.seg.Tagged {
		return r.handleTagged(b)
	}
	return r.handleUntagged(b)
}

// handleTagged validates, places and tracks one tagged segment
// (RFC 5041 §4.2, §5.1.1, §7.1 tagged checks).
func (r *Receiver) handleTagged(b []byte) error {
	h := &r.scr.seg.Tag
	payload := r.scr.seg.Payload
	n := len(payload)
	if n > 0 {
		// RFC 5041 §5.2: only non-empty tagged segments are checked/placed.
		if r.tag.active && r.tag.haveTag && h.STag != r.tag.stag {
			return r.fail(b, iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag, errSTagChanged), nil)
		}
		if h.TO > math.MaxUint64-uint64(n) { // RFC 5041 §7.1 tagged check 5
			return r.fail(b, iwarpwire.NewDDPError(iwarp.Term.DDPTOWrap, nil), nil)
		}
		dst, err := r.ulp.TaggedTarget(h, n) // checks 1-4
		if err != nil {
			return r.fail(b, err, nil)
		}
		if len(dst) != n {
			return r.fail(b, iwarpwire.NewDDPError(iwarp.Term.DDPLocalCatastrophic,
				fmt.Errorf("%w: %d octets for a %d-octet payload", errTargetLength, len(dst), n)), nil)
		}
		copy(dst, payload)
	}
	if !r.tag.active {
		r.tag.active = true
		r.tag.firstTO = h.TO
		r.tag.length = 0
	}
	if n > 0 && !r.tag.haveTag {
		r.tag.haveTag, r.tag.stag = true, h.STag
	}
	r.tag.length += uint64(n)
	if !h.Last {
		return nil
	}
	r.scr.msg = Message{Tagged: true, Tag: *h, Length: int(r.tag.length), FirstTO: r.tag.firstTO}
	r.tag.active, r.tag.haveTag = false, false
	if r.guarded {
		r.mu.Lock()
		return r.deliverLocked(b)
	}
	return r.deliver(b)
}

// handleUntagged validates, places and, on L, delivers one untagged segment
// (RFC 5041 §4.3, §5.1.2, §7.1 untagged checks).
func (r *Receiver) handleUntagged(b []byte) error {
	h := &r.scr.seg.Untag
	if err := r.ulp.CheckUntagged(h); err != nil {
		return r.fail(b, err, nil)
	}
	if uint64(h.QN) >= uint64(len(r.queues)) { // check 1
		return r.fail(b, iwarpwire.NewDDPError(iwarp.Term.DDPInvalidQN, nil), nil)
	}
	payload := r.scr.seg.Payload
	mo := uint64(h.MO)
	end := mo + uint64(len(payload))

	r.mu.Lock()
	if r.drained.Load() {
		r.mu.Unlock()
		return fmt.Errorf("ddp: segment dropped: %w: drained", errStopped)
	}
	q := &r.queues[h.QN]
	if e := r.checkUntagged(q, h, mo, end); e != nil {
		r.mu.Unlock()
		return r.fail(b, e, nil)
	}
	buf := q.front()
	copy(buf[mo:end], payload)
	if !h.Last || q.x != nil { // a lone L segment needs no record: reset follows
		q.progress().add(mo, end)
	}
	if !h.Last {
		r.mu.Unlock()
		return nil
	}
	var cookie uint64
	if q.credSize > 0 {
		q.credits--
	} else {
		cookie = q.bufs.Pop().cookie
	}
	q.headMSN++
	q.placed().reset()
	// Field by field: one pointer store (Buffer) instead of a whole
	// Message copied through the write barrier.
	m := &r.scr.msg
	m.Tagged, m.Tag, m.FirstTO = false, iwarpwire.DDPTaggedHeader{}, 0
	m.Untag, m.Length, m.Buffer, m.Cookie = *h, int(end), buf[:end], cookie
	if r.guarded {
		return r.deliverLocked(b)
	}
	r.mu.Unlock()
	return r.deliver(b)
}

// checkUntagged performs untagged checks 2-5 for the segment [mo, end) of
// h on q. r.mu is held.
func (r *Receiver) checkUntagged(q *rxQueue, h *iwarpwire.DDPUntaggedHeader, mo, end uint64) *iwarpwire.DDPError {
	if h.MSN != q.headMSN { // check 5
		e := iwarpwire.NewDDPError(iwarp.Term.DDPMSNRange, nil)
		if q.placed().inProgress() && h.MSN == q.headMSN+1 {
			e.Err = errIncomplete
		}
		return e
	}
	if q.posted() == 0 { // check 2
		return iwarpwire.NewDDPError(iwarp.Term.DDPNoBuffer, nil)
	}
	size := uint64(q.credSize)
	if size == 0 {
		size = uint64(len(q.bufs.Front().buf))
	}
	if end > mo {
		if mo >= size { // check 3
			return iwarpwire.NewDDPError(iwarp.Term.DDPInvalidMO, nil)
		}
		if end > size { // check 4
			return iwarpwire.NewDDPError(iwarp.Term.DDPMessageTooLong, nil)
		}
	} else if mo > size {
		return iwarpwire.NewDDPError(iwarp.Term.DDPInvalidMO, nil)
	}
	if err := q.placed().check(mo, end, h.Last); err != nil {
		return iwarpwire.NewDDPError(iwarp.Term.DDPInvalidMO, err)
	}
	return nil
}

// deliverLocked is deliver for a guarded Receiver: r.mu is held, and
// released before an error fails the stream (ULP.Failed runs without it).
func (r *Receiver) deliverLocked(b []byte) error {
	err := r.ulp.Deliver(&r.scr.msg)
	r.mu.Unlock()
	if err != nil {
		m := r.scr.msg
		return r.fail(b, err, &m)
	}
	return nil
}

// deliver hands r.scr.msg to the ULP (RFC 5041 §5.4); an error it returns fails
// the stream like a DDP error.
func (r *Receiver) deliver(b []byte) error {
	if err := r.ulp.Deliver(&r.scr.msg); err != nil {
		m := r.scr.msg
		return r.fail(b, err, &m)
	}
	return nil
}

// fail records the stream's first receive error, stops posting, reports it
// to the ULP and returns it (RFC 5041 §7.1).
func (r *Receiver) fail(b []byte, cause error, m *Message) error {
	re := &RecvError{Err: cause, SegmentLen: len(b), Message: m}
	if len(b) > 0 {
		if hl := iwarpwire.DDPControl(b[0]).HeaderLen(); len(b) >= hl {
			re.Header = append([]byte(nil), b[:hl]...)
		}
	}
	r.failure = re
	r.mu.Lock()
	if r.stopped == nil {
		r.stopped = fmt.Errorf("%w after receive failure: %w", errStopped, re)
	}
	r.mu.Unlock()
	r.ulp.Failed(re)
	return re
}
