package bench

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bruteOptDelta is perftest's double loop (print_report_bw) with
// post_list and cq_mod 1.
func bruteOptDelta(p, c []int64) float64 {
	best := float64(c[len(c)-1] - p[0])
	for i := range p {
		for j := i; j < len(c); j++ {
			best = min(best, float64(c[j]-p[i])/float64(j-i+1))
		}
	}
	return best
}

// TestOptDeltaIsPerftests: the bisection finds perftest's opt_delta on
// random runs (bursts, stalls, operations completed together).
func TestOptDeltaIsPerftests(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 300; k++ {
		n := 1 + r.IntN(200)
		p, c := make([]int64, n), make([]int64, n)
		var now int64 = 1000
		for i := range p {
			now += int64(r.IntN(50))
			if r.IntN(20) == 0 {
				now += 5000 // a stall
			}
			p[i] = now
			c[i] = now + 100 + int64(r.IntN(3000))
		}
		slices.Sort(c)
		for i := range c {
			c[i] = max(c[i], p[i]) // completions follow their posts
		}
		want := bruteOptDelta(p, c)
		got := optDelta(p, c)
		require.InEpsilon(t, want, got, 1e-6, "run %d: n=%d", k, n)
	}
	assert.Zero(t, optDelta(nil, nil))
}

// TestPeakGbps: 10 operations of 1250 octets posted 10 ns apart and
// completed 100 ns apart, the last five 50 ns apart: the best window,
// all ten, is 1650 ns for 10, 1250*8/165 Gbit/s; a stream without times
// (the server's) leaves it unmeasured.
func TestPeakGbps(t *testing.T) {
	pt := newPeakTimes(10)
	for i := range 10 {
		pt.posted[i] = int64(i * 10)
		pt.done[i] = int64(1000 + i*100)
	}
	for i := 5; i < 10; i++ {
		pt.done[i] = pt.done[4] + int64(i-4)*50
	}
	r := StreamResult{Report: Report{Ops: 10, Bytes: 12500, times: pt}}
	want := 1250 * 8 / bruteOptDelta(pt.posted, pt.done)
	assert.InEpsilon(t, 1250*8/165.0, want, 1e-9)
	assert.InEpsilon(t, want, r.PeakGbps(), 1e-6)
	assert.InEpsilon(t, want, peakGbps([]StreamResult{r}, 1250), 1e-6)
	assert.Zero(t, peakGbps([]StreamResult{r, {Report: Report{Ops: 3}}}, 1250))
	cfg := Config{Iters: peakMaxIters, Streams: 1}
	assert.True(t, cfg.wantPeak())
	cfg.Iters++
	assert.False(t, cfg.wantPeak(), "perftest: no peak above 20000 iterations")
	assert.False(t, (&Config{Duration: 1}).wantPeak(), "nor in timed runs")
	assert.False(t, (&Config{Iters: 10, Latency: true}).wantPeak())
}
