package harness

import (
	"fmt"
	"os"
	"slices"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// The secure modes' targets (issue 47): sctp-native over DTLS at half the
// clear mode's Write throughput, MPA over TLS at 0.8 of MPA's. What bounds
// them on a host: docs/benchmarks-notes.md, "The secure modes".
const (
	dtlsWriteTarget = 0.5
	tlsWriteTarget  = 0.8
)

// measureSecure prices the secure modes: RDMA Write throughput and the
// Send ping-pong median round trip over sctp-native inside DTLS (RFC
// 8261) and MPA inside TLS 1.3, each against the same LLP in the clear,
// measured one after the other in each run (throwaway self-signed
// certificates, mutual authentication).
func measureSecure(cfg Config) []Row {
	name := fmt.Sprintf("%dK", cfg.Size>>10)
	type mode struct {
		llp, label     string
		plain, secured transport.Options // client side; the servers get theirs below
		serverSecured  transport.Options
		target         float64 // of the Write throughput ratio
	}
	var modes []mode
	dir, err := os.MkdirTemp("", "sctp-rdma-harness-")
	if err == nil {
		defer os.RemoveAll(dir)
		var sf, cf secure.Files
		sf, cf, err = secure.GenerateSelfSigned(dir, "sctp-rdma.harness")
		if err == nil {
			sd, e1 := sf.DTLS(true)
			cd, e2 := cf.DTLS(false)
			st, e3 := sf.TLS(true)
			ct, e4 := cf.TLS(false)
			err = firstErr(e1, e2, e3, e4)
			if slices.Contains(cfg.LLPs, transport.SCTPNative) {
				modes = append(modes, mode{transport.SCTPNative, "sctp-native+dtls", transport.Options{LLP: transport.SCTPNative},
					transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: cd}}, transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: sd}}, dtlsWriteTarget})
			}
			if slices.Contains(cfg.LLPs, transport.MPA) {
				modes = append(modes, mode{transport.MPA, "mpa+tls", transport.Options{LLP: transport.MPA},
					transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: ct}}, transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: st}}, tlsWriteTarget})
			}
		}
	}
	var rows []Row
	for _, m := range modes {
		bw := Row{LLP: m.label, Metric: "RDMA Write " + name + " throughput vs " + m.llp + " in the clear", Unit: "Gbit/s", Target: fmt.Sprintf("≥ %.2f", m.target)}
		rtt := Row{LLP: m.label, Metric: fmt.Sprintf("Send %d B ping-pong median RTT vs %s in the clear", cfg.PingSize, m.llp), Unit: "µs"}
		if err != nil {
			bw.Err, rtt.Err = err, err
			rows = append(rows, bw, rtt)
			continue
		}
		bw, rtt = measureSecureMode(cfg, m.plain, m.secured, m.serverSecured, bw, rtt)
		rows = append(rows, bw, rtt)
	}
	return rows
}

func measureSecureMode(cfg Config, plain, secured, serverSecured transport.Options, bw, rtt Row) (Row, Row) {
	fail := func(err error) (Row, Row) { bw.Err, rtt.Err = err, err; return bw, rtt }
	ps, err := startServerOpts(plain)
	if err != nil {
		return fail(err)
	}
	defer ps.stop()
	ss, err := startServerOpts(serverSecured)
	if err != nil {
		return fail(err)
	}
	defer ss.stop()
	iters := uint64(max(cfg.Bytes/int64(cfg.Size), 1))
	var pBW, sBW, pRTT, sRTT []float64
	for run := 0; run < cfg.Runs; run++ {
		for _, m := range []struct {
			srv *server
			o   transport.Options
			bw  *[]float64
			rtt *[]float64
		}{{ps, plain, &pBW, &pRTT}, {ss, secured, &sBW, &sRTT}} {
			r, err := rdmaRunOpts(m.srv, m.o, bench.TestWrite, cfg.Size, 1, cfg.Depth, iters, false)
			if err != nil {
				return fail(fmt.Errorf("write: %w", err))
			}
			*m.bw = append(*m.bw, r.Forward.Gbps())
			r, err = rdmaRunOpts(m.srv, m.o, bench.TestSend, cfg.PingSize, 1, 1, uint64(cfg.PingIters), true)
			if err != nil {
				return fail(fmt.Errorf("send ping-pong: %w", err))
			}
			*m.rtt = append(*m.rtt, float64(r.Forward.Lat.Median)/1e3)
		}
		cfg.logf("%s run %d: write %.2f Gbit/s (clear %.2f), rtt %.1f µs (clear %.1f)", bw.LLP, run+1, sBW[run], pBW[run], sRTT[run], pRTT[run])
	}
	bw.Base, bw.Value = median(pBW), median(sBW)
	rtt.Base, rtt.Value = median(pRTT), median(sRTT)
	bw.Ratio, rtt.Ratio = pairedRatio(pBW, sBW), pairedRatio(pRTT, sRTT)
	var goal float64
	if _, err := fmt.Sscanf(bw.Target, "≥ %g", &goal); err == nil {
		bw.Met = bw.Ratio >= goal
	}
	return bw, rtt
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
