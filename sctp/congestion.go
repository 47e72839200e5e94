package sctp

import (
	"math"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
)

// defaultMTU is the path MTU a [congestionConfig] assumes when it is given
// none.
const defaultMTU = 1500

// initialCwnd returns the congestion window of RFC 9260 §7.2.1 for a path
// of the given MTU: min(4*MTU, max(2*MTU, 4404)), used before any DATA is
// sent and after a sufficiently long idle period.
func initialCwnd(mtu int) int {
	return min(4*mtu, max(2*mtu, 4404))
}

// congestionConfig sets up a [Congestion]. Byte counts in this file are
// whatever unit the caller counts DATA chunks in; RFC 9260 §7.2.2 counts
// the whole chunk (header and padding included) and the same count is used
// against the peer's receive window, which errs on the safe side.
type congestionConfig struct {
	// MTU is the path MTU in bytes; defaultMTU if zero or negative.
	MTU int
	// PMDCS is the Path Maximum Data Chunk Size (RFC 9260 §1.3): the
	// largest DATA chunk that fits in one packet on the path. RFC 9260
	// grows and restarts cwnd in units of it (§6.1 rule B, §6.3.3 E1,
	// §7.2.1, §7.2.2). Zero or negative means MTU.
	PMDCS int
	// PeerARwnd is the Advertised Receiver Window Credit of the peer's
	// INIT or INIT ACK, the initial rwnd (RFC 9260 §6.2.1 rule A).
	PeerARwnd uint32
	// SSThresh is the initial slow-start threshold. RFC 9260 §7.2.1 says
	// it MAY be arbitrarily high, e.g. the largest possible advertised
	// window. Zero means PeerARwnd, or math.MaxInt32 if that is zero too.
	SSThresh int
	// Cubic selects CUBIC (RFC 9438) for congestion avoidance and for
	// the window reduction on loss; slow start, Fast Recovery and the
	// T3-rtx rules stay those of RFC 9260 §7.2. OnAck then needs
	// ackInfo.Now and ackInfo.SRTT.
	Cubic bool
	// HyStart runs the initial slow start with HyStart++ (RFC 9406): it
	// leaves slow start when the round trip grows (a queue builds)
	// rather than at the first loss. OnAck then needs ackInfo.LatestRTT
	// and ackInfo.HighestSent.
	HyStart bool
}

// ackInfo is what one received SACK chunk did to the outstanding DATA,
// as the sender's outstanding queue found it ([outstandingQueue.OnSACK]
// fills it in). It is the input of [Congestion.OnAck].
type ackInfo struct {
	// CumTSNAck is the SACK's Cumulative TSN Ack.
	CumTSNAck uint32
	// CumAdvanced reports that the SACK advanced the Cumulative TSN Ack
	// Point.
	CumAdvanced bool
	// AckedBytes is the size of the DATA chunks newly acknowledged by this
	// SACK, through the Cumulative TSN Ack or Gap Ack Blocks (RFC 9260
	// §7.2.1 item 1, §7.2.2).
	AckedBytes int
	// FlightAcked is the part of AckedBytes that was counted in flight:
	// chunks that were neither marked for retransmission nor acknowledged
	// before (RFC 9260 §6.2.1 D ii).
	FlightAcked int
	// DuplicateBytes is the size of the DATA chunks this SACK reports in
	// its Duplicate TSNs, where the sender still knows their size; RFC
	// 9260 §7.2.2 counts them into partial_bytes_acked.
	DuplicateBytes int
	// ARwnd is the SACK's Advertised Receiver Window Credit.
	ARwnd uint32
	// AllAcked reports that every DATA chunk sent is now cumulatively
	// acknowledged (RFC 9260 §7.2.2: partial_bytes_acked returns to 0).
	AllAcked bool
	// Now and SRTT are the SACK's arrival time and the path's smoothed
	// round trip: CUBIC's window is a function of the time since its
	// epoch began (RFC 9438 §4.2). Unused without congestionConfig.Cubic.
	Now  time.Time
	SRTT time.Duration
	// LatestRTT is the round trip of the newest chunk this SACK newly
	// acknowledges among those sent only once (0: none): a sample per
	// SACK for HyStart++ (RFC 9406 §4.2), apart from the one-per-round-
	// trip measurements of the RTO (RFC 9260 §6.3.1 C4).
	LatestRTT time.Duration
	// HighestSent is the highest TSN sent so far: the end of HyStart++'s
	// current round (RFC 9406 §4.2, windowEnd).
	HighestSent uint32
	// WindowFlight is, with congestion.pathFlight set, the flight to the
	// window's destination before the SACK: what tells a used window.
	WindowFlight int
}

