package sctp

import (
	"math"
	"time"
)

// CUBIC's constants (RFC 9438 §4.1, §4.3): the multiplicative decrease
// factor β_cubic, the cubic's scaling constant C (in segments per
// second cubed) and the Reno-friendly additive increase α_cubic =
// 3(1-β)/(1+β), which makes the Reno-friendly estimate grow as fast as
// Reno would with the same decrease.
const (
	cubicBeta  = 0.7
	cubicC     = 0.4
	cubicAlpha = 3 * (1 - cubicBeta) / (1 + cubicBeta)
)

// cubicState is CUBIC's state (RFC 9438 §4), with windows in segments of
// PMDCS octets: W_max, the window before the last reduction; the window
// at the epoch's start and the epoch's start time t_epoch (zero until
// the first acknowledgment in congestion avoidance); K, the time the
// cubic takes to climb back to W_max; and W_est, the Reno-friendly
// estimate.
type cubicState struct {
	wMax, wLastMax float64
	epoch          time.Time
	cwndEpoch, k   float64
	wEst           float64
}

// onLoss records a congestion event at window cwnd (octets): W_max
// becomes the window (less, with fast convergence, if it is below the
// previous W_max: RFC 9438 §4.7) and the next acknowledgment in
// congestion avoidance starts a new epoch (§4.6, §4.8).
func (s *cubicState) onLoss(cwnd, seg int) {
	w := float64(cwnd) / float64(seg)
	if w < s.wLastMax {
		s.wLastMax = w
		s.wMax = w * (1 + cubicBeta) / 2
	} else {
		s.wLastMax = w
		s.wMax = w
	}
	s.epoch = time.Time{}
}

// onAck grows cwnd (octets) for acked octets acknowledged at now on a
// path of smoothed round trip srtt, in congestion avoidance, and returns
// the new window: towards the cubic W_cubic(t+RTT) = C(t+RTT-K)³ + W_max
// (RFC 9438 §4.2), by (target-cwnd)/cwnd per segment acknowledged, the
// target kept within [cwnd, 1.5·cwnd] (§4.4, §4.5); or to the
// Reno-friendly estimate W_est where that is higher (§4.3).
func (s *cubicState) onAck(cwnd, seg, acked int, now time.Time, srtt time.Duration) int {
	w := float64(cwnd) / float64(seg)
	if s.epoch.IsZero() || now.Before(s.epoch) {
		s.epoch = now
		s.cwndEpoch = w
		s.wEst = w
		if w < s.wMax {
			s.k = math.Cbrt((s.wMax - w) / cubicC)
		} else {
			s.k = 0
			s.wMax = w
		}
	}
	ackedSeg := float64(acked) / float64(seg)
	t := now.Sub(s.epoch) + srtt
	d := t.Seconds() - s.k
	target := cubicC*d*d*d + s.wMax
	target = min(max(target, w), 1.5*w)
	s.wEst += cubicAlpha * ackedSeg / w
	next := w + (target-w)*ackedSeg/w
	if s.wEst > next {
		next = s.wEst
	}
	grown := int(next * float64(seg))
	return max(grown, cwnd)
}
