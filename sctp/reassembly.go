package sctp

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// defaultReassemblyBudget is the byte budget of a Reassembler unless told
// otherwise: the receive buffer whose free space is advertised as a_rwnd.
const defaultReassemblyBudget = 4 << 20

// Defaults of the reassembly caps (RFC 9260 §6.9 lets a receiver bound
// the reassembly it does).
const (
	// defaultMaxMessageFragments caps the fragments of one user message:
	// a 4 MiB message at the smallest path MTU (512) has about 9,000.
	defaultMaxMessageFragments = 8192
	// defaultMaxHeldFragments caps the fragments and waiting ordered
	// messages held at once.
	defaultMaxHeldFragments = 16384
)

// Memory charged for each held fragment and message beyond its buffer:
// its descriptor, index entry and pooled-buffer header.
const (
	fragOverhead = 128
	msgOverhead  = 128
)

// Errors of Reassembler.Push.
var (
	// errReassemblyBudget: the chunk does not fit the memory budget, and
	// it is not kept. RFC 9260 §6.2 has the receiver drop DATA it has no
	// room for; the caller avoids acknowledging it by calling Admit
	// before recvTracker.Observe.
	errReassemblyBudget = errors.New("sctp: reassembly byte budget exceeded")
	// errInvalidStream: the chunk's stream is beyond the inbound streams
	// of the association. RFC 9260 §6.5: the chunk is acknowledged and
	// discarded, and an ERROR with an Invalid Stream Identifier cause is
	// sent.
	errInvalidStream = errors.New("sctp: DATA on a stream beyond the inbound streams")
	// errFragmentSequence: fragments that cannot belong to one user
	// message (RFC 9260 §6.9: a message's fragments have consecutive TSNs,
	// the first with the B bit, the last with the E bit, all of one
	// stream, one U bit and, if ordered, one SSN), or a fragment whose
	// message can never complete. The chunk is not kept; it is a
	// protocol violation of the peer.
	errFragmentSequence = errors.New("sctp: DATA fragments out of sequence")
	// errStreamSequence: an ordered message whose Stream Sequence Number
	// was delivered already or is held already (RFC 9260 §6.5: SSNs of a
	// stream are consecutive). The chunk is not kept; a protocol
	// violation of the peer.
	errStreamSequence = errors.New("sctp: ordered DATA with a stream sequence number out of sequence")
	// errReassemblyLimit: the peer exceeded a bound of reassembly (RFC
	// 9260 §6.9): more fragments in one message or held at once than the
	// caps, or a message that cannot be reassembled within the receive
	// buffer. The association is aborted with a Protocol Violation
	// cause; errors.Is(err, ErrProtocolViolation) holds too.
	errReassemblyLimit = fmt.Errorf("%w: reassembly limit exceeded", ErrProtocolViolation)
)

// reassemblyConfig sets up a Reassembler.
type reassemblyConfig struct {
	// Streams is the number of inbound streams (the MIS of our INIT or
	// INIT ACK, capped by the peer's OS); at least 1.
	Streams int
	// Budget bounds the memory held, in octets (the buffers' capacity
	// and the bookkeeping of each fragment and message): fragments of
	// messages not yet complete, ordered messages waiting for an earlier
	// one, and messages waiting for Next. Zero means
	// defaultReassemblyBudget. Ignored if Account is set.
	Budget int
	// Account, if not nil, is charged instead of a budget of its own:
	// the association's share of the process-wide budget, which its
	// receive queue is charged to as well.
	Account *membudget.Account
	// MaxMessageFragments and MaxHeldFragments are the caps (zero: the
	// defaults).
	MaxMessageFragments, MaxHeldFragments int
	// Window is the recvTracker's window (zero: defaultRecvWindow): new
	// TSNs lie at most that far beyond the Cumulative TSN Ack point.
	Window int
	// Received, if not nil, reports whether a TSN has been received
	// (recvTracker.Received): a fragment next to a received TSN that is
	// not its neighbour in the message can never complete (errFragmentSequence).
	Received func(tsn uint32) bool
}

// message is a user message put together by a Reassembler (RFC 9260
// §6.9), or one delivered straight from a chunk.
type message struct {
	StreamID uint16
	// SSN is the Stream Sequence Number; meaningless if Unordered.
	SSN       uint16
	PPID      uint32
	Unordered bool
	// FirstTSN and LastTSN are the TSNs of its first and last fragment.
	FirstTSN, LastTSN uint32
	// Data is the user data. From Next, the caller owns it.
	Data []byte
	// buf, if not nil, is the pooled buffer Data lies in (package sctp
	// gives it back once the message is delivered).
	buf *[]byte
	// cost is the memory charged for it.
	cost int
}