// congestion holds the congestion-control state of one destination
// (RFC 9260 §7.2: cwnd, ssthresh, partial_bytes_acked) together with the
// flight size and the peer's receive window (§6.1, §6.2.1). It decides
// whether the next DATA chunk may be sent and applies the window rules
// when chunks are sent, acknowledged, marked for retransmission, or lost.
type congestion struct {
	// It is built for a sender that keeps an outstanding queue: the queue
	// knows which chunks are in flight and tells Congestion about every
	// change through OnSend, OnRetransmitMarked and OnAck, so that Flight is
	// always the size of the chunks in flight. The zero value is not usable;
	// build one with newCongestion. No method allocates.

	mtu       int
	pmdcs     int
	cwnd      int
	ssthresh  int
	pba       int // partial_bytes_acked
	flight    int
	peerARwnd uint32
	inFR      bool
	// heldBack: the last transmission kept new DATA back for a longer run
	// (Association.deferRun) while the window was nearly full; the next
	// SACK counts the window as used, as Linux counts TSO deferral as
	// cwnd-limited.
	heldBack bool
	frExit   uint32
	cubic    *cubicState // nil: RFC 9260 §7.2.2 congestion avoidance
	hs       hyStart
	// pathFlight, set on a multihomed association, is the flight to the
	// window's destination, which §6.1 rule B compares with its cwnd
	// (§7.2); flight stays the association's, for the peer's window.
	pathFlight *int
}

// newCongestion returns the state of a new association: cwnd is
// initialCwnd(MTU), ssthresh as configured, rwnd the peer's a_rwnd
// (RFC 9260 §7.2.1, §6.2.1 A).
func newCongestion(cfg congestionConfig) congestion {
	if cfg.MTU <= 0 {
		cfg.MTU = defaultMTU
	}
	if cfg.PMDCS <= 0 || cfg.PMDCS > cfg.MTU {
		cfg.PMDCS = cfg.MTU
	}
	if cfg.SSThresh <= 0 {
		cfg.SSThresh = int(min(uint64(cfg.PeerARwnd), math.MaxInt32))
		if cfg.SSThresh == 0 {
			cfg.SSThresh = math.MaxInt32
		}
	}
	c := congestion{
		mtu:       cfg.MTU,
		pmdcs:     cfg.PMDCS,
		cwnd:      initialCwnd(cfg.MTU),
		ssthresh:  cfg.SSThresh,
		peerARwnd: cfg.PeerARwnd,
	}
	if cfg.Cubic {
		c.cubic = &cubicState{}
	}
	c.hs.on = cfg.HyStart
	return c
}

// Cubic reports whether the window follows CUBIC (RFC 9438).
func (c *congestion) Cubic() bool { return c.cubic != nil }

// Cwnd returns the congestion window in bytes.
func (c *congestion) Cwnd() int { return c.cwnd }

// SSThresh returns the slow-start threshold in bytes.
func (c *congestion) SSThresh() int { return c.ssthresh }

// PartialBytesAcked returns partial_bytes_acked (RFC 9260 §7.2.2).
func (c *congestion) PartialBytesAcked() int { return c.pba }

// Flight returns the flight size: bytes sent and neither acknowledged nor
// marked for retransmission.
func (c *congestion) Flight() int { return c.flight }

