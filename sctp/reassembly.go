package sctp

import (
	"errors"
	"slices"

	"github.com/sctp-rdma/sctp-rdma/sctp/wire"
)

// DefaultReassemblyBudget is the byte budget of a Reassembler unless told
// otherwise: the receive buffer whose free space is advertised as a_rwnd.
const DefaultReassemblyBudget = 4 << 20

// Errors of Reassembler.Push.
var (
	// ErrReassemblyBudget: the chunk's user data does not fit the byte
	// budget, and it is not kept. RFC 9260 §6.2 has the receiver drop
	// DATA it has no room for; the caller avoids acknowledging it by
	// calling Fits (or MakeRoom) before RecvTracker.Observe.
	ErrReassemblyBudget = errors.New("sctp: reassembly byte budget exceeded")
	// ErrInvalidStream: the chunk's stream is beyond the inbound streams
	// of the association. RFC 9260 §6.5: the chunk is acknowledged and
	// discarded, and an ERROR with an Invalid Stream Identifier cause is
	// sent.
	ErrInvalidStream = errors.New("sctp: DATA on a stream beyond the inbound streams")
	// ErrFragmentSequence: fragments that cannot belong to one user
	// message (RFC 9260 §6.9: a message's fragments have consecutive TSNs,
	// the first with the B bit, the last with the E bit, all of one
	// stream, one U bit and, if ordered, one SSN). The chunk is not kept;
	// it is a protocol violation of the peer.
	ErrFragmentSequence = errors.New("sctp: DATA fragments out of sequence")
	// ErrStreamSequence: an ordered message whose Stream Sequence Number
	// was delivered already or is held already (RFC 9260 §6.5: SSNs of a
	// stream are consecutive). The chunk is not kept; a protocol
	// violation of the peer.
	ErrStreamSequence = errors.New("sctp: ordered DATA with a stream sequence number out of sequence")
)

// ReassemblyConfig sets up a Reassembler.
type ReassemblyConfig struct {
	// Streams is the number of inbound streams (the MIS of our INIT or
	// INIT ACK, capped by the peer's OS); at least 1.
	Streams int
	// Budget bounds the user data held, in octets: fragments of messages
	// not yet complete, ordered messages waiting for an earlier one, and
	// messages waiting for Next. Zero means DefaultReassemblyBudget.
	Budget int
}

// Message is a user message put together by a Reassembler (RFC 9260
// §6.9), or one delivered straight from a chunk.
type Message struct {
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
}

type fragment struct {
	tsn      uint32
	stream   uint16
	ssn      uint16
	ppid     uint32
	b, e, u  bool
	userData []byte  // in buf
	buf      *[]byte // pooled
}

type inStream struct {
	next    uint16    // the SSN of the next ordered message to deliver
	pending []Message // complete ordered messages after next, by SSN
}

// Reassembler is the receive side of user messages (RFC 9260 §6.5, §6.6,
// §6.9): it takes the new DATA chunks of an association, puts fragmented
// messages together from their B and E bits and consecutive TSNs, and
// hands messages over unordered ones as soon as they are complete and
// ordered ones in Stream Sequence Number order per stream.
//
// The common case costs nothing: a chunk that is a whole message and may
// be delivered at once (every unordered one, as all DDP traffic is, RFC
// 5043 §10, and an ordered one whose turn it is) is not copied; Push says
// so and the caller delivers the chunk's user data from the packet. Other
// user data is copied, and counted against a byte budget: what does not
// fit is refused (ErrReassemblyBudget, counted by Refused), and MakeRoom
// implements the zero-window rule of RFC 9260 §6.2, evicting held data of
// higher TSNs so that a lower one fits.
//
// Use, per DATA chunk d that is not a duplicate (RecvTracker.Received):
// if !Admit(d, tracker.Renege) drop it unacknowledged; otherwise
// RecvTracker.Observe it, Push it, deliver d.UserData if Push says so,
// then deliver every message Next returns. Window gives the a_rwnd of the
// next SACK.
//
// Not safe for concurrent use.
type Reassembler struct {
	budget   int
	held     int
	frags    []fragment // by TSN
	streams  []inStream // nil until the first ordered message
	nStreams int
	ready    []Message // deliverable, in delivery order, from head
	head     int
	nPend    int // ordered messages held in streams[].pending

	refused, evicted, violations uint64
}