const (
	fB uint8 = 1 << iota
	fE
	fU
)

// frag is one held fragment, a node of its run's list.
type frag struct {
	tsn    uint32
	next   int32 // the fragment of the next TSN in its run, or -1
	stream uint16
	ssn    uint16
	ppid   uint32
	flags  uint8
	n      int32 // user data octets, at the start of *buf
	buf    *[]byte
}

// fragRun is a run of held fragments of consecutive TSNs. Complete
// messages leave at once, so a run holds at most two messages in part:
// one without its start, ending with an E fragment at cut, and one from
// the B fragment at cut+1 on, without its end (RFC 9260 §6.9: fragments
// of a message have consecutive TSNs).
type fragRun struct {
	first, last uint32
	head, tail  int32
	cutE, cutB  int32 // the fragments at cut and cut+1, or -1: no cut
	count       int32 // fragments
	prefix      int32 // fragments up to cut
}

type inStream struct {
	next uint16 // the SSN of the next ordered message to deliver
}

// pendKey names a waiting ordered message: its stream and SSN.
func pendKey(stream, ssn uint16) uint32 { return uint32(stream)<<16 | uint32(ssn) }

// reassembler is the receive side of user messages (RFC 9260 §6.5, §6.6,
// §6.9): it takes the new DATA chunks of an association, puts fragmented
// messages together from their B and E bits and consecutive TSNs, and
// hands messages over unordered ones as soon as they are complete and
// ordered ones in Stream Sequence Number order per stream.
type reassembler struct {
	// Work is constant per chunk (a message costs its fragments once more
	// when it is put together): held fragments form runs of consecutive TSNs
	// indexed by their ends. A whole message that may be delivered at once is
	// not copied (Push says so). Memory held is charged to a budget by the
	// buffers' capacity and bookkeeping; what does not fit is refused, and
	// MakeRoom applies the zero-window rule of RFC 9260 §6.2.
	//
	// Use, per DATA chunk d that is not a duplicate (recvTracker.Received):
	// if !Admit(d, tracker.Renege) drop it unacknowledged; otherwise
	// recvTracker.Observe it, Push it, deliver d.UserData if Push says so,
	// then deliver every message Next returns.
	//
	// Not safe for concurrent use.

	acct     *membudget.Account
	held     int // charged by this Reassembler
	streams  []inStream
	nStreams int
	ready    []message // deliverable, in delivery order, from head
	head     int
	// pend holds complete ordered messages after their stream's next,
	// pendByLast names them by their last TSN, and pendBits marks their
	// TSNs (for MakeRoom, as heldBits does the fragments').
	pend       map[uint32]message
	pendByLast map[uint32]uint32
	pendBits   []uint64
	nPend      int
	pendPeak   int // the most waiting at once since pend was made

	frags    []frag
	freeFrag int32
	runs     []fragRun
	freeRun  int32
	ends     map[uint32]int32 // first and last TSN of each run → run
	nFrags   int
	// heldBits marks the TSNs of held fragments (tsn & bitMask), for
	// MakeRoom's search for the highest; hiHeld bounds them from above.
	heldBits []uint64
	bitMask  uint32
	hiHeld   uint32

	maxMsgFrags, maxHeld int
	window               int
	received             func(uint32) bool

	// An Admit's reservation, used by the Push of the same TSN.
	resTSN  uint32
	resCost int
	hasRes  bool

	refused, evicted, violations uint64
	// work counts the steps of loops over held data (fragments copied or
	// evicted, bitmap words read, waiting messages moved): the attack
	// tests' measure that work stays linear in what arrives.
	work uint64
	// why describes the last errReassemblyLimit or errFragmentSequence.
	why string
}

// newReassembler returns a Reassembler.
func newReassembler(cfg reassemblyConfig) *reassembler {
	if cfg.Budget <= 0 {
		cfg.Budget = defaultReassemblyBudget
	}
	if cfg.Account == nil {
		cfg.Account = membudget.NewAccount(membudget.New(1<<62), int64(cfg.Budget))
	}
	if cfg.MaxMessageFragments <= 0 {
		cfg.MaxMessageFragments = defaultMaxMessageFragments
	}
	if cfg.MaxHeldFragments <= 0 {
		cfg.MaxHeldFragments = defaultMaxHeldFragments
	}
	if cfg.Window <= 0 {
		cfg.Window = defaultRecvWindow
	}
	return &reassembler{
		acct:        cfg.Account,
		nStreams:    min(max(cfg.Streams, 1), 65536),
		freeFrag:    -1,
		freeRun:     -1,
		maxMsgFrags: cfg.MaxMessageFragments,
		maxHeld:     cfg.MaxHeldFragments,
		window:      cfg.Window,
		received:    cfg.Received,
	}
}