// SetPathMTU takes a new path MTU and PMDCS (the PLPMTU changed, RFC 8899):
// later increases and the floors of §7.2.3 use them; cwnd itself is kept.
func (c *congestion) SetPathMTU(mtu, pmdcs int) {
	if mtu <= 0 {
		return
	}
	c.mtu = mtu
	c.pmdcs = min(max(pmdcs, 1), mtu)
}

// MTU returns the path MTU in use.
func (c *congestion) MTU() int { return c.mtu }

// PMDCS returns the Path Maximum Data Chunk Size in use.
func (c *congestion) PMDCS() int { return c.pmdcs }

// InSlowStart reports whether cwnd <= ssthresh, where RFC 9260 §7.2.1
// applies slow start (§7.2.2 applies congestion avoidance above it).
func (c *congestion) InSlowStart() bool { return c.cwnd <= c.ssthresh }

// InFastRecovery reports whether the sender is in Fast Recovery and, if
// so, the exit point: the highest TSN outstanding when it entered
// (RFC 9260 §7.2.4).
func (c *congestion) InFastRecovery() (exit uint32, ok bool) { return c.frExit, c.inFR }

// PeerARwnd returns the peer's last Advertised Receiver Window Credit.
func (c *congestion) PeerARwnd() uint32 { return c.peerARwnd }

// Rwnd returns the sender's view of the peer's receive window: the last
// a_rwnd minus the bytes in flight, never below zero. This is rules B, C
// and D ii of RFC 9260 §6.2.1 folded into one invariant: sending
// subtracts a chunk (B), marking it for retransmission gives it back (C),
// and each SACK resets the window to its a_rwnd minus what is still
// outstanding (D ii).
func (c *congestion) Rwnd() int {
	r := int64(c.peerARwnd) - int64(c.flight)
	if r < 0 {
		return 0
	}
	return int(min(r, math.MaxInt32))
}

// CanRetransmit reports whether a chunk of n bytes that is marked for
// retransmission may be sent now. RFC 9260 §6.1 rule C limits
// retransmissions by cwnd only; rule B forbids sending with cwnd +
// (PMDCS-1) or more bytes outstanding and lets a transmission exceed cwnd
// by up to PMDCS-1 bytes while the flight size does not exceed cwnd. This
// implements rule B with the flight size strictly below cwnd, so that
// after a T3-rtx expiry (cwnd = PMDCS, §7.2.3) one full packet closes the
// window: a chunk may be sent if flight < cwnd and flight+n <=
// cwnd+PMDCS-1. A Fast Retransmit ignores cwnd altogether (§7.2.4 step
// 3); the caller sends that one packet without asking.
func (c *congestion) CanRetransmit(n int) bool {
	// A chunk larger than PMDCS (built before the path MTU fell, RFC 8899)
	// may go when nothing is in flight: otherwise no window would ever admit
	// it.

	f := c.flight
	if c.pathFlight != nil {
		f = *c.pathFlight
	}
	if f == 0 {
		return true
	}
	return f < c.cwnd && f+n <= c.cwnd+c.pmdcs-1
}

// CanSend reports whether a new DATA chunk of n bytes may be sent now:
// cwnd must allow it (RFC 9260 §6.1 rule B, see CanRetransmit) and the
// peer's rwnd must hold it (rule A), except that with nothing in flight
// one chunk may always be sent whatever the rwnd, the zero window probe
// of rule A.
func (c *congestion) CanSend(n int) bool {
	if !c.CanRetransmit(n) {
		return false
	}
	if c.flight == 0 {
		return true
	}
	return c.Rwnd() >= n
}

// OnSend accounts a DATA chunk of n bytes sent or retransmitted: it
// enters the flight and leaves the peer's rwnd (RFC 9260 §6.2.1 B).
func (c *congestion) OnSend(n int) {
	if n > 0 {
		c.flight += n
	}
}

// OnRetransmitMarked accounts n bytes of chunks in flight that were just
// marked for retransmission by a T3-rtx expiry or a Fast Retransmit:
// they leave the flight and return to the peer's rwnd (RFC 9260 §6.2.1
// C).
func (c *congestion) OnRetransmitMarked(n int) {
	if n > 0 {
		c.flight = max(c.flight-n, 0)
	}
}

