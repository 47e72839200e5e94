package bench

import (
	"slices"
	"time"
)

// Peak bandwidth as perftest computes it (print_report_bw): the shortest
// time per operation over any run of consecutive operations, from the post
// of the first to the completion of the last,
//
//	opt_delta = min over i <= j of (tcompleted[j] - tposted[i]) / (j - i + 1),
//
// and BW peak = message size / opt_delta. perftest measures it in
// iteration runs of at most peakMaxIters iterations per queue pair and not
// in timed runs ("BW peak won't be measured in this run"); so does bench.

// peakMaxIters is the most iterations per stream of a run whose peak is
// measured (perftest's limit); peakMaxOps bounds the operations of all
// streams together (16 octets of timestamps each).
const (
	peakMaxIters = 20000
	peakMaxOps   = 1 << 20
)

// peakTimes holds the post and completion times of an active run's
// operations, in nanoseconds from runEpoch, by operation number.
type peakTimes struct {
	posted, done []int64
}

// wantPeak reports whether a client run of cfg records peakTimes.
func (c *Config) wantPeak() bool {
	return !c.Latency && c.Test != TestPing && c.Duration <= 0 && c.Iters > 0 &&
		c.Iters <= peakMaxIters && c.Iters*uint64(max(c.Streams, 1)) <= peakMaxOps
}

// peakable reports whether the active side of s measures its BW peak
// (the server on a reverse stream: its memory is charged, memoryCost).
func (s setupMsg) peakable() bool {
	return !s.Latency() && s.Test != TestPing && s.Iters > 0 && s.Iters <= peakMaxIters
}

func newPeakTimes(iters uint64) *peakTimes {
	return &peakTimes{posted: make([]int64, iters), done: make([]int64, iters)}
}

// optDelta is perftest's opt_delta over the operations whose post times
// (ascending) are p and completion times (ascending, c[k] >= p[k]) are c:
// the least (c[j]-p[i])/(j-i+1) over i <= j. It bisects on the answer d:
// some i <= j has c[j]-d(j+1) <= p[i]-d*i exactly when d is at least the
// minimum, which one pass with the running maximum of p[i]-d*i decides;
// O(n) a step where perftest's double loop is O(n²).
func optDelta(p, c []int64) float64 {
	n := min(len(p), len(c))
	if n == 0 {
		return 0
	}
	feasible := func(d float64) bool {
		best := float64(p[0])
		for j := 0; j < n; j++ {
			best = max(best, float64(p[j])-d*float64(j))
			if float64(c[j])-d*float64(j+1) <= best {
				return true
			}
		}
		return false
	}
	lo, hi := 0.0, float64(c[n-1]-p[0])/float64(n)
	for range 100 {
		mid := (lo + hi) / 2
		if feasible(mid) {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo < 1e-9*hi {
			break
		}
	}
	return hi
}

// peakGbps is the peak payload rate in Gbit/s of the streams rs (their
// operations merged in time order, as perftest counts posts and
// completions over all its queue pairs) of opBytes octets each; 0 when
// not measured (a stream without peakTimes, or none completed).
func peakGbps(rs []StreamResult, opBytes uint64) float64 {
	var p, c []int64
	for _, r := range rs {
		if r.Err != nil && r.Ops == 0 {
			continue
		}
		if r.times == nil {
			return 0
		}
		n := min(r.Ops, uint64(len(r.times.done)))
		p = append(p, r.times.posted[:n]...)
		c = append(c, r.times.done[:n]...)
	}
	if len(p) == 0 {
		return 0
	}
	slices.Sort(p)
	slices.Sort(c)
	d := optDelta(p, c) // nanoseconds per operation
	if d <= 0 {
		return 0
	}
	return float64(opBytes) * 8 / d // bits per nanosecond: Gbit/s
}

// since is now in nanoseconds from runEpoch.
func since(now time.Time) int64 { return int64(now.Sub(runEpoch)) }
