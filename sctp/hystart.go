package sctp

import (
	"math"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
)

// HyStart++ (RFC 9406): the initial slow start ends when the round trip
// grows by a threshold from one round to the next, a sign that a queue is
// building at the bottleneck, rather than at the first loss, which on a
// path with a buffer of one bandwidth-delay product comes after cwnd has
// overshot by that much (hundreds of tail drops, repaired by Fast
// Retransmit, and often a T3-rtx expiry). A Conservative Slow Start (CSS)
// of a few rounds, growing a quarter as fast, guards against a false
// exit caused by jitter. RFC 9406 is written for TCP; SCTP's round is the
// flight between the TSN that was highest when the round began and its
// acknowledgement, its RTT samples one per SACK (ackInfo.LatestRTT), and
// the growth per SACK stays RFC 9260 §7.2.1's min(acked, PMDCS) (L = 1).

// RFC 9406 §4.3 constants.
const (
	hsMinRTTThresh     = 4 * time.Millisecond
	hsMaxRTTThresh     = 16 * time.Millisecond
	hsMinRTTDivisor    = 8
	hsNRTTSample       = 8
	hsCSSGrowthDivisor = 4
	hsCSSRounds        = 5
)

// hsNoRTT is "infinity" for the round minima.
const hsNoRTT = time.Duration(math.MaxInt64)

// hyStart is the HyStart++ state of one destination.
type hyStart struct {
	on   bool // configured
	done bool // the initial slow start is over (RFC 9406 §4.2, last rule)

	started   bool
	windowEnd uint32 // the round ends when the Cumulative TSN Ack reaches it
	lastMin   time.Duration
	curMin    time.Duration
	samples   int

	css         bool
	cssBaseline time.Duration
	cssRounds   int
}

// active reports whether HyStart++ still governs slow start.
func (h *hyStart) active() bool { return h.on && !h.done }

// end ends HyStart++ for the association's lifetime: a loss in slow start
// or CSS (RFC 9406 §4.2: congestion avoidance from there; later slow
// starts, after a T3-rtx expiry or idleness, are standard ones, §4.3).
func (h *hyStart) end() {
	h.done, h.css = true, false
}

// InCSS reports whether the window is in HyStart++'s Conservative Slow
// Start (RFC 9406 §4.2).
func (c *congestion) InCSS() bool { return c.hs.active() && c.hs.css }

// onAck applies one SACK in slow start or CSS. inc is the growth RFC 9260
// §7.2.1 allows (0 if the window was not fully used); it returns the
// growth to apply, and toCA when CSS has run its CSS_ROUNDS rounds and
// the window enters congestion avoidance (ssthresh = cwnd).
func (h *hyStart) onAck(a ackInfo, inc int) (grow int, toCA bool) {
	// RFC 9406 §4.2: at the start of each round, the last round's
	// minimum becomes the reference and sampling starts again.
	if !h.started || seq.TSNGreater(a.CumTSNAck, h.windowEnd) {
		if h.started && h.css {
			h.cssRounds++
			if h.cssRounds >= hsCSSRounds {
				h.end()
				return inc / hsCSSGrowthDivisor, true
			}
		}
		if !h.started {
			h.lastMin = hsNoRTT
		} else {
			h.lastMin = h.curMin
		}
		h.started, h.windowEnd = true, a.HighestSent
		h.curMin, h.samples = hsNoRTT, 0
	}
	if a.LatestRTT > 0 {
		h.curMin = min(h.curMin, a.LatestRTT)
		h.samples++
	}
	enough := h.samples >= hsNRTTSample && h.curMin != hsNoRTT
	if !h.css {
		if enough && h.lastMin != hsNoRTT {
			thresh := max(hsMinRTTThresh, min(h.lastMin/hsMinRTTDivisor, hsMaxRTTThresh))
			if h.curMin >= h.lastMin+thresh {
				h.css, h.cssBaseline, h.cssRounds = true, h.curMin, 0
				return inc / hsCSSGrowthDivisor, false
			}
		}
		return inc, false
	}
	if enough && h.curMin < h.cssBaseline {
		// The delay increase was spurious: back to slow start.
		h.css, h.cssBaseline = false, hsNoRTT
		return inc, false
	}
	return inc / hsCSSGrowthDivisor, false
}
