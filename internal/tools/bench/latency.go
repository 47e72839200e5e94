package bench

import (
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency summarises the latencies of one run: for bandwidth tests each
// operation's time from post to completion, for latency tests (and ping)
// each round trip. The figures come from a histogram that holds any
// duration from 1 ns to 100 s in bounded memory (HdrHistogram), however
// many operations ran; the percentiles are exact to the histogram's
// precision (3 significant digits for latency tests, 2 for bandwidth
// tests). Median is perftest's t_typical.
type Latency struct {
	Min, Median, Mean, Stdev, P99, P999, Max time.Duration
	// Count is the number of operations measured.
	Count uint64
}

// Divided returns l with every duration divided by n (Test.RTTFactor:
// the one-way figures ib_send_lat and ib_write_lat report are RTT/2).
func (l Latency) Divided(n int) Latency {
	d := time.Duration(max(n, 1))
	return Latency{Min: l.Min / d, Median: l.Median / d, Mean: l.Mean / d, Stdev: l.Stdev / d,
		P99: l.P99 / d, P999: l.P999 / d, Max: l.Max / d, Count: l.Count}
}

// Histogram bounds: 1 ns to 100 s.
const (
	histLowest  = 1
	histHighest = int64(100 * time.Second)
)

// latRecorder records the latencies of one stream.
type latRecorder struct{ h *hdr.Histogram }

// newLatRecorder returns a recorder with 3 significant digits when
// precise (about 225 KiB, for latency tests) and 2 otherwise (about 31
// KiB, for the per-operation latencies of bandwidth tests, which may run
// on hundreds of streams).
func newLatRecorder(precise bool) *latRecorder {
	digits := 2
	if precise {
		digits = 3
	}
	return &latRecorder{h: hdr.New(histLowest, histHighest, digits)}
}

// record adds one latency; a duration beyond the range is clamped to it.
func (r *latRecorder) record(d time.Duration) {
	v := min(max(int64(d), histLowest), histHighest)
	_ = r.h.RecordValue(v) // in range by construction
}

// summary returns the recorder's Latency.
func (r *latRecorder) summary() Latency {
	if r == nil || r.h.TotalCount() == 0 {
		return Latency{}
	}
	h := r.h
	return Latency{
		Min: time.Duration(h.Min()), Max: time.Duration(h.Max()),
		Median: time.Duration(h.ValueAtQuantile(50)),
		Mean:   time.Duration(math.Round(h.Mean())), Stdev: time.Duration(math.Round(h.StdDev())),
		P99: time.Duration(h.ValueAtQuantile(99)), P999: time.Duration(h.ValueAtQuantile(99.9)),
		Count: uint64(h.TotalCount()),
	}
}

// combine summarises several streams' Latencies when only their summaries
// are known (a server's reports): Min and Max, Count, Mean and Stdev are
// exact (the pooled mean and variance); Median is the median of the
// medians and P99, P999 the largest of the streams', an upper bound.
func combine(ls []Latency) Latency {
	var out Latency
	var meds []time.Duration
	var sum float64
	for _, l := range ls {
		if l.Count == 0 {
			continue
		}
		if out.Count == 0 || l.Min < out.Min {
			out.Min = l.Min
		}
		out.Max = max(out.Max, l.Max)
		out.P99 = max(out.P99, l.P99)
		out.P999 = max(out.P999, l.P999)
		out.Count += l.Count
		sum += float64(l.Count) * float64(l.Mean)
		meds = append(meds, l.Median)
	}
	if out.Count == 0 {
		return Latency{}
	}
	mean := sum / float64(out.Count)
	var ss float64
	for _, l := range ls {
		if l.Count == 0 {
			continue
		}
		d := float64(l.Mean) - mean
		ss += float64(l.Count) * (float64(l.Stdev)*float64(l.Stdev) + d*d)
	}
	out.Mean = time.Duration(math.Round(mean))
	out.Stdev = time.Duration(math.Round(math.Sqrt(ss / float64(out.Count))))
	slices.Sort(meds)
	out.Median = meds[len(meds)/2]
	return out
}

// mergeHists merges the histograms of the measured streams of rs, or
// returns nil if one of them has none (measured by the server).
func mergeHists(rs []StreamResult) *latRecorder {
	var out *latRecorder
	for _, r := range rs {
		if r.Err != nil && r.Ops == 0 {
			continue
		}
		if r.hist == nil {
			return nil
		}
		if out == nil {
			out = &latRecorder{h: hdr.New(histLowest, histHighest, int(r.hist.h.SignificantFigures()))}
		}
		out.h.Merge(r.hist.h)
	}
	return out
}

// Distribution is the latency distribution of a set of streams that this
// host measured: their histograms merged, exact to the histograms'
// precision (unlike Aggregate.Lat, which summarises per-stream
// summaries).
type Distribution struct{ r *latRecorder }

// LatencyOf merges the latency histograms of rs (streams without a
// completed operation are left out); ok is false if one of them was
// measured by the server (only its summary is known) or none has any.
func LatencyOf(rs []StreamResult) (d Distribution, ok bool) {
	r := mergeHists(rs)
	if r == nil || r.h.TotalCount() == 0 {
		return Distribution{}, false
	}
	return Distribution{r}, true
}

// Summary returns the distribution's Latency.
func (d Distribution) Summary() Latency { return d.r.summary() }

// Quantile returns the latency below which the fraction q (0..1) of the
// operations completed.
func (d Distribution) Quantile(q float64) time.Duration {
	if d.r == nil {
		return 0
	}
	return time.Duration(d.r.h.ValueAtQuantile(min(max(q, 0), 1) * 100))
}
