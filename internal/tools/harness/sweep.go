package harness

import (
	"fmt"
	"slices"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
)

// Curve kinds.
const (
	kindThroughput = "throughput" // Gbit/s against message size
	kindRTT        = "rtt"        // median round trip in µs against message size
	kindStreams    = "streams"    // aggregate Gbit/s against stream count
)

// Curve is one measured line of a plot: the median of Config.Runs runs at
// every X.
type Curve struct {
	LLP  string
	Kind string
	// Name is the series, e.g. "raw LLP", "RDMA Write".
	Name string
	X, Y []float64
	// Err is set if a point failed; the curve then stops there.
	Err error
}

// sweepOps is the operation count of a throughput point: SweepBytes of
// messages, at least 64 and at most 8192 operations, so that small sizes
// do not take seconds and large ones still fill the pipe.
func sweepOps(cfg *Config, size int) uint64 {
	return uint64(min(max(cfg.SweepBytes/int64(size), 64), 8192))
}

// measureSweeps draws the curves of one LLP against srv and raw: throughput
// (raw, Write, Read, Send) and round trip (raw, Send ping-pong) against
// message size, aggregate RDMA Write throughput against stream count
// (against msrv, Config.Server's when set).
func measureSweeps(cfg *Config, llp string, srv, msrv *server, raw rawPair) []Curve {
	type acc struct {
		c    Curve
		runs [][]float64 // per X, the values of every run
	}
	mk := func(kind, name string, xs []int) *acc {
		a := &acc{c: Curve{LLP: llp, Kind: kind, Name: name}, runs: make([][]float64, len(xs))}
		for _, x := range xs {
			a.c.X = append(a.c.X, float64(x))
		}
		return a
	}
	rawBW := mk(kindThroughput, "raw LLP", cfg.SweepSizes)
	ops := []struct {
		t bench.Test
		a *acc
	}{
		{bench.TestWrite, mk(kindThroughput, "RDMA Write", cfg.SweepSizes)},
		{bench.TestRead, mk(kindThroughput, "RDMA Read", cfg.SweepSizes)},
		{bench.TestSend, mk(kindThroughput, "Send", cfg.SweepSizes)},
	}
	rawRTT := mk(kindRTT, "raw LLP", cfg.RTTSizes)
	sendRTT := mk(kindRTT, "Send ping-pong", cfg.RTTSizes)
	many := mk(kindStreams, "RDMA Write", cfg.StreamCounts)
	all := []*acc{rawBW, ops[0].a, ops[1].a, ops[2].a, rawRTT, sendRTT, many}
	failed := func(a *acc, i int, err error) {
		if a.c.Err == nil {
			a.c.Err = fmt.Errorf("%s %s at %g: %w", a.c.Kind, a.c.Name, a.c.X[i], err)
		}
	}
	for run := 0; run < cfg.Runs; run++ {
		for i, size := range cfg.SweepSizes {
			n := sweepOps(cfg, size)
			total := int64(n) * int64(size)
			if rawBW.c.Err == nil {
				if d, err := raw.throughput(size, total); err != nil {
					failed(rawBW, i, err)
				} else {
					rawBW.runs[i] = append(rawBW.runs[i], gbps(total, d))
				}
			}
			for _, op := range ops {
				if op.a.c.Err != nil {
					continue
				}
				r, err := rdmaRun(srv, llp, op.t, size, 1, cfg.Depth, n, false)
				if err != nil {
					failed(op.a, i, err)
					continue
				}
				op.a.runs[i] = append(op.a.runs[i], r.Forward.Gbps())
			}
		}
		for i, size := range cfg.RTTSizes {
			if rawRTT.c.Err == nil {
				if s, err := raw.rtt(size, cfg.SweepPingIters); err != nil {
					failed(rawRTT, i, err)
				} else {
					slices.Sort(s)
					rawRTT.runs[i] = append(rawRTT.runs[i], float64(s[len(s)/2])/1e3)
				}
			}
			if sendRTT.c.Err == nil {
				if r, err := rdmaRun(srv, llp, bench.TestSend, size, 1, 1, uint64(cfg.SweepPingIters), true); err != nil {
					failed(sendRTT, i, err)
				} else {
					sendRTT.runs[i] = append(sendRTT.runs[i], float64(r.Forward.Lat.Median)/1e3)
				}
			}
		}
		for i, n := range cfg.StreamCounts {
			if many.c.Err != nil {
				break
			}
			// The depth rule of the multistream row: depth per stream
			// for one stream, a quarter of it per stream for many.
			depth, total := cfg.StreamDepth, sweepOps(cfg, cfg.Size)
			if n > 1 {
				depth = max(cfg.StreamDepth/4, 1)
			}
			r, err := rdmaRun(msrv, llp, bench.TestWrite, cfg.Size, n, depth, max(total/uint64(n), 8), false)
			if err != nil {
				failed(many, i, err)
				continue
			}
			many.runs[i] = append(many.runs[i], r.Forward.Gbps())
		}
		cfg.logf("%s sweep run %d done", llp, run+1)
	}
	var out []Curve
	for _, a := range all {
		for i := range a.c.X {
			if len(a.runs[i]) < cfg.Runs {
				a.c.X = a.c.X[:i]
				break
			}
			a.c.Y = append(a.c.Y, median(a.runs[i]))
		}
		out = append(out, a.c)
	}
	return out
}