// stream returns the ordered-delivery state of stream id (< nStreams),
// allocating every stream's on the first ordered message: DDP sends only
// unordered messages (RFC 5043 §10), which need none.
func (r *reassembler) stream(id uint16) *inStream {
	if r.streams == nil {
		r.streams = make([]inStream, r.nStreams)
	}
	return &r.streams[id]
}

// nextSSN is the SSN of the next ordered message of stream id.
func (r *reassembler) nextSSN(id uint16) uint16 {
	if r.streams == nil {
		return 0
	}
	return r.streams[id].next
}

// Held returns the memory charged for what is held: fragments, waiting
// ordered messages and messages not yet taken with Next.
func (r *reassembler) Held() int { return r.held }

// Fragments returns the number of fragments held.
func (r *reassembler) Fragments() int { return r.nFrags }

// Budget returns the byte budget.
func (r *reassembler) Budget() int { return int(r.acct.Limit()) }

// Window returns the free part of the budget: the a_rwnd to advertise
// (RFC 9260 §6.2).
func (r *reassembler) Window() uint32 {
	return uint32(max(r.acct.Limit()-r.acct.Held(), 0))
}

// Fits reports whether n more octets can be charged.
func (r *reassembler) Fits(n int) bool { return r.acct.Fits(n) }

// Refused counts the chunks refused for the budget.
func (r *reassembler) Refused() uint64 { return r.refused }

// Evicted counts the chunks MakeRoom evicted.
func (r *reassembler) Evicted() uint64 { return r.evicted }

// Violations counts the chunks refused as protocol violations
// (errFragmentSequence, errStreamSequence, errInvalidStream,
// errReassemblyLimit).
func (r *reassembler) Violations() uint64 { return r.violations }

// Why describes the last errFragmentSequence or errReassemblyLimit, for
// the cause of the ABORT.
func (r *reassembler) Why() string { return r.why }

// Pending returns the number of messages Next would return now.
func (r *reassembler) Pending() int { return len(r.ready) - r.head }

// Next returns the next message to deliver; its memory leaves the budget.
func (r *reassembler) Next() (message, bool) {
	m, ok := r.nextHeld()
	if ok {
		r.acct.Release(m.cost)
	}
	return m, ok
}

// nextHeld is Next for a caller that takes over the message's charge
// (m.cost) and releases it once the message is delivered.
func (r *reassembler) nextHeld() (message, bool) {
	if r.head == len(r.ready) {
		return message{}, false
	}
	m := r.ready[r.head]
	r.ready[r.head] = message{}
	r.head++
	switch {
	case r.head == len(r.ready):
		r.ready, r.head = r.ready[:0], 0
	case r.head >= 64 && 2*r.head >= len(r.ready):
		// A caller that never drains the queue does not grow it forever.
		n := copy(r.ready, r.ready[r.head:])
		clear(r.ready[n:])
		r.ready, r.head = r.ready[:n], 0
	}
	r.held -= m.cost
	return m, true
}

// cost is what holding a chunk of n octets of user data charges.
func cost(n int) int { return rxClass(n) + fragOverhead }

// charge takes c octets for the chunk of TSN tsn: the reservation of
// Admit, or a new charge.
func (r *reassembler) charge(tsn uint32, c int) bool {
	if r.hasRes && r.resTSN == tsn {
		r.hasRes = false
		if r.resCost >= c {
			r.acct.Release(r.resCost - c)
			return true
		}
		c -= r.resCost
		r.resCost = 0
	}
	return r.acct.Charge(c) == nil
}

// dropReservation gives back an Admit's reservation no Push used.
func (r *reassembler) dropReservation() {
	if r.hasRes {
		r.acct.Release(r.resCost)
		r.hasRes = false
	}
}

// Push takes a new DATA chunk (one recvTracker.Observe found new). If
// deliverNow is true, the chunk is a whole message whose turn it is: the
// caller delivers d.UserData itself, from the packet, before what Next
// returns; nothing was copied. Otherwise the user data was copied and
// will come out of Next once its message is complete and in order, or
// Push returned an error and kept nothing: errReassemblyBudget,
// errInvalidStream, errFragmentSequence, errStreamSequence,
// errReassemblyLimit, or wire.ErrNoUserData for an empty chunk.
func (r *reassembler) Push(d *wire.Data) (deliverNow bool, err error) {
	now, err := r.push(d)
	r.dropReservation()
	return now, err
}