// NewReassembler returns a Reassembler.
func NewReassembler(cfg ReassemblyConfig) *Reassembler {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultReassemblyBudget
	}
	return &Reassembler{
		budget:   cfg.Budget,
		nStreams: min(max(cfg.Streams, 1), 65536),
	}
}

// stream returns the ordered-delivery state of stream id (< nStreams),
// allocating every stream's on the first ordered message: DDP sends only
// unordered messages (RFC 5043 §10), which need none.
func (r *Reassembler) stream(id uint16) *inStream {
	if r.streams == nil {
		r.streams = make([]inStream, r.nStreams)
	}
	return &r.streams[id]
}

// nextSSN is the SSN of the next ordered message of stream id.
func (r *Reassembler) nextSSN(id uint16) uint16 {
	if r.streams == nil {
		return 0
	}
	return r.streams[id].next
}

// Held returns the octets of user data held.
func (r *Reassembler) Held() int { return r.held }

// Budget returns the byte budget.
func (r *Reassembler) Budget() int { return r.budget }

// Window returns the free part of the budget: the a_rwnd to advertise
// (RFC 9260 §6.2).
func (r *Reassembler) Window() uint32 { return uint32(max(r.budget-r.held, 0)) }

// Fits reports whether n more octets of user data can be held.
func (r *Reassembler) Fits(n int) bool { return n <= r.budget-r.held }

// Refused counts the chunks refused for the budget.
func (r *Reassembler) Refused() uint64 { return r.refused }

// Evicted counts the chunks MakeRoom evicted.
func (r *Reassembler) Evicted() uint64 { return r.evicted }

// Violations counts the chunks refused as protocol violations
// (ErrFragmentSequence, ErrStreamSequence, ErrInvalidStream).
func (r *Reassembler) Violations() uint64 { return r.violations }

// Pending returns the number of messages Next would return now.
func (r *Reassembler) Pending() int { return len(r.ready) - r.head }

// Next returns the next message to deliver; its octets leave the budget.
func (r *Reassembler) Next() (Message, bool) {
	if r.head == len(r.ready) {
		return Message{}, false
	}
	m := r.ready[r.head]
	r.ready[r.head] = Message{}
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
	r.held -= len(m.Data)
	return m, true
}

// Push takes a new DATA chunk (one RecvTracker.Observe found new). If
// deliverNow is true, the chunk is a whole message whose turn it is: the
// caller delivers d.UserData itself, from the packet, before what Next
// returns; nothing was copied. Otherwise the user data was copied and
// will come out of Next once its message is complete and in order, or
// Push returned an error and kept nothing: ErrReassemblyBudget,
// ErrInvalidStream, ErrFragmentSequence, ErrStreamSequence, or
// wire.ErrNoUserData for an empty chunk.
func (r *Reassembler) Push(d *wire.Data) (deliverNow bool, err error) {
	switch {
	case int(d.StreamID) >= r.nStreams:
		r.violations++
		return false, ErrInvalidStream
	case len(d.UserData) == 0:
		r.violations++
		return false, wire.ErrNoUserData
	case d.Beginning && d.Ending:
		return r.pushWhole(d)
	}
	return r.pushFragment(d)
}

// pushWhole handles an unfragmented message.
func (r *Reassembler) pushWhole(d *wire.Data) (bool, error) {
	if d.Unordered {
		return true, nil
	}
	st := r.stream(d.StreamID)
	if err := r.checkSSN(st, d.SSN); err != nil {
		return false, err
	}
	if d.SSN == st.next && r.head == len(r.ready) {
		st.next++
		r.releaseOrdered(st)
		return true, nil
	}
	if !r.Fits(len(d.UserData)) {
		r.refused++
		return false, ErrReassemblyBudget
	}
	r.held += len(d.UserData)
	return false, r.ordered(Message{StreamID: d.StreamID, SSN: d.SSN, PPID: d.PPID, FirstTSN: d.TSN, LastTSN: d.TSN,
		Data: append([]byte(nil), d.UserData...)})
}