// OnAck applies one received SACK, in this order:
func (c *congestion) OnAck(a ackInfo) {
	//   - The newly acknowledged chunks that were in flight leave it, and the
	//     peer's window becomes the SACK's a_rwnd minus what is still
	//     outstanding (RFC 9260 §6.2.1 D ii, see Rwnd).
	//   - In slow start (cwnd <= ssthresh), cwnd grows by
	//     min(AckedBytes, PMDCS) if, before the SACK, the window was fully
	//     used (the flight size left less than one MTU of cwnd unused) and
	//     the sender is not in Fast Recovery (§7.2.1; the upper bound L of
	//     §7.2.1 is 1).
	//   - In congestion avoidance, partial_bytes_acked grows by AckedBytes
	//     and DuplicateBytes; once it reaches cwnd it is capped at cwnd if the
	//     flight before the SACK was below cwnd, and otherwise loses cwnd
	//     while cwnd grows by PMDCS (§7.2.2). As in slow start, the window
	//     does not grow in Fast Recovery: cwnd was just set from ssthresh and
	//     §7.2.4 keeps it there until recovery ends.
	//   - partial_bytes_acked returns to 0 once everything sent is
	//     acknowledged (§7.2.2).
	//   - Fast Recovery ends when the Cumulative TSN Ack reaches the exit
	//     point (§6.2.1 D iv, §7.2.4). This comes after the window rules, so
	//     the SACK that ends recovery does not also grow the window.
	//
	// Dropping a SACK whose Cumulative TSN Ack is behind the Cumulative TSN
	// Ack Point (§6.2.1 D i) is the outstanding queue's job; such a SACK
	// must not reach OnAck.

	flightBefore := c.flight
	if a.FlightAcked > 0 {
		c.flight = max(c.flight-a.FlightAcked, 0)
	}
	if c.pathFlight != nil {
		flightBefore = a.WindowFlight // what was in this window
	}
	c.peerARwnd = a.ARwnd

	acked := max(a.AckedBytes, 0)
	if c.cwnd <= c.ssthresh {
		fullyUsed := flightBefore+c.mtu > c.cwnd
		inc := 0
		if acked > 0 && fullyUsed && !c.inFR {
			inc = min(acked, c.pmdcs)
		}
		toCA := false
		if c.hs.active() && !c.inFR {
			inc, toCA = c.hs.onAck(a, inc)
		}
		c.cwnd += inc
		if toCA {
			// RFC 9406 §4.2: ssthresh = cwnd, less one octet so that
			// cwnd > ssthresh: congestion avoidance (RFC 9260 §7.2.2).
			c.ssthresh = c.cwnd - 1
		}
	} else if c.cubic != nil {
		// Grow only a window that is used (as RFC 9260 §7.2.2 does).
		if acked > 0 && !c.inFR && (flightBefore+c.pmdcs > c.cwnd || c.heldBack) {
			c.cwnd = c.cubic.onAck(c.cwnd, c.pmdcs, acked, a.Now, a.SRTT)
		}
	} else if !c.inFR {
		c.pba += acked + max(a.DuplicateBytes, 0)
		if c.pba >= c.cwnd {
			if flightBefore < c.cwnd && !c.heldBack {
				c.pba = c.cwnd
			} else {
				c.pba -= c.cwnd
				c.cwnd += c.pmdcs
			}
		}
	}
	if a.AllAcked {
		c.pba = 0
	}
	c.heldBack = false
	if c.inFR && seq.TSNGreaterEq(a.CumTSNAck, c.frExit) {
		c.inFR = false
	}
}

// OnT3Timeout applies a T3-rtx expiry (RFC 9260 §6.3.3 rule E1, §7.2.3):
// ssthresh = max(cwnd/2, 4*MTU), cwnd = PMDCS (one packet in flight until
// data is acknowledged), partial_bytes_acked = 0. It also ends Fast
// Recovery: the window restarts from slow start, which Fast Recovery
// would otherwise hold back until its exit point. The chunks marked for
// retransmission leave the flight through OnRetransmitMarked.
func (c *congestion) OnT3Timeout() {
	c.hs.end()
	c.ssthresh = c.reduced()
	c.cwnd = c.pmdcs
	c.pba = 0
	c.inFR = false
}