func (r *reassembler) push(d *wire.Data) (bool, error) {
	r.work++
	f := frag{tsn: d.TSN, stream: d.StreamID, ssn: d.SSN, ppid: d.PPID, next: -1}
	if d.Beginning {
		f.flags |= fB
	}
	if d.Ending {
		f.flags |= fE
	}
	if d.Unordered {
		f.flags |= fU
	}
	left, right := int32(-1), int32(-1)
	if r.nFrags > 0 {
		if r.isHeld(d.TSN) {
			return false, nil // a duplicate recvTracker should have caught: nothing to add
		}
		// The held neighbours in TSN order must be able to belong with it.
		left, right = r.runEndingAt(d.TSN-1), r.runStartingAt(d.TSN+1)
		if left >= 0 && !adjacent(&r.frags[r.runs[left].tail], &f) ||
			right >= 0 && !adjacent(&f, &r.frags[r.runs[right].head]) {
			r.violations++
			r.why = fmt.Sprintf("DATA TSN %d does not continue the fragments next to it (RFC 9260 §6.9)", d.TSN)
			return false, errFragmentSequence
		}
	}
	switch {
	case int(d.StreamID) >= r.nStreams:
		r.violations++
		return false, errInvalidStream
	case len(d.UserData) == 0:
		r.violations++
		return false, wire.ErrNoUserData
	case d.Beginning && d.Ending:
		return r.pushWhole(d)
	}
	return r.pushFragment(d, &f, left, right)
}

// pushWhole handles an unfragmented message.
func (r *reassembler) pushWhole(d *wire.Data) (bool, error) {
	if d.Unordered {
		return true, nil
	}
	st := r.stream(d.StreamID)
	if err := r.checkSSN(d.StreamID, st, d.SSN); err != nil {
		return false, err
	}
	if d.SSN == st.next && r.head == len(r.ready) {
		st.next++
		r.releaseOrdered(d.StreamID, st)
		return true, nil
	}
	if r.nFrags+r.nPend >= r.maxHeld {
		return false, r.limit(fmt.Sprintf("more than %d fragments and ordered messages held (RFC 9260 §6.9)", r.maxHeld))
	}
	bp := getRxBuf(len(d.UserData))
	c := cap(*bp) + msgOverhead
	if !r.charge(d.TSN, c) {
		putBuf(bp)
		r.refused++
		return false, errReassemblyBudget
	}
	r.held += c
	m := message{StreamID: d.StreamID, SSN: d.SSN, PPID: d.PPID, FirstTSN: d.TSN, LastTSN: d.TSN,
		Data: append((*bp)[:0], d.UserData...), buf: bp, cost: c}
	return false, r.ordered(m)
}

func (r *reassembler) limit(why string) error {
	r.violations++
	r.why = why
	return errReassemblyLimit
}

// checkSSN rejects an ordered message whose SSN was delivered or is held
// already.
func (r *reassembler) checkSSN(id uint16, st *inStream, ssn uint16) error {
	if seq.SSNLess(ssn, st.next) || ssn-st.next == 1<<15 {
		r.violations++
		return errStreamSequence
	}
	if r.nPend > 0 {
		if _, found := r.pend[pendKey(id, ssn)]; found {
			r.violations++
			return errStreamSequence
		}
	}
	return nil
}

// ordered files a complete ordered message, whose memory is counted in
// held: delivered in its turn, held until then. A message whose SSN was
// delivered or is held already (two fragmented messages of one SSN) is
// dropped: errStreamSequence.
func (r *reassembler) ordered(m message) error {
	st := r.stream(m.StreamID)
	if m.SSN == st.next {
		r.ready = append(r.ready, m)
		st.next++
		r.releaseOrdered(m.StreamID, st)
		return nil
	}
	key := pendKey(m.StreamID, m.SSN)
	if _, found := r.pend[key]; found || !seq.SSNGreater(m.SSN, st.next) {
		r.dropMessage(&m)
		r.violations++
		return errStreamSequence
	}
	if r.pend == nil {
		r.pend, r.pendByLast = make(map[uint32]message), make(map[uint32]uint32)
	}
	r.ensureBits()
	if r.nFrags+r.nPend == 0 || seq.TSNGreater(m.LastTSN, r.hiHeld) {
		r.hiHeld = m.LastTSN
	}
	r.pend[key] = m
	r.pendByLast[m.LastTSN] = key
	r.pendPeak = max(r.pendPeak, len(r.pend))
	for t := m.FirstTSN; ; t++ {
		setBit(r.pendBits, t&r.bitMask, true)
		r.work++
		if t == m.LastTSN {
			break
		}
	}
	r.nPend++
	return nil
}

