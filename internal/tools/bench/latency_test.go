package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The histogram's figures match the samples to its precision, whatever
// their number, in bounded memory.
func TestLatRecorder(t *testing.T) {
	r := newLatRecorder(true)
	for i := 1; i <= 1000; i++ {
		r.record(time.Duration(i) * time.Microsecond)
	}
	l := r.summary()
	near := func(want, got time.Duration) {
		assert.InEpsilon(t, float64(want), float64(got), 0.002, "want %v got %v", want, got)
	}
	near(time.Microsecond, l.Min)
	near(1000*time.Microsecond, l.Max)
	near(500*time.Microsecond, l.Median)
	near(500500*time.Nanosecond, l.Mean)
	near(288675*time.Nanosecond, l.Stdev) // sqrt((1000²-1)/12) µs
	near(990*time.Microsecond, l.P99)
	near(999*time.Microsecond, l.P999)
	assert.Equal(t, uint64(1000), l.Count)

	before := r.h.ByteSize()
	for i := 0; i < 100000; i++ {
		r.record(time.Duration(i%5000) * time.Millisecond)
	}
	assert.Equal(t, before, r.h.ByteSize(), "memory does not grow with the number of samples")
	r.record(time.Hour) // clamped to the range, not lost
	assert.Equal(t, uint64(101001), r.summary().Count)
	assert.Equal(t, Latency{}, (*latRecorder)(nil).summary())
}

func TestLatencyDivided(t *testing.T) {
	l := Latency{Min: 2, Median: 4, Mean: 6, Stdev: 8, P99: 10, P999: 12, Max: 14, Count: 3}
	assert.Equal(t, Latency{Min: 1, Median: 2, Mean: 3, Stdev: 4, P99: 5, P999: 6, Max: 7, Count: 3}, l.Divided(2))
	assert.Equal(t, l, l.Divided(1))
	assert.Equal(t, l, l.Divided(0))
}

// TestRTTFactorIsPerftests: perftest's print_report_lat divides by its
// rtt_factor, 1 for READ and ATOMIC and 2 for every other verb.
func TestRTTFactorIsPerftests(t *testing.T) {
	want := map[Test]int{TestWrite: 2, TestSend: 2, TestWriteImm: 2, TestRead: 1, TestFetchAdd: 1, TestCmpSwap: 1, TestPing: 1}
	for tt, f := range want {
		assert.Equal(t, f, tt.RTTFactor(), tt.String())
	}
	assert.Len(t, want, len(Tests)+1, "every test has its factor checked")
}

// combine pools means and variances exactly; two streams of constant
// latencies 10 and 30 have mean 20 and standard deviation 10.
func TestCombine(t *testing.T) {
	a := Latency{Min: 10, Median: 10, Mean: 10, P99: 10, P999: 10, Max: 10, Count: 100}
	b := Latency{Min: 30, Median: 30, Mean: 30, P99: 30, P999: 30, Max: 30, Count: 100}
	c := combine([]Latency{a, {}, b})
	assert.Equal(t, Latency{Min: 10, Median: 30, Mean: 20, Stdev: 10, P99: 30, P999: 30, Max: 30, Count: 200}, c)
	assert.Equal(t, Latency{}, combine(nil))
}

// Streams this host measured aggregate by merging their histograms.
func TestMergeHists(t *testing.T) {
	x, y := newLatRecorder(false), newLatRecorder(false)
	for i := 0; i < 99; i++ {
		x.record(10 * time.Microsecond)
	}
	y.record(time.Second)
	rs := []StreamResult{{Report: Report{Ops: 99, hist: x}}, {Report: Report{Ops: 1, hist: y}}}
	m := mergeHists(rs).summary()
	assert.Equal(t, uint64(100), m.Count)
	assert.InEpsilon(t, float64(10*time.Microsecond), float64(m.Median), 0.01)
	assert.InEpsilon(t, float64(time.Second), float64(m.Max), 0.01)
	rs = append(rs, StreamResult{Report: Report{Ops: 5}}) // measured by the server
	assert.Nil(t, mergeHists(rs))
}

// TestLatencyOf: the distribution of a subset of streams, its quantiles
// and summary; none for server-measured or empty streams.
func TestLatencyOf(t *testing.T) {
	x, y := newLatRecorder(false), newLatRecorder(false)
	for i := range 90 {
		x.record(time.Duration(i+1) * time.Millisecond)
	}
	for range 10 {
		y.record(time.Second)
	}
	rs := []StreamResult{{Report: Report{Ops: 90, hist: x}}, {Report: Report{Ops: 10, hist: y}}}
	d, ok := LatencyOf(rs)
	require.True(t, ok)
	assert.Equal(t, uint64(100), d.Summary().Count)
	assert.InEpsilon(t, float64(50*time.Millisecond), float64(d.Quantile(0.5)), 0.02)
	assert.InEpsilon(t, float64(90*time.Millisecond), float64(d.Quantile(0.9)), 0.02)
	assert.InEpsilon(t, float64(time.Second), float64(d.Quantile(0.95)), 0.02)
	assert.Equal(t, d.Quantile(1), d.Quantile(7), "clamped")
	only, ok := LatencyOf(rs[:1])
	require.True(t, ok)
	assert.Less(t, only.Summary().Max, 100*time.Millisecond)

	_, ok = LatencyOf([]StreamResult{{Report: Report{Ops: 5}}})
	assert.False(t, ok, "measured by the server")
	_, ok = LatencyOf(nil)
	assert.False(t, ok)
	assert.Zero(t, Distribution{}.Quantile(0.5))
}