// checkSSN rejects an ordered message whose SSN was delivered or is held
// already.
func (r *Reassembler) checkSSN(st *inStream, ssn uint16) error {
	if SSNLess(ssn, st.next) || ssn-st.next == 1<<15 || slices.ContainsFunc(st.pending, func(m Message) bool { return m.SSN == ssn }) {
		r.violations++
		return ErrStreamSequence
	}
	return nil
}

// ordered files a complete ordered message, whose octets are counted in
// held: delivered in its turn, held until then. A message whose SSN was
// delivered or is held already (two fragmented messages of one SSN) is
// dropped: ErrStreamSequence.
func (r *Reassembler) ordered(m Message) error {
	st := r.stream(m.StreamID)
	if m.SSN == st.next {
		r.ready = append(r.ready, m)
		st.next++
		r.releaseOrdered(st)
		return nil
	}
	i, found := slices.BinarySearchFunc(st.pending, m.SSN, func(p Message, ssn uint16) int { return int(int16(p.SSN - ssn)) })
	if found || !SSNGreater(m.SSN, st.next) {
		r.held -= len(m.Data)
		r.violations++
		return ErrStreamSequence
	}
	st.pending = slices.Insert(st.pending, i, m)
	r.nPend++
	return nil
}

// releaseOrdered moves the held messages whose turn has come to ready.
func (r *Reassembler) releaseOrdered(st *inStream) {
	n := 0
	for n < len(st.pending) && st.pending[n].SSN == st.next {
		r.ready = append(r.ready, st.pending[n])
		st.next++
		n++
	}
	if n > 0 {
		clear(st.pending[:n])
		st.pending = st.pending[n:]
		r.nPend -= n
		if len(st.pending) == 0 {
			st.pending = nil
		}
	}
}

func tsnCmp(a, b uint32) int { return int(int32(a - b)) }

// pushFragment files one fragment and puts its message together if that
// completes it (RFC 9260 §6.9).
func (r *Reassembler) pushFragment(d *wire.Data) (bool, error) {
	if !d.Unordered {
		if err := r.checkSSN(r.stream(d.StreamID), d.SSN); err != nil {
			return false, err
		}
	}
	i, found := slices.BinarySearchFunc(r.frags, d.TSN, func(f fragment, tsn uint32) int { return tsnCmp(f.tsn, tsn) })
	if found {
		return false, nil // a duplicate RecvTracker should have caught: nothing to add
	}
	f := fragment{tsn: d.TSN, stream: d.StreamID, ssn: d.SSN, ppid: d.PPID, b: d.Beginning, e: d.Ending, u: d.Unordered}
	// The neighbours in TSN order must be able to belong with it.
	if i > 0 && r.frags[i-1].tsn == f.tsn-1 && !r.adjacent(&r.frags[i-1], &f) ||
		i < len(r.frags) && r.frags[i].tsn == f.tsn+1 && !r.adjacent(&f, &r.frags[i]) {
		r.violations++
		return false, ErrFragmentSequence
	}
	if !r.Fits(len(d.UserData)) {
		r.refused++
		return false, ErrReassemblyBudget
	}
	// Fragments and the message made of them live in pooled buffers: a
	// fresh allocation for each (and another for the message) made a
	// 64 KiB message of two fragments cost 131 KB of garbage and 60 µs.
	f.buf = getBuf(len(d.UserData))
	f.userData = append((*f.buf)[:0], d.UserData...)
	r.held += len(f.userData)
	r.frags = slices.Insert(r.frags, i, f)

	// The message around it: back to its B, forward to its E.
	s := i
	for !r.frags[s].b {
		if s == 0 || r.frags[s-1].tsn != r.frags[s].tsn-1 {
			return false, nil
		}
		s--
	}
	e := i
	for !r.frags[e].e {
		if e+1 == len(r.frags) || r.frags[e+1].tsn != r.frags[e].tsn+1 {
			return false, nil
		}
		e++
	}
	first := &r.frags[s]
	m := Message{StreamID: first.stream, SSN: first.ssn, PPID: first.ppid, Unordered: first.u,
		FirstTSN: first.tsn, LastTSN: r.frags[e].tsn}
	n := 0
	for k := s; k <= e; k++ {
		n += len(r.frags[k].userData)
	}
	if n <= largeBuf {
		m.buf = getBuf(n)
		m.Data = (*m.buf)[:0]
	} else {
		m.Data = make([]byte, 0, n)
	}
	for k := s; k <= e; k++ {
		m.Data = append(m.Data, r.frags[k].userData...)
		putBuf(r.frags[k].buf)
	}
	clear(r.frags[s : e+1])
	r.frags = slices.Delete(r.frags, s, e+1)
	if m.Unordered {
		r.ready = append(r.ready, m)
		return false, nil
	}
	return false, r.ordered(m)
}