// unpend takes the waiting message key out of pend.
func (r *reassembler) unpend(key uint32) message {
	m := r.pend[key]
	delete(r.pend, key)
	delete(r.pendByLast, m.LastTSN)
	for t := m.FirstTSN; ; t++ {
		setBit(r.pendBits, t&r.bitMask, false)
		r.work++
		if t == m.LastTSN {
			break
		}
	}
	r.nPend--
	if r.nPend == 0 && r.pendPeak > 64 {
		r.pend, r.pendByLast, r.pendPeak = nil, nil, 0 // a burst's tables go
	}
	return m
}

func (r *reassembler) dropMessage(m *message) {
	r.held -= m.cost
	r.acct.Release(m.cost)
	putBuf(m.buf)
	*m = message{}
}

// releaseOrdered moves the held messages whose turn has come to ready.
func (r *reassembler) releaseOrdered(id uint16, st *inStream) {
	for r.nPend > 0 {
		key := pendKey(id, st.next)
		if _, ok := r.pend[key]; !ok {
			return
		}
		r.ready = append(r.ready, r.unpend(key))
		st.next++
	}
}

func tsnCmp(a, b uint32) int { return int(int32(a - b)) }

// isHeld reports whether a fragment of TSN tsn is held.
func (r *reassembler) isHeld(tsn uint32) bool {
	if r.heldBits == nil {
		return false
	}
	i := tsn & r.bitMask
	if r.heldBits[i>>6]&(1<<(i&63)) == 0 {
		return false
	}
	// The bit may belong to a TSN a ring's length away: ask the runs.
	if k, ok := r.ends[tsn]; ok {
		return r.runs[k].first == tsn || r.runs[k].last == tsn
	}
	return r.isSet(tsn-1) && r.isSet(tsn+1) // inside a run
}

func (r *reassembler) isSet(tsn uint32) bool {
	i := tsn & r.bitMask
	return r.heldBits[i>>6]&(1<<(i&63)) != 0
}

func (r *reassembler) setBit(tsn uint32, on bool) { setBit(r.heldBits, tsn&r.bitMask, on) }

func setBit(w []uint64, i uint32, on bool) {
	if on {
		w[i>>6] |= 1 << (i & 63)
	} else {
		w[i>>6] &^= 1 << (i & 63)
	}
}

// ensureBits allocates the bitmaps of held TSNs, a ring of at least the
// TSN window and the longest message: every TSN held lies that close to
// the Cumulative TSN Ack point.
func (r *reassembler) ensureBits() {
	if r.heldBits != nil {
		return
	}
	ring := uint32(64)
	for ring < uint32(r.window+r.maxMsgFrags)+1 {
		ring <<= 1
	}
	r.heldBits, r.pendBits, r.bitMask = make([]uint64, ring/64), make([]uint64, ring/64), ring-1
}

// runEndingAt returns the run whose last TSN is tsn, or -1.
func (r *reassembler) runEndingAt(tsn uint32) int32 {
	if k, ok := r.ends[tsn]; ok && r.runs[k].last == tsn {
		return k
	}
	return -1
}

// runStartingAt returns the run whose first TSN is tsn, or -1.
func (r *reassembler) runStartingAt(tsn uint32) int32 {
	if k, ok := r.ends[tsn]; ok && r.runs[k].first == tsn {
		return k
	}
	return -1
}

func (r *reassembler) newFrag(f *frag) int32 {
	if r.freeFrag >= 0 {
		i := r.freeFrag
		r.freeFrag = r.frags[i].next
		r.frags[i] = *f
		return i
	}
	r.frags = append(r.frags, *f)
	return int32(len(r.frags) - 1)
}

// freeFragment gives back fragment i, its buffer and its charge.
func (r *reassembler) freeFragment(i int32) {
	f := &r.frags[i]
	c := cap(*f.buf) + fragOverhead
	r.held -= c
	r.acct.Release(c)
	putBuf(f.buf)
	r.setBit(f.tsn, false)
	*f = frag{next: r.freeFrag}
	r.freeFrag = i
	r.nFrags--
}

func (r *reassembler) newRun() int32 {
	if r.freeRun >= 0 {
		i := r.freeRun
		r.freeRun = r.runs[i].head
		return i
	}
	r.runs = append(r.runs, fragRun{})
	return int32(len(r.runs) - 1)
}

func (r *reassembler) freeRunAt(i int32) {
	r.runs[i] = fragRun{head: r.freeRun}
	r.freeRun = i
}

// index records run k under its first and last TSN.
func (r *reassembler) index(k int32) {
	if r.ends == nil {
		r.ends = make(map[uint32]int32)
	}
	r.ends[r.runs[k].first] = k
	r.ends[r.runs[k].last] = k
}