// OnFastRetransmit applies the detection of loss by three miss
// indications (RFC 9260 §7.2.4). Outside Fast Recovery it sets
// ssthresh = max(cwnd/2, 4*MTU), cwnd = ssthresh, partial_bytes_acked = 0
// (step 2, the formula of §7.2.3) and enters Fast Recovery with
// highestOutstanding, the highest TSN outstanding, as the exit point
// (step 6), and returns true. In Fast Recovery it changes nothing and
// returns false: further losses do not reduce cwnd again (step 6).
//
// Note that with cwnd below 4*MTU this formula raises cwnd, exactly as
// RFC 9260 writes it.
func (c *congestion) OnFastRetransmit(highestOutstanding uint32) bool {
	if c.inFR {
		return false
	}
	c.hs.end()
	c.ssthresh = c.reduced()
	c.cwnd = c.ssthresh
	c.pba = 0
	c.inFR = true
	c.frExit = highestOutstanding
	return true
}

// reduced is ssthresh after a loss: max(cwnd/2, 4*MTU) (RFC 9260 §7.2.3),
// or with CUBIC max(cwnd*β_cubic, 4*MTU), β_cubic = 0.7, which also
// starts a new CUBIC epoch (RFC 9438 §4.6, §4.7, §4.8).
func (c *congestion) reduced() int {
	if c.cubic == nil {
		return max(c.cwnd/2, 4*c.mtu)
	}
	c.cubic.onLoss(c.cwnd, c.pmdcs)
	return max(int(float64(c.cwnd)*cubicBeta), 4*c.mtu)
}

// OnIdle applies an idle period, idle being the time since the last DATA
// was sent and rto the destination's current RTO; call it once, before
// sending again. Per whole RTO of idleness cwnd is halved, but not below
// 4*MTU and never raised: RFC 9260 §7.2.1 and §7.2.2 adjust it to
// max(cwnd/2, 4*MTU) per RTO. Once cwnd is at that floor, a further RTO
// of idleness counts as the "sufficiently long idle period" of §7.2.1
// after which cwnd is at most initialCwnd(MTU).
func (c *congestion) OnIdle(idle, rto time.Duration) {
	if rto <= 0 || idle < rto {
		return
	}
	n := idle / rto
	floor := 4 * c.mtu
	for ; n > 0 && c.cwnd > floor; n-- {
		c.cwnd = max(c.cwnd/2, floor)
	}
	if n > 0 {
		c.cwnd = min(c.cwnd, initialCwnd(c.mtu))
	}
}

// swapWindow exchanges the per-destination window state of c and o
// (RFC 9260 §7.2: cwnd, ssthresh, partial_bytes_acked, and the Fast
// Recovery, CUBIC and HyStart++ state that shapes them) and leaves the
// association's flight size and view of the peer's window with c: DATA
// moving to another destination takes that destination's window.
func (c *congestion) swapWindow(o *congestion) {
	c.cwnd, o.cwnd = o.cwnd, c.cwnd
	c.ssthresh, o.ssthresh = o.ssthresh, c.ssthresh
	c.pba, o.pba = o.pba, c.pba
	c.inFR, o.inFR = o.inFR, c.inFR
	c.frExit, o.frExit = o.frExit, c.frExit
	c.heldBack, o.heldBack = false, false
	c.cubic, o.cubic = o.cubic, c.cubic
	c.hs, o.hs = o.hs, c.hs
}

// SetMTU follows a path MTU change. cwnd and ssthresh keep their values;
// later rules use the new MTU and PMDCS (a PMDCS outside 1..mtu means
// mtu).
func (c *congestion) SetMTU(mtu, pmdcs int) {
	if mtu <= 0 {
		return
	}
	if pmdcs <= 0 || pmdcs > mtu {
		pmdcs = mtu
	}
	c.mtu, c.pmdcs = mtu, pmdcs
}
