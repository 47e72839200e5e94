package sctp

import "time"

// Protocol parameter defaults of RFC 9260 §16.
const (
	// defaultRTOInitial is RTO.Initial, the RTO before any measurement
	// (RFC 9260 §16, §6.3.1 rule C1).
	defaultRTOInitial = 1 * time.Second
	// defaultRTOMin is RTO.Min, the floor of every computed RTO
	// (RFC 9260 §16, §6.3.1 rule C6).
	defaultRTOMin = 1 * time.Second
	// defaultRTOMax is RTO.Max, the ceiling of the RTO, also of its
	// back-off (RFC 9260 §16, §6.3.1 rule C7, §6.3.3 rule E2).
	defaultRTOMax = 60 * time.Second
	// defaultClockGranularity is the clock granularity G used by rule G1
	// of RFC 9260 §6.3.1. RFC 9260 reports that granularities of 100 ms
	// or finer work better; Go's monotonic clock is far finer, so the
	// default is one millisecond.
	defaultClockGranularity = time.Millisecond
)

// maxRTTSample bounds an RTT sample so that the fixed-point arithmetic
// below can never overflow; no real round trip comes near it.
const maxRTTSample = time.Hour

// RTOConfig holds the RTO protocol parameters of RFC 9260 §16. A zero
// field takes its RFC default. RTO.Min may be lowered (for example to
// 10 ms for DDP over loopback, where the default one-second floor would
// turn every loss into a one-second stall); see [newRTOEstimator] for
// how inconsistent values are reconciled.
type RTOConfig struct {
	Initial     time.Duration // RTO.Initial; default 1 s
	Min         time.Duration // RTO.Min; default 1 s
	Max         time.Duration // RTO.Max; default 60 s
	Granularity time.Duration // clock granularity G; default 1 ms
	// AckDelay is how long the peer may hold a SACK (RFC 9260 §6.2: up
	// to 500 ms, 200 ms as stacks ship): a measured RTO is SRTT +
	// 4*RTTVAR + AckDelay, so that a lone chunk's delayed SACK is not
	// taken for a loss where RTO.Min is set below that delay. Zero or
	// negative: none (Config fills in 200 ms).
	AckDelay time.Duration
}

// normalized fills the defaults and makes Min <= Initial <= Max.
func (c RTOConfig) normalized() RTOConfig {
	if c.Initial <= 0 {
		c.Initial = defaultRTOInitial
	}
	if c.Min <= 0 {
		c.Min = defaultRTOMin
	}
	if c.Max <= 0 {
		c.Max = defaultRTOMax
	}
	if c.Granularity <= 0 {
		c.Granularity = defaultClockGranularity
	}
	if c.AckDelay < 0 {
		c.AckDelay = 0
	}
	if c.Max < c.Min {
		c.Max = c.Min
	}
	c.Initial = clampDuration(c.Initial, c.Min, c.Max)
	return c
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}

// rtoEstimator computes the retransmission timeout of one destination
// transport address (RFC 9260 §6.3: SCTP keeps one per destination).
// It holds SRTT and RTTVAR and implements rules C1-C7 and G1 of §6.3.1
// and the back-off rule E2 of §6.3.3. Arithmetic is in integer
// nanoseconds with RTO.Alpha = 1/8 and RTO.Beta = 1/4 (§16).
type rtoEstimator struct {
	// Karn's algorithm (§6.3.1 rule C5) is the caller's side of the
	// contract: Observe must be given only measurements taken from DATA
	// chunks that were never retransmitted (the outstanding queue's
	// [sackResult] carries only such samples), and at most one per round
	// trip (rule C4).
	//
	// The zero value is not usable; build one with newRTOEstimator. The
	// methods never allocate.

	cfg      RTOConfig
	srtt     time.Duration
	rttvar   time.Duration
	rto      time.Duration
	measured bool
}

// newRTOEstimator returns an estimator whose RTO is RTO.Initial (rule C1).
// Zero fields of cfg take the RFC 9260 §16 defaults; if Max is below Min
// it is raised to Min, and Initial is clamped into [Min, Max].
func newRTOEstimator(cfg RTOConfig) rtoEstimator {
	cfg = cfg.normalized()
	return rtoEstimator{cfg: cfg, rto: cfg.Initial}
}

// Config returns the parameters in use, defaults filled in.
func (e *rtoEstimator) Config() RTOConfig { return e.cfg }

// RTO returns the current retransmission timeout.
func (e *rtoEstimator) RTO() time.Duration { return e.rto }

// SRTT returns the smoothed round-trip time (zero before the first
// measurement).
func (e *rtoEstimator) SRTT() time.Duration { return e.srtt }

// RTTVAR returns the round-trip time variation (zero before the first
// measurement).
func (e *rtoEstimator) RTTVAR() time.Duration { return e.rttvar }

// Measured reports whether any RTT measurement has been taken.
func (e *rtoEstimator) Measured() bool { return e.measured }

// Observe feeds one valid RTT measurement r (see the type's comment on
// Karn's rule). A negative r, which only a broken clock can produce, is
// ignored. Observing recomputes the RTO from SRTT and RTTVAR, which also
// ends any back-off.
func (e *rtoEstimator) Observe(r time.Duration) {
	if r < 0 {
		return
	}
	if r > maxRTTSample {
		r = maxRTTSample
	}
	if !e.measured {
		// RFC 9260 §6.3.1 C2: SRTT <- R, RTTVAR <- R/2.
		e.srtt = r
		e.rttvar = r / 2
		e.measured = true
	} else {
		// RFC 9260 §6.3.1 C3, with the SRTT before its own update:
		// RTTVAR <- (1 - 1/4) * RTTVAR + 1/4 * |SRTT - R'|
		// SRTT   <- (1 - 1/8) * SRTT   + 1/8 * R'
		diff := e.srtt - r
		if diff < 0 {
			diff = -diff
		}
		e.rttvar = (3*e.rttvar + diff) / 4
		e.srtt = (7*e.srtt + r) / 8
	}
	// RFC 9260 §6.3.1 G1: an RTTVAR of 0 is adjusted to G. A variation
	// below G is below what the clock resolves, so it is raised to G too.
	if e.rttvar < e.cfg.Granularity {
		e.rttvar = e.cfg.Granularity
	}
	// RFC 9260 §6.3.1 C2/C3: RTO <- SRTT + 4 * RTTVAR, then C6 (round up
	// to RTO.Min) and C7 (cap at RTO.Max). A SACK of a chunk arrives up
	// to one round trip plus the peer's SACK delay (§6.2) after it: the
	// RTO covers that delay too (AckDelay), as RTO.Min's 1 s does.
	e.rto = clampDuration(e.srtt+4*e.rttvar+e.cfg.AckDelay, e.cfg.Min, e.cfg.Max)
}

// Backoff doubles the RTO after a retransmission timer expiry, capped at
// RTO.Max (RFC 9260 §6.3.3 rule E2, bounded as rule C7 allows). The next
// Observe recomputes the RTO from SRTT and RTTVAR.
func (e *rtoEstimator) Backoff() {
	if e.rto >= e.cfg.Max/2 {
		e.rto = e.cfg.Max
		return
	}
	e.rto *= 2
}
