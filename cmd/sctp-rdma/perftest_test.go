package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/bench"
)

// perftestRTTFactor is perftest's rule (print_report_lat): READ and
// ATOMIC report the whole round trip, every other verb half of it.
func perftestRTTFactor(t bench.Test) float64 {
	switch t {
	case bench.TestRead, bench.TestFetchAdd, bench.TestCmpSwap:
		return 1
	}
	return 2
}

// TestLatencyColumnsArePerftests prints a latency table for every test
// from known round trips and compares every column with the round trip
// divided as perftest divides it (issue 48: read and the atomics were
// halved too), and the header line with what the figures are.
func TestLatencyColumnsArePerftests(t *testing.T) {
	rtt := bench.Latency{Min: 10 * time.Microsecond, Max: 90 * time.Microsecond, Median: 20 * time.Microsecond,
		Mean: 30 * time.Microsecond, Stdev: 4 * time.Microsecond, P99: 60 * time.Microsecond, P999: 80 * time.Microsecond, Count: 1000}
	want := []time.Duration{rtt.Min, rtt.Max, rtt.Median, rtt.Mean, rtt.Stdev, rtt.P99, rtt.P999}
	for _, tt := range bench.Tests {
		var b bytes.Buffer
		cfg := bench.Config{Test: tt, Latency: true, Streams: 1, Addr: "192.0.2.1:18515"}
		printHeader(&b, tt, cfg)
		agg := bench.Aggregate{Streams: 1, Ops: 1000, Lat: rtt}
		printRow(&b, &bench.Result{Test: tt, Size: 2, Streams: 1, Latency: true, Forward: agg})
		out := b.String()
		var row []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "2" && f[1] == "all" {
				row = f
			}
		}
		require.Len(t, row, 10, "%v:\n%s", tt, out)
		for i, w := range want {
			got, err := strconv.ParseFloat(row[3+i], 64)
			require.NoError(t, err)
			assert.InDelta(t, float64(w)/float64(time.Microsecond)/perftestRTTFactor(tt), got, 0.006, "%v column %d", tt, 3+i)
		}
		if perftestRTTFactor(tt) == 2 {
			assert.Contains(t, out, "one way, round trip / 2", tt)
		} else {
			assert.Contains(t, out, "the full round trip", tt)
			assert.NotContains(t, out, "/ 2", tt)
		}
	}
}

// TestBandwidthColumnsArePerftests: a bandwidth table has perftest's
// columns, BW peak and BW average in Gbit/s, and with -b a row summing
// both directions.
func TestBandwidthColumnsArePerftests(t *testing.T) {
	var b bytes.Buffer
	cfg := bench.Config{Test: bench.TestWrite, Streams: 1, Bidir: true, Depth: 128, Addr: "192.0.2.1:18515"}
	printHeader(&b, bench.TestWrite, cfg)
	fwd := bench.Aggregate{Streams: 1, Ops: 1000, Bytes: 1000 * 65536, Elapsed: 10 * time.Millisecond, PeakGbps: 60}
	rev := bench.Aggregate{Streams: 1, Ops: 500, Bytes: 500 * 65536, Elapsed: 10 * time.Millisecond}
	printRow(&b, &bench.Result{Test: bench.TestWrite, Size: 65536, Streams: 1, Bidir: true, Forward: fwd, Reverse: rev})
	out := b.String()
	assert.Regexp(t, `#bytes +stream +#iterations +BW peak\[Gb/sec\] +BW average\[Gb/sec\] +MsgRate\[Mpps\]`, out)
	assert.Regexp(t, `(?m)^ 65536 +all +1000 +60\.000 +52\.429 +0\.100000 `, out)
	assert.Regexp(t, `(?m)^ 65536 +all-rev +500 +- +26\.214 +0\.050000 `, out)
	assert.Regexp(t, `(?m)^ 65536 +both +1500 +- +78\.643 +0\.150000 `, out, "the sum of both directions")
	assert.Contains(t, out, "BW peak: measured in runs of --iters up to 20000")
}
