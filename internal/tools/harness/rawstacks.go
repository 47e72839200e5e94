package harness

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/sctp-rdma/sctp-rdma/transport"
)

// measureRawStacks compares the raw LLPs with one another in the same
// runs: the project's own userspace SCTP (sctp-native) against raw TCP and
// against pion/sctp, in throughput of cfg.Size-octet messages and in
// round trips of cfg.PingSize octets. Each run measures the three pairs
// one after the other, so a row's two figures come from the same run.
func measureRawStacks(cfg Config) []Row {
	rows := []Row{
		{LLP: "raw", Metric: fmt.Sprintf("sctp-native vs TCP, %dK messages", cfg.Size>>10), Unit: "Gbit/s", Target: "≥ 0.6"},
		{LLP: "raw", Metric: fmt.Sprintf("sctp-native vs sctp-pion, %dK messages", cfg.Size>>10), Unit: "Gbit/s", Target: "≥ 2.5"},
		{LLP: "raw", Metric: fmt.Sprintf("sctp-native vs sctp-pion, %d B median round trip", cfg.PingSize), Unit: "µs", Target: "≤ 1.0"},
	}
	fail := func(err error) []Row {
		for i := range rows {
			rows[i].Err = err
		}
		return rows
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tcp, err := newRawTCP()
	if err != nil {
		return fail(err)
	}
	defer tcp.close()
	pion, err := newRawSCTP(ctx, transport.SCTPPion, 0)
	if err != nil {
		return fail(err)
	}
	defer pion.close()
	native, err := newRawSCTP(ctx, transport.SCTPNative, 0)
	if err != nil {
		return fail(err)
	}
	defer native.close()
	iters := max(cfg.Bytes/int64(cfg.Size), 1)
	total := iters * int64(cfg.Size)
	var tcpBW, pionBW, natBW, pionRTT, natRTT []float64
	for run := 0; run < cfg.Runs; run++ {
		for _, m := range []struct {
			p   rawPair
			out *[]float64
		}{{tcp, &tcpBW}, {pion, &pionBW}, {native, &natBW}} {
			// Each stack starts from a collected heap: pion's garbage
			// (several octets allocated per octet moved) would
			// otherwise be collected during the next stack's run.
			runtime.GC()
			d, err := m.p.throughput(cfg.Size, total)
			if err != nil {
				return fail(err)
			}
			*m.out = append(*m.out, gbps(total, d))
		}
		for _, m := range []struct {
			p   rawPair
			out *[]float64
		}{{pion, &pionRTT}, {native, &natRTT}} {
			s, err := m.p.rtt(cfg.PingSize, cfg.PingIters)
			if err != nil {
				return fail(err)
			}
			slices.Sort(s)
			*m.out = append(*m.out, float64(s[len(s)/2])/1e3)
		}
		cfg.logf("raw run %d: tcp %.2f, sctp-pion %.2f, sctp-native %.2f Gbit/s; rtt sctp-pion %.1f, sctp-native %.1f µs",
			run+1, tcpBW[run], pionBW[run], natBW[run], pionRTT[run], natRTT[run])
	}
	set := func(r *Row, base, v []float64, goal float64, lower bool) {
		r.Base, r.Value = median(base), median(v)
		r.Ratio = pairedRatio(base, v)
		r.Met = r.Ratio >= goal
		if lower {
			r.Met = r.Ratio <= goal
		}
	}
	set(&rows[0], tcpBW, natBW, 0.6, false)
	set(&rows[1], pionBW, natBW, 2.5, false)
	set(&rows[2], pionRTT, natRTT, 1.0, true)
	return rows
}
