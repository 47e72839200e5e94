package sctp

import (
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// fastRetransmitThreshold is the number of miss indications after which
// a DATA chunk is fast retransmitted (RFC 9260 §7.2.4: three).
const fastRetransmitThreshold = 3

// chunkState is the sender's view of one outstanding DATA chunk.
type chunkState uint8

const (
	// chunkInFlight: sent and not acknowledged; counted in the flight.
	chunkInFlight chunkState = iota + 1
	// chunkGapAcked: acknowledged by a Gap Ack Block but not yet by the
	// Cumulative TSN Ack; the peer may still renege on it (RFC 9260 §7.1:
	// Gap Ack Blocks are advisory). Not in the flight.
	chunkGapAcked
	// chunkReneged: acknowledged by a Gap Ack Block once, then reported
	// missing again (RFC 9260 §6.2.1 D iii). Not in the flight, not yet
	// marked for retransmission.
	chunkReneged
	// chunkMarked: marked for retransmission by a T3-rtx expiry or a Fast
	// Retransmit; waiting to be sent again. Not in the flight.
	chunkMarked
)

// String names the state.
func (s chunkState) String() string {
	switch s {
	case chunkInFlight:
		return "in-flight"
	case chunkGapAcked:
		return "gap-acked"
	case chunkReneged:
		return "reneged"
	case chunkMarked:
		return "marked"
	}
	return "ChunkState?"
}

type outChunk struct {
	size    int32
	state   chunkState
	misses  uint8
	fastRtx bool  // fast retransmitted once: no second Fast Retransmit (§7.2.4 step 5)
	rtx     bool  // retransmitted at least once
	sent    int64 // first sent, in nanoseconds after the queue's base
	// rtxNext is, for a chunk fast retransmitted, the next TSN to be
	// assigned when it was last sent again: a chunk acknowledged at or
	// above it was first sent after that retransmission.
	rtxNext uint32
	// path is the destination it was last sent to (multihomed, RFC 9260
	// §7.2); it fits in the padding after rtxNext.
	path uint8
}

// sackStatus says what OnSACK did with a SACK.
type sackStatus uint8

const (
	// sackProcessed: the SACK was applied.
	sackProcessed sackStatus = iota
	// sackStale: its Cumulative TSN Ack is behind the Cumulative TSN Ack
	// Point, an out-of-order SACK; dropped (RFC 9260 §6.2.1 D i).
	sackStale
	// sackInvalid: it acknowledges TSNs never sent, or its Gap Ack Blocks
	// are not ascending, non-overlapping ranges above the Cumulative TSN
	// Ack; dropped without any effect. The association may treat it as a
	// protocol violation.
	sackInvalid
)

// String names the status.
func (s sackStatus) String() string {
	switch s {
	case sackProcessed:
		return "processed"
	case sackStale:
		return "stale"
	case sackInvalid:
		return "invalid"
	}
	return "SACKStatus?"
}

// sackResult is what one SACK did to the outstandingQueue and what the
// caller does next.
type sackResult struct {
	// Status: only a sackProcessed result carries the fields below.
	Status sackStatus
	// Ack goes to Congestion.OnAck.
	Ack ackInfo
	// RTT is a round-trip measurement taken from a chunk this SACK
	// acknowledged, valid if RTTValid: at most one per round trip (RFC
	// 9260 §6.3.1 C4) and never from a retransmitted chunk nor from one
	// sent before a chunk at or below it was retransmitted (C5, Karn).
	// It goes to rtoEstimator.Observe of RTTPath, the path the timed
	// chunk went to (§6.3.1: RTO per destination).
	RTT      time.Duration
	RTTValid bool
	RTTPath  uint8
	// FastRetransmit reports that chunks reached fastRetransmitThreshold
	// miss indications and were marked for retransmission (RFC 9260
	// §7.2.4 step 1). The caller calls Congestion.OnFastRetransmit with
	// HighestOutstanding, then sends the earliest marked chunks that fit
	// one packet regardless of cwnd.
	FastRetransmit bool
	// MarkedBytes is the size of the chunks newly marked for
	// retransmission that were in flight: Congestion.OnRetransmitMarked.
	MarkedBytes int
	// Reneged reports that a TSN acknowledged by an earlier Gap Ack Block
	// is missing from this SACK (RFC 9260 §6.2.1 D iii): the caller starts
	// T3-rtx if it is not running.
	Reneged bool
	// LostRetransmits counts the chunks whose fast retransmission this
	// SACK showed lost (see countLostRetransmit); they are among those
	// FastRetransmit reports marked.
	LostRetransmits int
	// HighestOutstanding is the highest TSN sent (valid if anything is
	// outstanding), the Fast Recovery exit point of §7.2.4 step 6.
	HighestOutstanding uint32
}

// outstandingQueue is the sender's record of the DATA chunks it has sent
// and the peer has not yet acknowledged cumulatively, in a fixed ring of
// small descriptors indexed by TSN. It assigns TSNs, applies SACKs (RFC
// 9260 §6.2.1 D: Cumulative TSN Ack, Gap Ack Blocks, reneging), counts
// miss indications for Fast Retransmit (§7.2.4), marks chunks for
// retransmission on a T3-rtx expiry (§6.3.3 E3), and takes RTT samples
// under Karn's rule (§6.3.1 C4, C5).
type outstandingQueue struct {
	// It holds no payload: the caller keeps each chunk's data in a parallel
	// array of Cap() entries at Index(tsn). It keeps the byte counts of a
	// congestion right by reporting every change of the flight (ackInfo,
	// MarkedBytes, and the sizes given to Add or returned by OnRetransmit and
	// MarkAllForRetransmit), so that Congestion.Flight always equals the size
	// of the chunks in state chunkInFlight.
	//
	// Not safe for concurrent use. Nothing allocates after
	// newOutstandingQueue.

	ring   []outChunk
	mask   uint32
	cum    uint32 // Cumulative TSN Ack Point
	next   uint32 // next TSN to assign
	marked int    // chunks in chunkMarked

	timed    bool // an RTT probe is outstanding
	timedTSN uint32
	timedAt  time.Time

	base time.Time // the clock of outChunk.sent: the first Add's time
	// path is the destination chunks sent now go to; pathAcked, set only
	// on a multihomed association, sums each destination's newly
	// acknowledged octets during OnSACK, and pathLost has bit i set when
	// a chunk last sent to destination i was marked for Fast Retransmit
	// (RFC 9260 §7.2: per-destination windows). The caller clears both
	// before each OnSACK. pathFlight, set with pathAcked, is the octets
	// in flight to each destination (§6.1 rule B, per destination);
	// pathLive has bit i set when OnSACK acknowledged a chunk in flight
	// to destination i (one not marked lost since it was sent: proof
	// that the path delivers, §8.2), also cleared by the caller.
	// pathFR has bit i set when destination i is in Fast Recovery: its
	// chunks get miss indications as OnSACK's inFastRecovery gives them
	// (§7.2.4 per destination, set by the caller before each OnSACK).
	path       uint8
	pathLost   uint16
	pathLive   uint16
	pathFR     uint16
	pathAcked  *[pathmgr.DefaultMaxPaths]int
	pathFlight *[pathmgr.DefaultMaxPaths]int

	// gapHigh is the highest TSN a Gap Ack Block has covered while above
	// the cum ack (haveGap): no chunk above it is in chunkGapAcked, so
	// the renege check of OnSACK stops there.
	gapHigh uint32
	haveGap bool
	// fullScan makes OnSACK look at every outstanding chunk (a test's
	// reference for the bounded scan).
	fullScan bool
}

// newOutstandingQueue returns a queue whose first DATA chunk gets
// initialTSN (the Initial TSN of our INIT or INIT ACK), holding up to
// capacity chunks (rounded up to a power of two, at least 1, at most
// 2^30).
func newOutstandingQueue(initialTSN uint32, capacity int) *outstandingQueue {
	capacity = min(max(capacity, 1), 1<<30)
	n := 1
	for n < capacity {
		n <<= 1
	}
	return &outstandingQueue{
		ring: make([]outChunk, n),
		mask: uint32(n - 1),
		cum:  initialTSN - 1,
		next: initialTSN,
	}
}

// Cap returns how many chunks can be outstanding.
func (q *outstandingQueue) Cap() int { return len(q.ring) }

// Len returns how many chunks are outstanding: sent and not cumulatively
// acknowledged, whatever their state.
func (q *outstandingQueue) Len() int { return int(q.next - q.cum - 1) }

// Full reports whether Add would fail.
func (q *outstandingQueue) Full() bool { return q.Len() >= len(q.ring) }

// CumTSN returns the Cumulative TSN Ack Point: every TSN up to it is
// acknowledged.
func (q *outstandingQueue) CumTSN() uint32 { return q.cum }

// NextTSN returns the TSN the next Add assigns.
func (q *outstandingQueue) NextTSN() uint32 { return q.next }

// HighestOutstanding returns the highest TSN sent, if any is outstanding.
func (q *outstandingQueue) HighestOutstanding() (uint32, bool) { return q.next - 1, q.Len() > 0 }

// Marked returns how many chunks wait for retransmission.
func (q *outstandingQueue) Marked() int { return q.marked }

// outstanding reports whether tsn is outstanding.
func (q *outstandingQueue) outstanding(tsn uint32) bool {
	return tsn-q.cum-1 < q.next-q.cum-1
}

// Index returns the ring slot of an outstanding TSN, where the caller
// keeps its payload; slots are in [0, Cap()).
func (q *outstandingQueue) Index(tsn uint32) (int, bool) {
	if !q.outstanding(tsn) {
		return 0, false
	}
	return int(tsn & q.mask), true
}

// Chunk returns the size, state and miss indications of an outstanding
// TSN.
func (q *outstandingQueue) Chunk(tsn uint32) (size int, state chunkState, misses int, ok bool) {
	if !q.outstanding(tsn) {
		return 0, 0, 0, false
	}
	c := &q.ring[tsn&q.mask]
	return int(c.size), c.state, int(c.misses), true
}

// Add records a new DATA chunk of size bytes sent at now and returns its
// TSN; ok is false (and nothing changes) when the queue is full. The
// caller then calls Congestion.OnSend(size). If no RTT measurement is
// under way, this chunk becomes the one timed (RFC 9260 §6.3.1 C4: one
// measurement per round trip).
func (q *outstandingQueue) Add(size int, now time.Time) (tsn uint32, ok bool) {
	if q.Full() {
		return 0, false
	}
	tsn = q.next
	q.next++
	if q.base.IsZero() {
		q.base = now
	}
	c := &q.ring[tsn&q.mask]
	*c = outChunk{size: int32(min(max(size, 0), 1<<30)), state: chunkInFlight, sent: int64(now.Sub(q.base)), path: q.path}
	q.flightTo(c, int(c.size))
	if !q.timed {
		q.timed, q.timedTSN, q.timedAt = true, tsn, now
	}
	return tsn, true
}

// untimeIfAtOrAbove drops the RTT probe if tsn is at or below it: a chunk
// at or below the probe is being retransmitted (RFC 9260 §6.3.1 C5).
func (q *outstandingQueue) untimeIfAtOrAbove(tsn uint32) {
	if q.timed && seq.TSNLessEq(tsn, q.timedTSN) {
		q.timed = false
	}
}

// validSACK checks the SACK's Cumulative TSN Ack and Gap Ack Blocks
// against what was sent.
func (q *outstandingQueue) validSACK(cum uint32, gaps []wire.GapAckBlock) sackStatus {
	if seq.TSNLess(cum, q.cum) {
		return sackStale
	}
	sent := q.next - 1 - cum // TSNs sent above the SACK's cum ack
	if int32(sent) < 0 {
		return sackInvalid
	}
	prevEnd := uint32(0)
	for _, g := range gaps {
		s, e := uint32(g.Start), uint32(g.End)
		if s == 0 || s > e || s <= prevEnd || e > sent {
			return sackInvalid
		}
		prevEnd = e
	}
	return sackProcessed
}

// OnSACK applies a SACK chunk: its Cumulative TSN Ack cum, its Gap Ack
// Blocks gaps, its Duplicate TSNs dups and its a_rwnd, received at now.
// inFastRecovery is the Congestion's state before this SACK (it changes
// how miss indications are counted). In order (RFC 9260 §6.2.1 D):
func (q *outstandingQueue) OnSACK(cum uint32, gaps []wire.GapAckBlock, dups []uint32, aRwnd uint32, inFastRecovery bool, now time.Time) sackResult {
	//   - a SACK behind the Cumulative TSN Ack Point is dropped (D i), one
	//     that acknowledges TSNs never sent or has malformed Gap Ack Blocks is
	//     invalid (sackInvalid);
	//   - chunks up to cum are acknowledged and leave the queue; chunks in the
	//     Gap Ack Blocks become chunkGapAcked;
	//   - a chunk gap-acked before and missing now was reneged on (D iii): it
	//     gets one miss indication;
	//   - every other missing chunk below the Highest TSN Newly Acknowledged
	//     (HTNA) of this SACK gets a miss indication; in Fast Recovery, a SACK
	//     that advances the Cumulative TSN Ack Point gives one to every TSN it
	//     reports missing (§7.2.4). A chunk fast retransmitted once gets none
	//     (step 5), nor does one already marked for retransmission; instead
	//     a chunk fast retransmitted gets one from each SACK that newly
	//     acknowledges a chunk first sent after the retransmission
	//     (countLostRetransmit: the retransmission was lost);
	//   - a chunk reaching fastRetransmitThreshold is marked for
	//     retransmission (step 1).
	//
	// It never panics, whatever the SACK holds.

	st := q.validSACK(cum, gaps)
	if st != sackProcessed {
		return sackResult{Status: st}
	}
	res := sackResult{Ack: ackInfo{CumTSNAck: cum, ARwnd: aRwnd, CumAdvanced: seq.TSNGreater(cum, q.cum)}}
	ack := &res.Ack

	// Duplicate TSNs still held (gap-acked chunks) have a known size
	// (§7.2.2); those at or below the cum ack left the queue already.
	for _, d := range dups {
		if q.outstanding(d) {
			ack.DuplicateBytes += int(q.ring[d&q.mask].size)
		}
	}

	var htna uint32
	haveHTNA := false
	newlyAcked := func(tsn uint32, c *outChunk) {
		switch c.state {
		case chunkGapAcked, chunkReneged:
			// Acknowledged before; a reneged chunk that was not sent again
			// is not counted twice.
			return
		case chunkInFlight:
			ack.FlightAcked += int(c.size)
			if q.pathFlight != nil {
				q.flightTo(c, -int(c.size))
				q.pathLive |= 1 << (c.path % pathmgr.DefaultMaxPaths)
			}
		case chunkMarked:
			q.marked--
		}
		ack.AckedBytes += int(c.size)
		if q.pathAcked != nil {
			q.pathAcked[c.path%pathmgr.DefaultMaxPaths] += int(c.size)
		}
		htna, haveHTNA = tsn, true
		if !c.rtx {
			// Ascending TSNs: the last one is the newest chunk sent once.
			ack.LatestRTT = max(now.Sub(q.base)-time.Duration(c.sent), 1)
		}
		if q.timed && tsn == q.timedTSN {
			q.timed = false
			if !c.rtx {
				res.RTT, res.RTTValid, res.RTTPath = now.Sub(q.timedAt), true, c.path
			}
		}
	}

	// Cumulative TSN Ack: acknowledged chunks leave the queue.
	for tsn := q.cum + 1; seq.TSNLessEq(tsn, cum); tsn++ {
		c := &q.ring[tsn&q.mask]
		newlyAcked(tsn, c)
		*c = outChunk{}
	}
	q.cum = cum

	// Gap Ack Blocks (validated: ascending, within what was sent).
	for _, g := range gaps {
		for off := uint32(g.Start); off <= uint32(g.End); off++ {
			tsn := cum + off
			c := &q.ring[tsn&q.mask]
			newlyAcked(tsn, c)
			c.state, c.misses = chunkGapAcked, 0
		}
	}

	// Missing chunks. Below the HTNA they get a miss indication; in Fast
	// Recovery a SACK that advances the cum ack gives one to every TSN it
	// reports missing, i.e. below its highest Gap Ack Block (§7.2.4). A
	// chunk gap-acked before and missing now was reneged on: one miss
	// indication (§6.2.1 D iii).
	limit, counting := htna, haveHTNA
	frLimit, frCounting := limit, false // for the chunks of pathFR
	if ack.CumAdvanced && len(gaps) > 0 {
		hi := cum + uint32(gaps[len(gaps)-1].End)
		if inFastRecovery {
			limit, counting = hi, true
		}
		frLimit, frCounting = hi, q.pathFR != 0
	}
	// Only TSNs below the end of the scan can need anything: a miss
	// indication (below limit), a lost fast retransmission (below the
	// HTNA: a chunk is older than what was sent after its
	// retransmission) or a renege (at most gapHigh). Scanning everything
	// outstanding on every SACK made the sender spend a fifth of its time
	// here with thousands of 1500-octet packets in flight.
	end := cum + 1 // exclusive
	if counting && seq.TSNGreater(limit, end) {
		end = limit
	}
	if frCounting && seq.TSNGreater(frLimit, end) {
		end = frLimit
	}
	if haveHTNA && seq.TSNGreater(htna+1, end) {
		end = htna + 1
	}
	if q.haveGap && seq.TSNGreater(q.gapHigh+1, end) {
		end = q.gapHigh + 1
	}
	if seq.TSNGreater(end, q.next) || q.fullScan {
		end = q.next
	}
	gi := 0
	for tsn := cum + 1; seq.TSNLess(tsn, end); tsn++ {
		off := tsn - cum
		for gi < len(gaps) && uint32(gaps[gi].End) < off {
			gi++
		}
		if gi < len(gaps) && uint32(gaps[gi].Start) <= off {
			continue // in a Gap Ack Block
		}
		c := &q.ring[tsn&q.mask]
		switch {
		case c.state == chunkGapAcked:
			c.state = chunkReneged
			res.Reneged = true
			q.countMiss(tsn, c, &res)
		case c.fastRtx:
			if haveHTNA && c.state == chunkInFlight && seq.TSNGreaterEq(htna, c.rtxNext) {
				q.countLostRetransmit(tsn, c, &res)
			}
		case counting && seq.TSNLess(tsn, limit):
			q.countMiss(tsn, c, &res)
		case frCounting && q.pathFR&(1<<(c.path%pathmgr.DefaultMaxPaths)) != 0 && seq.TSNLess(tsn, frLimit):
			q.countMiss(tsn, c, &res)
		}
	}

	if len(gaps) > 0 {
		if h := cum + uint32(gaps[len(gaps)-1].End); !q.haveGap || seq.TSNGreater(h, q.gapHigh) {
			q.gapHigh, q.haveGap = h, true
		}
	}
	if q.haveGap && seq.TSNLessEq(q.gapHigh, cum) {
		q.haveGap = false
	}

	res.HighestOutstanding = q.next - 1
	ack.HighestSent = q.next - 1
	ack.AllAcked = q.Len() == 0
	return res
}

// countMiss adds one miss indication to a missing chunk and marks it for
// retransmission at the threshold.
func (q *outstandingQueue) countMiss(tsn uint32, c *outChunk, res *sackResult) {
	if c.fastRtx || (c.state != chunkInFlight && c.state != chunkReneged) {
		return
	}
	c.misses++
	if c.misses < fastRetransmitThreshold {
		return
	}
	if c.state == chunkInFlight {
		res.MarkedBytes += int(c.size)
		q.flightTo(c, -int(c.size))
	}
	if q.pathAcked != nil {
		q.pathLost |= 1 << (c.path % pathmgr.DefaultMaxPaths)
	}
	c.state, c.misses, c.fastRtx = chunkMarked, 0, true
	q.marked++
	q.untimeIfAtOrAbove(tsn)
	res.FastRetransmit = true
}

// countLostRetransmit adds one miss indication to a chunk that was fast
// retransmitted and is still missing although this SACK newly
// acknowledged a chunk first sent after that retransmission; at
// fastRetransmitThreshold such indications the retransmission is taken
// as lost and the chunk is marked to be sent again.
//
// RFC 9260 §7.2.4 fast retransmits a chunk only once, so otherwise only
// T3-rtx, restarting from one packet, finds a lost retransmission. This is
// FreeBSD SCTP's detection and TCP RACK's idea (RFC 8985 §2). The window
// is not reduced again: the first loss's Fast Recovery still holds.
func (q *outstandingQueue) countLostRetransmit(tsn uint32, c *outChunk, res *sackResult) {
	c.misses++
	if c.misses < fastRetransmitThreshold {
		return
	}
	res.MarkedBytes += int(c.size)
	q.flightTo(c, -int(c.size))
	if q.pathAcked != nil {
		q.pathLost |= 1 << (c.path % pathmgr.DefaultMaxPaths)
	}
	c.state, c.misses = chunkMarked, 0
	q.marked++
	q.untimeIfAtOrAbove(tsn)
	res.FastRetransmit = true
	res.LostRetransmits++
}

// MarkAllForRetransmit applies a T3-rtx expiry (RFC 9260 §6.3.3 E3): every
// outstanding chunk not acknowledged by a Gap Ack Block is marked for
// retransmission. It returns the size of those that were in flight, for
// congestion.OnRetransmitMarked. The RTT measurement under way is dropped
// (Karn).
func (q *outstandingQueue) MarkAllForRetransmit() int {
	n := 0
	for tsn := q.cum + 1; tsn != q.next; tsn++ {
		f, _ := q.markLost(&q.ring[tsn&q.mask])
		n += f
	}
	if q.marked > 0 {
		q.timed = false
	}
	return n
}

// MarkPathForRetransmit applies a T3-rtx expiry of one destination (RFC
// 9260 §6.3.3 E3 for that address, §6.3.2: one timer per destination):
// the chunks last sent there and not acknowledged by a Gap Ack Block are
// marked for retransmission. It returns the size of those that were in
// flight, for congestion.OnRetransmitMarked, and how many it marked. An
// RTT measurement at or above a marked chunk is dropped (Karn).
func (q *outstandingQueue) MarkPathForRetransmit(path uint8) (inFlight, n int) {
	for tsn := q.cum + 1; tsn != q.next; tsn++ {
		c := &q.ring[tsn&q.mask]
		if c.path != path {
			continue
		}
		if f, ok := q.markLost(c); ok {
			inFlight += f
			n++
			q.untimeIfAtOrAbove(tsn)
		}
	}
	return inFlight, n
}

// markLost marks c, in flight or reneged, for retransmission after a
// T3-rtx expiry, and returns the octets it had in flight; a chunk in
// another state is left (ok false).
func (q *outstandingQueue) markLost(c *outChunk) (inFlight int, ok bool) {
	switch c.state {
	case chunkInFlight:
		inFlight = int(c.size)
		q.flightTo(c, -inFlight)
	case chunkReneged:
	default:
		return 0, false
	}
	c.state, c.misses = chunkMarked, 0
	q.marked++
	return inFlight, true
}

// MarkLargerForRetransmit marks every chunk in flight larger than limit
// octets for retransmission: chunks sent in packets the path no longer
// carries, once the PLPMTU fell (RFC 8899 §4.3 black hole, §4.6.2 Packet
// Too Big). Nothing else changes: the loss is the path's size, not
// congestion. It returns their size, for Congestion.OnRetransmitMarked.
func (q *outstandingQueue) MarkLargerForRetransmit(limit int) int {
	n := 0
	for tsn := q.cum + 1; tsn != q.next; tsn++ {
		c := &q.ring[tsn&q.mask]
		if c.state != chunkInFlight || int(c.size) <= limit {
			continue
		}
		n += int(c.size)
		q.flightTo(c, -int(c.size))
		c.state, c.misses = chunkMarked, 0
		q.marked++
		q.timed = false
	}
	return n
}

// FirstMarked returns the lowest TSN marked for retransmission and its
// size; RFC 9260 §6.1 rule C sends these before any new DATA.
func (q *outstandingQueue) FirstMarked() (tsn uint32, size int, ok bool) {
	return q.NextMarked(q.cum)
}

// NextMarked returns the lowest TSN above after that is marked for
// retransmission, and its size.
func (q *outstandingQueue) NextMarked(after uint32) (tsn uint32, size int, ok bool) {
	if q.marked == 0 {
		return 0, 0, false
	}
	start := after + 1
	if !q.outstanding(start) {
		if !seq.TSNLess(after, q.cum) {
			return 0, 0, false
		}
		start = q.cum + 1
	}
	for tsn := start; tsn != q.next; tsn++ {
		if c := &q.ring[tsn&q.mask]; c.state == chunkMarked {
			return tsn, int(c.size), true
		}
	}
	return 0, 0, false
}

// OnRetransmit records that the marked chunk tsn was sent again at now and
// returns its size, for Congestion.OnSend; ok is false if tsn is not
// marked. A retransmitted chunk never yields an RTT measurement (RFC 9260
// §6.3.1 C5).
func (q *outstandingQueue) OnRetransmit(tsn uint32, now time.Time) (size int, ok bool) {
	if !q.outstanding(tsn) {
		return 0, false
	}
	c := &q.ring[tsn&q.mask]
	if c.state != chunkMarked {
		return 0, false
	}
	c.state, c.rtx, c.misses, c.path = chunkInFlight, true, 0, q.path
	q.flightTo(c, int(c.size))
	if c.fastRtx {
		c.rtxNext = q.next
	}
	q.marked--
	q.untimeIfAtOrAbove(tsn)
	return int(c.size), true
}

// flightTo adds n octets (negative: takes them) to the flight of the
// destination chunk c was last sent to, on a multihomed association.
func (q *outstandingQueue) flightTo(c *outChunk, n int) {
	if q.pathFlight != nil {
		q.pathFlight[c.path%pathmgr.DefaultMaxPaths] += n
	}
}

// slot returns the ring index of tsn, for the caller's parallel array.
func (q *outstandingQueue) slot(tsn uint32) int { return int(tsn & q.mask) }