func (r *reassembler) unindex(k int32) {
	delete(r.ends, r.runs[k].first)
	delete(r.ends, r.runs[k].last)
}

// pushFragment files one fragment and puts its message together if that
// completes it (RFC 9260 §6.9). left and right are the held runs ending
// just before and starting just after it.
func (r *reassembler) pushFragment(d *wire.Data, f *frag, left, right int32) (bool, error) {
	if !d.Unordered {
		if err := r.checkSSN(d.StreamID, r.stream(d.StreamID), d.SSN); err != nil {
			return false, err
		}
	}
	// A fragment next to a received TSN that is not held can never
	// complete: a middle or last fragment must follow one of its message,
	// a first or middle one be followed by one.
	if r.received != nil {
		if !d.Beginning && left < 0 && r.received(d.TSN-1) {
			r.violations++
			r.why = fmt.Sprintf("DATA TSN %d without the B bit follows TSN %d, which is not a fragment of its message: it can never complete (RFC 9260 §6.9)", d.TSN, d.TSN-1)
			return false, errFragmentSequence
		}
		if !d.Ending && right < 0 && r.received(d.TSN+1) {
			r.violations++
			r.why = fmt.Sprintf("DATA TSN %d without the E bit precedes TSN %d, which is not a fragment of its message: it can never complete (RFC 9260 §6.9)", d.TSN, d.TSN+1)
			return false, errFragmentSequence
		}
	}
	if r.nFrags+r.nPend >= r.maxHeld {
		return false, r.limit(fmt.Sprintf("more than %d fragments and ordered messages held (RFC 9260 §6.9)", r.maxHeld))
	}
	// Fragments of the message this one belongs to, once filed.
	n := 1
	if left >= 0 && d.Beginning == false {
		l := &r.runs[left]
		n += int(l.count - l.prefix)
		if l.cutE >= 0 {
			n = 1 + int(l.count-l.prefix)
		}
	}
	if right >= 0 && !d.Ending {
		q := &r.runs[right]
		if q.cutE >= 0 {
			n += int(q.prefix)
		} else {
			n += int(q.count)
		}
	}
	if n > r.maxMsgFrags {
		return false, r.limit(fmt.Sprintf("a message of more than %d fragments (RFC 9260 §6.9)", r.maxMsgFrags))
	}
	bp := getRxBuf(len(d.UserData))
	if !r.charge(d.TSN, cap(*bp)+fragOverhead) {
		putBuf(bp)
		r.refused++
		return false, errReassemblyBudget
	}
	r.held += cap(*bp) + fragOverhead
	f.buf = bp
	f.n = int32(copy(*bp, d.UserData))
	r.ensureBits()
	if r.nFrags+r.nPend == 0 || seq.TSNGreater(d.TSN, r.hiHeld) {
		r.hiHeld = d.TSN
	}
	i := r.newFrag(f)
	r.nFrags++
	r.setBit(d.TSN, true)
	r.link(i, left, right)
	return false, nil
}

// link files fragment i between the runs left and right (either -1) and
// takes out the message it completes.
func (r *reassembler) link(i, left, right int32) {
	f := &r.frags[i]
	t := f.tsn
	// The message around t: its first fragment (s, at TSN sT) and its last
	// (e, at eT), if held.
	s, e := int32(-1), int32(-1)
	var sT, eT uint32
	if f.flags&fB != 0 {
		s, sT = i, t
	} else if left >= 0 {
		l := &r.runs[left]
		switch {
		case l.cutB >= 0:
			s, sT = l.cutB, r.frags[l.cutB].tsn
		case r.frags[l.head].flags&fB != 0:
			s, sT = l.head, l.first
		}
	}
	if f.flags&fE != 0 {
		e, eT = i, t
	} else if right >= 0 {
		q := &r.runs[right]
		switch {
		case q.cutE >= 0:
			e, eT = q.cutE, r.frags[q.cutE].tsn
		case r.frags[q.tail].flags&fE != 0:
			e, eT = q.tail, q.last
		}
	}

	// Merge into one run [first..last] with i in it.
	k := left
	if k < 0 {
		k = right
	}
	if k < 0 {
		k = r.newRun()
		r.runs[k] = fragRun{first: t, last: t, head: i, tail: i, cutE: -1, cutB: -1, count: 1}
		r.index(k)
	} else {
		var L, R fragRun
		if left >= 0 {
			L = r.runs[left]
			r.unindex(left)
		}
		if right >= 0 {
			R = r.runs[right]
			r.unindex(right)
			if right != k {
				r.freeRunAt(right)
			}
		}
		run := fragRun{first: t, last: t, head: i, tail: i, cutE: -1, cutB: -1, count: 1}
		if left >= 0 {
			r.frags[L.tail].next = i
			run.first, run.head, run.count = L.first, L.head, L.count+1
			if L.cutE >= 0 {
				run.cutE, run.cutB, run.prefix = L.cutE, L.cutB, L.prefix
			} else if f.flags&fB != 0 {
				run.cutE, run.cutB, run.prefix = L.tail, i, L.count
			}
		}
		if right >= 0 {
			f.next = R.head
			run.last, run.tail = R.last, R.tail
			if run.cutE < 0 {
				switch {
				case R.cutE >= 0:
					run.cutE, run.cutB, run.prefix = R.cutE, R.cutB, run.count+R.prefix
				case f.flags&fE != 0:
					run.cutE, run.cutB, run.prefix = i, R.head, run.count
				}
			}
			run.count += R.count
		}
		r.runs[k] = run
		r.index(k)
	}
	if s >= 0 && e >= 0 {
		r.complete(k, s, sT, e, eT)
	}
}

