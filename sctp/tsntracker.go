package sctp

import (
	"math/bits"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// Defaults of recvTrackerConfig.
const (
	// defaultRecvWindow is how many TSNs beyond the Cumulative TSN Ack
	// point a recvTracker holds by default.
	defaultRecvWindow = 16384
	// maxRecvWindow is the largest window: Gap Ack Block offsets are 16
	// bits wide (RFC 9260 §3.3.4).
	maxRecvWindow = 65535
	// defaultMaxDuplicates is how many Duplicate TSNs one SACK reports by
	// default.
	defaultMaxDuplicates = 32
	// defaultSACKDelay is the delayed-acknowledgement bound, SACK.Delay
	// (RFC 9260 §6.2: within 200 ms of the arrival of unacknowledged DATA).
	defaultSACKDelay = 200 * time.Millisecond
	// maxSACKDelay is the largest SACK delay RFC 9260 §6.2 allows to be
	// configured.
	maxSACKDelay = 500 * time.Millisecond
)

// recvTrackerConfig sets up a recvTracker; zero fields take the defaults.
type recvTrackerConfig struct {
	// Window is how many TSNs beyond the Cumulative TSN Ack point can be
	// received out of order, at most maxRecvWindow; typically the receive
	// buffer divided by the smallest DATA chunk expected.
	Window int
	// MaxDuplicates caps the Duplicate TSNs of one SACK.
	MaxDuplicates int
	// SACKDelay bounds the delay of a SACK; capped at maxSACKDelay.
	SACKDelay time.Duration
}

// recvResult is what Observe made of a TSN.
type recvResult uint8

const (
	// recvNew: the TSN is new; the caller keeps the DATA.
	recvNew recvResult = iota
	// recvDuplicate: the TSN was received before; the caller drops the
	// DATA, and the next SACK lists the TSN as a duplicate (RFC 9260
	// §6.2, §3.3.4).
	recvDuplicate
	// recvOutOfWindow: the TSN is too far beyond the Cumulative TSN Ack
	// point to be held; the caller drops the DATA, as RFC 9260 §6.2 lets a
	// receiver do with DATA it has no room for. The sender retransmits it.
	recvOutOfWindow
)

// String names the result.
func (r recvResult) String() string {
	switch r {
	case recvNew:
		return "new"
	case recvDuplicate:
		return "duplicate"
	case recvOutOfWindow:
		return "out-of-window"
	}
	return "RecvResult?"
}

// recvTracker is the receiving side's record of the peer's TSNs, from
// which it builds SACK chunks (RFC 9260 §6.2, §6.7, §3.3.4): the
// Cumulative TSN Ack point, the TSNs received beyond it (reported as Gap
// Ack Blocks), the duplicates received since the last SACK, and when the
// next SACK is due.
type recvTracker struct {
	// Memory is bounded: the TSNs beyond the Cumulative TSN Ack point live in
	// a fixed bitmap of Window bits, and a TSN further away than that is
	// dropped and counted (Dropped). Nothing allocates after newRecvTracker.
	//
	// Use per received packet: Observe each DATA chunk's TSN (and
	// RequestImmediate for a DATA chunk with the I bit), then EndPacket; a
	// SACK is due when SACKDue says so, at the latest at SACKDeadline (arm
	// timerDelayedAck with it). To build the SACK, take CumTSN,
	// AppendGapBlocks and AppendDuplicates, then call SACKSent.
	//
	// Not safe for concurrent use.

	window   uint32
	mask     uint32
	bits     []uint64 // bit (tsn & mask) set: tsn received, tsn > cum
	cum      uint32
	highest  uint32
	held     int // TSNs received beyond cum
	maxDups  int
	dups     []uint32
	dupsLost int
	dropped  uint64
	delay    time.Duration

	// The packet being processed.
	pktNew, pktDup, pktDrop, pktImmediate bool
	heldBefore                            int

	seenData  bool
	immediate bool
	unacked   int // packets with new DATA since the last SACK
	deadline  time.Time
	delayed   bool
}

// newRecvTracker returns a tracker for a peer whose INIT or INIT ACK
// carried initialTSN: the Cumulative TSN Ack point (the TCB's Last Rcvd
// TSN, RFC 9260 §14.2) starts at initialTSN-1.
func newRecvTracker(initialTSN uint32, cfg recvTrackerConfig) *recvTracker {
	if cfg.Window <= 0 {
		cfg.Window = defaultRecvWindow
	}
	cfg.Window = min(cfg.Window, maxRecvWindow)
	if cfg.MaxDuplicates <= 0 {
		cfg.MaxDuplicates = defaultMaxDuplicates
	}
	if cfg.SACKDelay <= 0 {
		cfg.SACKDelay = defaultSACKDelay
	}
	cfg.SACKDelay = min(cfg.SACKDelay, maxSACKDelay)
	ring := uint32(64)
	for ring < uint32(cfg.Window)+1 {
		ring <<= 1
	}
	return &recvTracker{
		window:  uint32(cfg.Window),
		mask:    ring - 1,
		bits:    make([]uint64, ring/64),
		cum:     initialTSN - 1,
		highest: initialTSN - 1,
		maxDups: cfg.MaxDuplicates,
		dups:    make([]uint32, 0, cfg.MaxDuplicates),
		delay:   cfg.SACKDelay,
	}
}

// CumTSN returns the Cumulative TSN Ack point: the last TSN received in
// sequence.
func (r *recvTracker) CumTSN() uint32 { return r.cum }

// Highest returns the highest TSN received (CumTSN when nothing is held
// beyond it). RFC 9260 §6.2 uses it when the receive window is 0: DATA
// above it is then dropped.
func (r *recvTracker) Highest() uint32 { return r.highest }

// HasGaps reports whether TSNs beyond the Cumulative TSN Ack point are
// held, i.e. whether the next SACK carries Gap Ack Blocks.
func (r *recvTracker) HasGaps() bool { return r.held > 0 }

// Held returns the number of TSNs held beyond the Cumulative TSN Ack point.
func (r *recvTracker) Held() int { return r.held }

// Window returns the number of TSNs beyond the Cumulative TSN Ack point
// that can be held.
func (r *recvTracker) Window() int { return int(r.window) }

// Dropped returns how many TSNs were dropped for lying beyond the window
// (or exactly half the serial space away, where their order is undefined).
func (r *recvTracker) Dropped() uint64 { return r.dropped }

// DuplicatesNotReported returns how many duplicates since the last SACK
// did not fit in its Duplicate TSN list.
func (r *recvTracker) DuplicatesNotReported() int { return r.dupsLost }

func (r *recvTracker) isSet(tsn uint32) bool {
	i := tsn & r.mask
	return r.bits[i>>6]&(1<<(i&63)) != 0
}

func (r *recvTracker) flip(tsn uint32) {
	i := tsn & r.mask
	r.bits[i>>6] ^= 1 << (i & 63)
}

// Received reports whether tsn has been received and is still held or
// acknowledged cumulatively.
func (r *recvTracker) Received(tsn uint32) bool {
	d := tsn - r.cum
	if d == 0 || int32(d) < 0 {
		return d != 1<<31
	}
	return d <= r.window && r.isSet(tsn)
}

// Observe records the TSN of one received DATA chunk.
func (r *recvTracker) Observe(tsn uint32) recvResult {
	r.markPacket()
	d := tsn - r.cum
	switch {
	case d == 1<<31 || (int32(d) > 0 && d > r.window):
		// Beyond the window, or half the serial space away (RFC 1982:
		// its order is undefined): not held.
		r.dropped++
		r.pktDrop = true
		return recvOutOfWindow
	case d == 0 || int32(d) < 0 || r.isSet(tsn):
		r.pktDup = true
		if len(r.dups) < r.maxDups {
			r.dups = append(r.dups, tsn)
		} else {
			r.dupsLost++
		}
		return recvDuplicate
	}
	r.pktNew = true
	r.flip(tsn)
	r.held++
	if seq.TSNGreater(tsn, r.highest) {
		r.highest = tsn
	}
	for r.isSet(r.cum + 1) {
		r.cum++
		r.flip(r.cum)
		r.held--
	}
	return recvNew
}

// markPacket notes the state at the first chunk of a packet.
func (r *recvTracker) markPacket() {
	if !r.pktNew && !r.pktDup && !r.pktDrop && !r.pktImmediate {
		r.heldBefore = r.held
	}
}

// DropNoRoom records a new DATA chunk of the current packet dropped
// unacknowledged for lack of room: RFC 9260 §6.2 has the receiver send a
// SACK at once with the current window, showing only what was accepted.
func (r *recvTracker) DropNoRoom() {
	r.markPacket()
	r.pktDrop = true
}

// RequestImmediate asks for the SACK of the current packet without delay:
// a DATA chunk with the I bit set (RFC 9260 §6.2) or a FORWARD TSN that
// needs an answer.
func (r *recvTracker) RequestImmediate() {
	r.markPacket()
	r.pktImmediate = true
}

// EndPacket applies the delayed-acknowledgement rules of RFC 9260 §6.2
// once all DATA chunks of a packet have been observed. The SACK is due at
// once when:
func (r *recvTracker) EndPacket(now time.Time) {
	//   - this is the first DATA of the association (§5.1);
	//   - the packet carried duplicates (a MUST without new DATA, a MAY with
	//     it; taken in both cases, so the sender learns early);
	//   - TSNs are held beyond the Cumulative TSN Ack point: a gap, reported
	//     in every packet's SACK until filled (§6.7);
	//   - the packet filled the last gap, so the sender learns at once (as a
	//     TCP receiver does, RFC 5681 §4.2);
	//   - a chunk was dropped for lying beyond the window, so the sender sees
	//     the window it overran;
	//   - a DATA chunk had the I bit set (RequestImmediate);
	//   - it is the second packet with new DATA since the last SACK (§6.2:
	//     at least every second packet).
	//
	// Otherwise a packet with new DATA starts the delayed-ack deadline,
	// SACKDelay after now, unless one is running already (§6.2: within
	// 200 ms of the arrival of any unacknowledged DATA). A packet with no
	// DATA changes nothing.

	data := r.pktNew || r.pktDup || r.pktDrop
	switch {
	case !data && !r.pktImmediate:
	case r.pktImmediate, r.pktDup, r.pktDrop, r.held > 0,
		r.heldBefore > 0 && r.held == 0,
		data && !r.seenData:
		r.immediate = true
	case r.pktNew:
		r.unacked++
		if r.unacked >= 2 {
			r.immediate = true
		} else if !r.delayed {
			r.deadline, r.delayed = now.Add(r.delay), true
		}
	}
	if data {
		r.seenData = true
	}
	r.pktNew, r.pktDup, r.pktDrop, r.pktImmediate = false, false, false, false
}

// SACKDue reports whether a SACK should be sent now: one of the immediate
// rules of EndPacket applied, or the delayed-ack deadline has passed.
func (r *recvTracker) SACKDue(now time.Time) bool {
	return r.immediate || (r.delayed && !now.Before(r.deadline))
}

// SACKDeadline returns the delayed-ack deadline, if DATA is waiting for
// its SACK; arm timerDelayedAck with it.
func (r *recvTracker) SACKDeadline() (time.Time, bool) { return r.deadline, r.delayed }

// AppendGapBlocks appends the Gap Ack Blocks of the next SACK to dst,
// lowest first and at most max of them (fewer than all only when the SACK
// would not fit in a packet); their Start and End are offsets from CumTSN
// (RFC 9260 §3.3.4). It allocates only if dst lacks the room.
func (r *recvTracker) AppendGapBlocks(dst []wire.GapAckBlock, max int) []wire.GapAckBlock {
	if r.held == 0 {
		return dst
	}
	end := r.highest - r.cum
	for o, n := uint32(1), 0; o <= end && n < max; n++ {
		s := r.scan(o, end, false)
		if s > end {
			break
		}
		e := r.scan(s, end, true) - 1
		dst = append(dst, wire.GapAckBlock{Start: uint16(s), End: uint16(e)})
		o = e + 1
	}
	return dst
}

// scan returns the first offset o in [from, limit] from the Cumulative TSN
// Ack point whose TSN is held (clear=false) or not held (clear=true), or
// limit+1. It reads the bitmap a word at a time.
func (r *recvTracker) scan(from, limit uint32, clear bool) uint32 {
	for o := from; o <= limit; {
		i := (r.cum + o) & r.mask
		w := r.bits[i>>6]
		if clear {
			w = ^w
		}
		w >>= i & 63
		if w != 0 {
			return min(o+uint32(bits.TrailingZeros64(w)), limit+1)
		}
		o += 64 - i&63
	}
	return limit + 1
}

// scanDown returns the highest offset o in [1, from] from the Cumulative
// TSN Ack point whose TSN is held, or 0; a word of the bitmap at a time.
func (r *recvTracker) scanDown(from uint32) uint32 {
	for o := from; o > 0; {
		i := (r.cum + o) & r.mask
		w := r.bits[i>>6] << (63 - i&63) // bit i at the top
		if w != 0 {
			z := uint32(bits.LeadingZeros64(w))
			if z >= o {
				return 0
			}
			return o - z
		}
		if o <= i&63+1 {
			return 0
		}
		o -= i&63 + 1
	}
	return 0
}

// AppendDuplicates appends the Duplicate TSNs received since the last SACK
// (RFC 9260 §3.3.4: each time a duplicate arrives it is listed, up to the
// configured cap). It allocates only if dst lacks the room.
func (r *recvTracker) AppendDuplicates(dst []uint32) []uint32 {
	return append(dst, r.dups...)
}

// SACKSent records that a SACK with the current state went out: the
// duplicate list starts over (each duplicate is reported once) and the
// delayed-ack state is cleared.
func (r *recvTracker) SACKSent() {
	r.dups = r.dups[:0]
	r.dupsLost = 0
	r.immediate = false
	r.unacked = 0
	r.delayed = false
	r.deadline = time.Time{}
}

// Renege forgets a TSN held beyond the Cumulative TSN Ack point, for a
// receiver that drops DATA it has already reported in a Gap Ack Block:
// RFC 9260 §6.2 with a zero receive window drops the highest TSN held for
// reordering to accept a lower one. The sender learns it from the next
// SACK (§6.2.1 D iii). It reports whether tsn was held; a TSN at or below
// the Cumulative TSN Ack point cannot be reneged.
func (r *recvTracker) Renege(tsn uint32) bool {
	d := tsn - r.cum
	if int32(d) <= 0 || d > r.window || !r.isSet(tsn) {
		return false
	}
	r.flip(tsn)
	r.held--
	if tsn == r.highest {
		r.highest = r.cum
		if r.held > 0 {
			r.highest = r.cum + r.scanDown(d-1)
		}
	}
	return true
}