// adjacent reports whether fragment b, at the TSN after a, can follow it:
// in the same message (a without E, b without B, same stream, U bit and,
// if ordered, SSN), or starting the next one (a with E, b with B).
func (r *Reassembler) adjacent(a, b *fragment) bool {
	if a.e != b.b {
		return false
	}
	return a.e || a.stream == b.stream && a.u == b.u && (a.u || a.ssn == b.ssn)
}

// Holds reports whether Push would copy the chunk's user data and hold it
// (counting it against the budget) rather than have the caller deliver it
// at once: not for a whole unordered message, nor for a whole ordered one
// whose turn it is while nothing waits in Next.
func (r *Reassembler) Holds(d *wire.Data) bool {
	if !d.Beginning || !d.Ending {
		return true
	}
	if d.Unordered {
		return false
	}
	return int(d.StreamID) >= r.nStreams || d.SSN != r.nextSSN(d.StreamID) || r.head != len(r.ready)
}

// Admit reports whether a new DATA chunk can be taken: it will not be
// held, or its user data fits the budget, or MakeRoom made room for it
// (calling renege with each TSN it evicted). A chunk not admitted is
// dropped before RecvTracker.Observe, so that it is not acknowledged
// (RFC 9260 §6.2).
func (r *Reassembler) Admit(d *wire.Data, renege func(uint32)) bool {
	return !r.Holds(d) || r.Fits(len(d.UserData)) || r.MakeRoom(d.TSN, len(d.UserData), renege)
}

// MakeRoom applies the zero-window rule of RFC 9260 §6.2 for a new DATA
// chunk of n octets with TSN tsn: while n octets do not fit, it evicts
// the held fragment or waiting ordered message with the highest TSN, if
// that is above tsn, calling renege with each TSN it evicts so that the
// caller forgets it (RecvTracker.Renege; the sender retransmits it). It
// never evicts messages already deliverable. It reports whether n octets
// fit now.
func (r *Reassembler) MakeRoom(tsn uint32, n int, renege func(uint32)) bool {
	for !r.Fits(n) {
		// The candidates: the last fragment, and the last waiting message
		// of each stream.
		best, bestStream := uint32(0), -1
		found := false
		if k := len(r.frags); k > 0 && TSNGreater(r.frags[k-1].tsn, tsn) {
			best, found = r.frags[k-1].tsn, true
		}
		if r.nPend > 0 {
			for s := range r.streams {
				p := r.streams[s].pending
				if len(p) == 0 {
					continue
				}
				if last := p[len(p)-1].LastTSN; TSNGreater(last, tsn) && (!found || TSNGreater(last, best)) {
					best, bestStream, found = last, s, true
				}
			}
		}
		if !found {
			return false
		}
		if bestStream < 0 {
			f := r.frags[len(r.frags)-1]
			r.frags[len(r.frags)-1] = fragment{}
			r.frags = r.frags[:len(r.frags)-1]
			r.held -= len(f.userData)
			putBuf(f.buf)
			r.evicted++
			renege(f.tsn)
			continue
		}
		st := &r.streams[bestStream]
		m := st.pending[len(st.pending)-1]
		st.pending[len(st.pending)-1] = Message{}
		st.pending = st.pending[:len(st.pending)-1]
		r.nPend--
		r.held -= len(m.Data)
		for t := m.FirstTSN; ; t++ {
			r.evicted++
			renege(t)
			if t == m.LastTSN {
				break
			}
		}
	}
	return true
}