// complete takes the message of fragments s (TSN sT) to e (TSN eT) out of
// run k and hands it over or files it.
func (r *reassembler) complete(k, s int32, sT uint32, e int32, eT uint32) {
	run := r.runs[k]
	r.unindex(k)
	// What stays: the fragments before s and after e.
	var before, after int32 = -1, -1 // their last and first fragments
	if sT != run.first {
		before = run.cutE
	}
	if eT != run.last {
		after = r.frags[e].next
	}
	first := &r.frags[s]
	m := message{StreamID: first.stream, SSN: first.ssn, PPID: first.ppid, Unordered: first.flags&fU != 0,
		FirstTSN: sT, LastTSN: eT}
	n, count := 0, int32(0)
	for j := s; ; j = r.frags[j].next {
		n += int(r.frags[j].n)
		count++
		r.work++
		if j == e {
			break
		}
	}
	var mc int
	if n <= largeBuf {
		m.buf = getRxBuf(n)
		m.Data = (*m.buf)[:0]
		mc = cap(*m.buf) + msgOverhead
	} else {
		m.Data = make([]byte, 0, n)
		mc = cap(m.Data) + msgOverhead
	}
	freed := 0
	for j := s; ; {
		fr := &r.frags[j]
		m.Data = append(m.Data, (*fr.buf)[:fr.n]...)
		nx := fr.next
		freed += cap(*fr.buf) + fragOverhead
		r.freeFragment(j)
		if j == e {
			break
		}
		j = nx
	}
	// The message takes the fragments' charge; if it needs more and the
	// budget has none, it keeps theirs (at most twice its size).
	if r.acct.Charge(mc) != nil {
		mc = min(mc, freed)
		for r.acct.Charge(mc) != nil && mc > 0 {
			mc /= 2
		}
	}
	m.cost = mc
	r.held += mc

	// The rest of the run: a prefix [first..sT-1] and a suffix [eT+1..last].
	r.freeRunAt(k)
	if before >= 0 {
		p := r.newRun()
		r.frags[before].next = -1
		r.runs[p] = fragRun{first: run.first, last: sT - 1, head: run.head, tail: before, cutE: -1, cutB: -1, count: run.prefix}
		r.index(p)
	}
	if after >= 0 {
		q := r.newRun()
		rest := run.count - count
		if before >= 0 {
			rest -= run.prefix
		}
		r.runs[q] = fragRun{first: eT + 1, last: run.last, head: after, tail: run.tail, cutE: -1, cutB: -1, count: rest}
		r.index(q)
	}
	r.shrink()
	if m.Unordered {
		r.ready = append(r.ready, m)
		return
	}
	_ = r.ordered(m)
}

// shrink lets go of the fragment tables once nothing is held, if a burst
// made them large.
func (r *reassembler) shrink() {
	if r.nFrags != 0 {
		return
	}
	if cap(r.frags) > 256 {
		r.frags, r.runs, r.ends = nil, nil, nil
	} else {
		r.frags, r.runs = r.frags[:0], r.runs[:0]
	}
	r.freeFrag, r.freeRun = -1, -1
}

// adjacent reports whether fragment b, at the TSN after a, can follow it:
// in the same message (a without E, b without B, same stream, U bit and,
// if ordered, SSN), or starting the next one (a with E, b with B).
func adjacent(a, b *frag) bool {
	ae, bb := a.flags&fE != 0, b.flags&fB != 0
	if ae != bb {
		return false
	}
	return ae || a.stream == b.stream && a.flags&fU == b.flags&fU && (a.flags&fU != 0 || a.ssn == b.ssn)
}

// Holds reports whether Push would copy the chunk's user data and hold it
// (charging it to the budget) rather than have the caller deliver it
// at once: not for a whole unordered message, nor for a whole ordered one
// whose turn it is while nothing waits in Next.
func (r *reassembler) Holds(d *wire.Data) bool {
	if !d.Beginning || !d.Ending {
		return true
	}
	if d.Unordered {
		return false
	}
	return int(d.StreamID) >= r.nStreams || d.SSN != r.nextSSN(d.StreamID) || r.head != len(r.ready)
}

// Cost returns the memory Push would charge for the chunk: zero if it is
// not held.
func (r *reassembler) Cost(d *wire.Data) int {
	if !r.Holds(d) {
		return 0
	}
	return cost(len(d.UserData))
}

// Admit reports whether a new DATA chunk can be taken: it will not be
// held, or its charge was reserved in the budget, if need be after
// MakeRoom made room for it (calling renege with each TSN it evicted);
// the Push of the chunk uses the reservation. A chunk not admitted is
// dropped before recvTracker.Observe, so that it is not acknowledged
// (RFC 9260 §6.2).
func (r *reassembler) Admit(d *wire.Data, renege func(uint32)) bool {
	c := r.Cost(d)
	if c == 0 {
		return true
	}
	r.dropReservation()
	if r.acct.Charge(c) != nil && (!r.MakeRoom(d.TSN, c, renege) || r.acct.Charge(c) != nil) {
		r.refused++
		return false
	}
	r.resTSN, r.resCost, r.hasRes = d.TSN, c, true
	return true
}

// MakeRoom applies the zero-window rule of RFC 9260 §6.2 for a new DATA
// chunk of TSN tsn that needs n octets: while they do not fit, it evicts
// the held run of fragments or waiting ordered message with the highest
// TSN, if that is above tsn, calling renege with each TSN it evicts so
// that the caller forgets it (recvTracker.Renege; the sender retransmits
// it). It never evicts messages already deliverable. It reports whether n
// octets fit now.
func (r *reassembler) MakeRoom(tsn uint32, n int, renege func(uint32)) bool {
	for !r.Fits(n) {
		best, ok := r.highestHeld(tsn)
		if !ok {
			return false
		}
		var first, last uint32
		if k := r.runEndingAt(best); k >= 0 {
			run := r.runs[k]
			r.unindex(k)
			r.freeRunAt(k)
			for j := run.head; j >= 0; {
				nx := r.frags[j].next
				r.freeFragment(j)
				r.work++
				j = nx
			}
			first, last = run.first, run.last
			r.shrink()
		} else {
			m := r.unpend(r.pendByLast[best])
			first, last = m.FirstTSN, m.LastTSN
			r.dropMessage(&m)
		}
		for t := last; ; t-- {
			r.evicted++
			renege(t)
			if t == first {
				break
			}
		}
		r.hiHeld = first - 1
	}
	return true
}

// highestHeld returns the highest TSN above tsn that ends a held run of
// fragments or a waiting ordered message, from hiHeld down, a word of
// the bitmaps at a time.
func (r *reassembler) highestHeld(tsn uint32) (uint32, bool) {
	if r.nFrags+r.nPend == 0 || !seq.TSNGreater(r.hiHeld, tsn) {
		return 0, false
	}
	span := r.hiHeld - tsn // TSNs tsn+1 .. hiHeld
	for o := uint32(0); o < span; {
		t := r.hiHeld - o
		r.work++
		i := t & r.bitMask
		w := (r.heldBits[i>>6] | r.pendBits[i>>6]) << (63 - i&63) // bit i at the top
		if w == 0 {
			o += i&63 + 1
			continue
		}
		o += uint32(bits.LeadingZeros64(w))
		if o >= span {
			break
		}
		t = r.hiHeld - o
		if r.runEndingAt(t) >= 0 {
			r.hiHeld = t
			return t, true
		}
		if _, ok := r.pendByLast[t]; ok {
			r.hiHeld = t
			return t, true
		}
		o++ // inside a run or a message, or a TSN a ring's length away: go on
	}
	return 0, false
}

// Reset gives back everything held (the association ended).
func (r *reassembler) Reset() {
	r.dropReservation()
	for k := range r.runs {
		if r.runs[k].count == 0 {
			continue
		}
		for j := r.runs[k].head; j >= 0; {
			nx := r.frags[j].next
			r.freeFragment(j)
			j = nx
		}
	}
	r.runs, r.frags, r.ends = nil, nil, nil
	r.freeFrag, r.freeRun = -1, -1
	for key := range r.pend {
		m := r.unpend(key)
		r.dropMessage(&m)
	}
	for m, ok := r.Next(); ok; m, ok = r.Next() {
		putBuf(m.buf)
	}
}
