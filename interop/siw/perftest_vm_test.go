package siw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// The perftest runs of TestSiwInterop: every bandwidth test with the same
// message size and count (-s, -n) three ways in the same VM: siw ↔ siw,
// our client against the perftest server, the perftest client against our
// server. MPA without CRC on both ends (siw's default, so all three use the
// same framing). The three ways of a verb run one after the other,
// perftestRuns times (rounds), and the table gives the median of each with
// every run's figure: the VM emulates its CPU, and one run's figures move
// by half from one run to the next.
const perftestSize = 65536

// perftestIters (-n) and perftestRuns: 200 and 1 in make test (the
// interop check); make siw-perf sets SIW_PERFTEST_ITERS and
// SIW_PERFTEST_RUNS for runs of over a second each, five rounds.
var perftestIters, perftestRuns = envInt("SIW_PERFTEST_ITERS", 200), envInt("SIW_PERFTEST_RUNS", 1)

// envInt is the positive integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// perftestMPA is our MPA configuration for the perftest runs: no CRC, and
// ULPDUs up to 65535 octets accepted, because siw sends ULPDUs as large as
// the TCP MSS allows (65474 octets on lo) although RFC 5044 §3 caps them
// at 64768 (perftest-siw-ulpdu-beyond-rfc5044 asserts this).
var perftestMPA = mpa.Config{NoCRC: true, MaxRecvULPDU: 0xFFFF}

// perftestLine is a perftest result line: #bytes #iterations BW peak BW
// average MsgRate.
var perftestLine = regexp.MustCompile(`(?m)^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$`)

// perftestRemote is the remote pingpong_dest perftest prints.
var perftestRemote = regexp.MustCompile(`remote address: LID 0x?[0-9a-fA-F]+ QPN 0x([0-9a-fA-F]+) PSN 0x([0-9a-fA-F]+)`)

// perftestFigures is what a perftest program printed.
type perftestFigures struct {
	Size, Iters           int
	Peak, Avg, MsgRate    float64
	CalibrationFailed     bool // "Correlation coefficient r^2 < 0.9": perftest printed zeros
	RemoteQPN, RemotePSN  uint32
	HaveRemote, HaveLine  bool
	RawLine, CalibrateMsg string
}

func parsePerftest(out string) perftestFigures {
	var f perftestFigures
	if m := perftestLine.FindStringSubmatch(out); m != nil {
		f.HaveLine, f.RawLine = true, strings.TrimSpace(m[0])
		f.Size, _ = strconv.Atoi(m[1])
		f.Iters, _ = strconv.Atoi(m[2])
		f.Peak, _ = strconv.ParseFloat(m[3], 64)
		f.Avg, _ = strconv.ParseFloat(m[4], 64)
		f.MsgRate, _ = strconv.ParseFloat(m[5], 64)
	}
	if m := perftestRemote.FindStringSubmatch(out); m != nil {
		q, _ := strconv.ParseUint(m[1], 16, 32)
		p, _ := strconv.ParseUint(m[2], 16, 32)
		f.RemoteQPN, f.RemotePSN, f.HaveRemote = uint32(q), uint32(p), true
	}
	if i := strings.Index(out, "Correlation coefficient"); i >= 0 {
		f.CalibrationFailed = true
		f.CalibrateMsg = strings.SplitN(out[i:], "\n", 2)[0]
	}
	return f
}

type perftestRow struct {
	verb, client, server, note string
	clientBW, serverBW         []float64 // one figure per run; NaN: n/a
}

// figure is a perftest figure as a number, NaN when lost to a failed clock
// calibration.
func (f perftestFigures) figure() float64 {
	if f.CalibrationFailed && f.Avg == 0 {
		return math.NaN()
	}
	return f.Avg
}

// medianOf formats the median of the runs' figures and, with more than one
// run, every run's.
func medianOf(v []float64) string {
	var ok []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return "n/a (perftest clock calibration failed)"
	}
	sorted := slices.Clone(ok)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if len(v) == 1 {
		return fmt.Sprintf("%.2f", med)
	}
	runs := make([]string, len(v))
	for i, x := range v {
		runs[i] = fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f (%s)", med, strings.Join(runs, ", "))
}

func perftestArgs(port int) []string {
	return []string{"-R", "-d", "siw0", "-s", strconv.Itoa(perftestSize), "-n", strconv.Itoa(perftestIters), "-F", "-p", strconv.Itoa(port)}
}

// checkEcho: a perftest server of ib_write_bw/ib_read_bw prints the figures
// the client reported (xchg_bw_reports), rounded to 2 decimals.
func checkEcho(t *testing.T, printed perftestFigures, r PerftestResult) {
	t.Helper()
	assert.Equal(t, perftestSize, printed.Size)
	assert.Equal(t, perftestIters, printed.Iters)
	assert.InDelta(t, r.BWAvg, printed.Avg, 0.006, "the server prints the BW we reported")
	assert.InDelta(t, r.BWPeak, printed.Peak, 0.006, "and our peak")
}

// perftestScenarios runs in the VM (TestSiwInterop).
func perftestScenarios(t *testing.T, addr string) {
	nextPort := nextGuestPort
	var rows []*perftestRow
	record := func(verb, client, server, note string, cbw, sbw float64) {
		for _, r := range rows {
			if r.verb == verb && r.client == client && r.server == server {
				r.clientBW, r.serverBW = append(r.clientBW, cbw), append(r.serverBW, sbw)
				return
			}
		}
		rows = append(rows, &perftestRow{verb: verb, client: client, server: server, note: note,
			clientBW: []float64{cbw}, serverBW: []float64{sbw}})
	}
	start := time.Now()
	for round := 1; round <= perftestRuns; round++ {
		for _, v := range []Verb{VerbWrite, VerbRead, VerbSend} {
			tool := v.Tool()
			sfx := ""
			if perftestRuns > 1 {
				sfx = fmt.Sprintf("#%d", round)
			}
			t.Run("perftest-siw-vs-siw/"+v.String()+sfx, func(t *testing.T) {
				// perftest calibrates its cycle counter against the wall clock
				// and prints zeros when that fails (r² < 0.9), which happens
				// now and then under emulation: try up to three times for a
				// figure, a run that moved its data is a pass either way.
				// The pair of siw peers also hangs now and then (ib_send_bw,
				// once in CI, neither side printing
				// anything) or fails (ib_read_bw, once in a loaded run of
				// the race suite: "Bad wc status 5", a flushed work request,
				// then "Failed to exchange data between server and
				// clients"): that is siw against siw, the reference only, so
				// a hung or failed pair is killed and tried again too.
				var cli, srv perftestFigures
				for attempt := 1; attempt <= 3; attempt++ {
					p := nextPort()
					s := startTool(t, tool, perftestArgs(p)...)
					waitListen(t, p)
					c := startTool(t, tool, append(perftestArgs(p), addr)...)
					cout, cok, cerr := c.tryWait(t, 60*time.Second)
					sout, sok, serr := s.tryWait(t, 10*time.Second)
					cli, srv = parsePerftest(cout), parsePerftest(sout)
					if ok := cli.HaveLine && srv.HaveLine; !ok && cok && sok {
						// Exited 0 but failed ("Bad wc status 2", a local
						// length error, then "Unable to write to
						// socket/rdma_cm": once under load): a failed pair too.
						cok = false
					}
					if !cok || !sok {
						require.Less(t, attempt, 3, "siw against siw hung or failed three times; client:\n%s\nserver:\n%s", cout, sout)
						t.Logf("attempt %d: siw against siw hung or failed (client ok %t, %v; server ok %t, %v); again:\nclient:\n%s\nserver:\n%s",
							attempt, cok, cerr, sok, serr, cout, sout)
						continue
					}
					require.True(t, cli.HaveLine, "client output:\n%s", c.output())
					require.True(t, srv.HaveLine, "server output:\n%s", s.output())
					if cli.Avg > 0 && srv.Avg > 0 {
						break
					}
					t.Logf("attempt %d: %s / %s", attempt, cli.CalibrateMsg, srv.CalibrateMsg)
				}
				assert.Equal(t, perftestIters, cli.Iters)
				t.Logf("client: %s\nserver: %s", cli.RawLine, srv.RawLine)
				record(v.String(), tool+" (siw)", tool+" (siw)", "peer reference", cli.figure(), srv.figure())
			})
			t.Run("perftest-ours-client-vs-"+tool+"-s"+sfx, func(t *testing.T) {
				var r PerftestResult
				var srv perftestFigures
				var out string
				for attempt := 1; ; attempt++ {
					p := nextPort()
					s := startTool(t, tool, perftestArgs(p)...)
					waitListen(t, p)
					ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
					var err error
					r, err = PerftestClient(ctx, fmt.Sprintf("%s:%d", addr, p), PerftestConfig{Verb: v, Size: perftestSize,
						Iters: perftestIters, MPA: perftestMPA})
					cancel()
					if attempt == 1 && siwServerFailedFirstExchange(err, s.output()) {
						// Seen once in CI (ib_send_bw) and once
						// between siw peers (ib_read_bw): the siw server
						// never answered our version message, the connection
						// stayed open and no Terminate reached us; its work
						// requests were flushed ("Bad wc status 5") when its
						// QP went to ERROR. The rping scenarios show the
						// same, captured: siw acknowledges our first message
						// and never delivers it (docs/siw-interop.md, open
						// questions). Once more, logged; twice fails.
						t.Logf("attempt 1: %s -R failed its first exchange (%v; output %q); once more", tool, err, s.output())
						s.tryWait(t, time.Second)
						continue
					}
					if err != nil && attempt == 1 && errors.Is(err, context.DeadlineExceeded) && strings.TrimSpace(s.output()) == "" {
						// Seen once, in a loaded run of the race suite: the
						// siw server accepted the connection and then
						// answered nothing, printing nothing at all, as the
						// siw-vs-siw pairs above hang now and then. Once
						// more, logged; twice fails.
						sout, _, serr := s.tryWait(t, time.Second)
						t.Logf("attempt 1: %s -R answered nothing (%v; server %v, output %q); once more", tool, err, serr, sout)
						continue
					}
					require.NoError(t, err, "%s -R server output:\n%s", tool, s.output())
					out = s.wait(t)
					if attempt == 1 && siwServerTeardownError(out) {
						// Seen once in CI (ib_send_bw): every
						// Send arrived and our client finished the closing
						// handshake, yet the siw server's QP went to error
						// as it closed, so its result line ends in an error
						// (docs/siw-interop.md, open questions). Once more,
						// logged; twice fails.
						t.Logf("attempt 1: %s -R reported an error after its figures (%q); once more", tool, lastLine(out))
						continue
					}
					break
				}
				srv = parsePerftest(out)
				require.True(t, srv.HaveLine, "server output:\n%s", out)
				assert.Equal(t, perftestIters, r.Iters)
				assert.Equal(t, int64(perftestIters*perftestSize), r.Bytes)
				assert.Equal(t, PerftestVersion, r.PeerVersion)
				require.True(t, srv.HaveRemote, "server output:\n%s", out)
				assert.Equal(t, r.Dest.QPN, srv.RemoteQPN, "perftest decoded our pingpong_dest")
				assert.Equal(t, r.Dest.PSN, srv.RemotePSN, "perftest decoded our pingpong_dest")
				assert.False(t, r.Ctrl.CRC || r.Data.CRC)
				note := ""
				switch v {
				case VerbRead:
					assert.Equal(t, perftestIters, r.Verified, "every Read returned the same octets")
					assert.Equal(t, uint16(128), r.Data.ORD, "siw's IRD answers our ORD")
					note = fmt.Sprintf("%d Reads checked identical; ORD %d", r.Verified, r.Data.ORD)
				case VerbSend:
					note = "server measures itself"
				case VerbWrite:
					note = "no read-back: perftest's target has IRD 0 and no remote read"
				}
				if v != VerbSend {
					checkEcho(t, srv, r)
					note += "; server printed our report"
				}
				t.Logf("ours: %d × %d octets in %v = %.2f MB/s (peak %.2f)\nserver: %s", r.Iters, perftestSize,
					r.Elapsed.Round(time.Millisecond), r.BWAvg, r.BWPeak, srv.RawLine)
				record(v.String(), "ours", tool+" (siw)", note, r.BWAvg, srv.figure())
			})
			t.Run("perftest-"+tool+"-c-vs-ours-server"+sfx, func(t *testing.T) {
				cfg := PerftestConfig{Verb: v, Size: perftestSize, Iters: perftestIters, MPA: perftestMPA}
				var out string
				var r perftestServed
				for attempt := 1; ; attempt++ {
					var err error
					out, r, err = runToolAgainstOurs(t, tool, addr, nextPort(), cfg)
					if err == nil {
						break
					}
					if attempt == 1 && r.err == nil && parsePerftest(out).HaveLine && siwServerTeardownError(out) {
						// Seen once in CI (ib_read_bw): every
						// Read completed, our server served the closing
						// exchange and returned, yet the siw client's QP
						// went to error as it closed (the mirror of the
						// siw server's case above; docs/siw-interop.md).
						// Once more, logged; twice fails.
						t.Logf("attempt 1: %s -R client reported an error after its figures (%q); once more", tool, lastLine(out))
						continue
					}
					t.Fatalf("%s -R client failed: %v (our server: %v)\n%s", tool, err, r.err, out)
				}
				require.NoError(t, r.err, "%s -R client output:\n%s", tool, out)
				cli := parsePerftest(out)
				require.True(t, cli.HaveLine, "client output:\n%s", out)
				assert.Equal(t, perftestIters, cli.Iters)
				require.True(t, cli.HaveRemote, "client output:\n%s", out)
				assert.Equal(t, r.r.Dest.QPN, cli.RemoteQPN, "perftest decoded our pingpong_dest")
				assert.Equal(t, r.r.Dest.PSN, cli.RemotePSN, "perftest decoded our pingpong_dest")
				note := ""
				switch v {
				case VerbSend:
					assert.Equal(t, perftestIters, r.r.Verified, "every Send checked")
					note = fmt.Sprintf("%d Sends checked identical, %d credits", r.r.Verified, r.r.Credits)
				case VerbWrite:
					assert.Equal(t, 1, r.r.Verified)
					note = "Write target overwritten"
				case VerbRead:
					assert.Equal(t, uint16(128), r.r.Data.IRD)
					note = fmt.Sprintf("IRD %d", r.r.Data.IRD)
				}
				if v != VerbSend {
					require.NotNil(t, r.r.PeerReport)
					assert.Equal(t, uint64(perftestIters), r.r.PeerReport.Iters)
					assert.InDelta(t, cli.Avg, r.r.PeerReport.BWAvg, 0.006, "the client's report is what it printed")
					if math.Abs(cli.Avg-r.r.PeerReport.BWAvg) < 0.006 {
						note += "; its report matches its print"
					}
				}
				t.Logf("client: %s\nours: %d × %d octets in %v = %.2f MB/s", cli.RawLine, r.r.Iters, perftestSize,
					r.r.Elapsed.Round(time.Millisecond), r.r.BWAvg)
				record(v.String(), tool+" (siw)", "ours", note, cli.figure(), r.r.BWAvg)
			})
		}
	}
	// siw departs from RFC 5044 §3: with a 64 KiB message on lo (MSS
	// 65483) its Read Responses are FPDUs with ULPDU_Length 65474, beyond
	// the 64768 a sending DDP MUST NOT exceed. With the RFC limit our
	// receiver rejects the FPDU (a framing error, RFC 5044 §8) and
	// terminates. Asserted, so that a siw that honours the limit shows up.
	t.Run("perftest-siw-ulpdu-beyond-rfc5044", func(t *testing.T) {
		p := nextPort()
		s := startTool(t, "ib_read_bw", perftestArgs(p)...)
		waitListen(t, p)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		_, err := PerftestClient(ctx, fmt.Sprintf("%s:%d", addr, p), PerftestConfig{Verb: VerbRead, Size: perftestSize,
			Iters: perftestIters, MPA: mpa.Config{NoCRC: true}})
		require.Error(t, err, "siw kept its ULPDUs within 64768 octets: update docs/siw-interop.md")
		// The Terminate we sent carries the cause as text only.
		assert.Contains(t, err.Error(), mpa.ErrULPDUTooLarge.Error())
		assert.Contains(t, err.Error(), "ULPDU_Length 65474 > 64768")
		select {
		case err := <-s.done: // the server gives up when we terminate
			s.done <- err
		case <-time.After(30 * time.Second):
			t.Fatalf("ib_read_bw server still running; output:\n%s", s.output())
		}
		t.Logf("as documented, siw sends ULPDUs beyond RFC 5044's 64768 octets: %v", err)
	})

	var b strings.Builder
	fmt.Fprintf(&b, "perftest -R -s %d -n %d, MPA rev 2 enhanced, no CRC; MB/sec (2^20 octets); median of %d rounds; %v for all runs\n",
		perftestSize, perftestIters, perftestRuns, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(&b, "| verb | client | server | client MB/s | server MB/s | notes |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.verb, r.client, r.server, medianOf(r.clientBW), medianOf(r.serverBW), r.note)
	}
	t.Log("\n" + b.String())
}

// perftestServed is what our perftest server returned.
type perftestServed struct {
	r   PerftestResult
	err error
}

// runToolAgainstOurs runs tool -R as the client of our perftest server on
// port p once and returns the tool's output, what our server returned and
// the tool's exit error; a tool that does not exit fails the test.
func runToolAgainstOurs(t *testing.T, tool, addr string, p int, cfg PerftestConfig) (string, perftestServed, error) {
	t.Helper()
	ln, err := mpa.Listen("tcp", fmt.Sprintf("%s:%d", addr, p), PerftestListenConfig(cfg.MPA, cfg))
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := make(chan perftestServed, 1)
	go func() {
		r, err := PerftestServe(ctx, ln, cfg)
		res <- perftestServed{r, err}
	}()
	c := startTool(t, tool, append(perftestArgs(p), addr)...)
	select {
	case err := <-c.done:
		c.done <- err
		out := c.output()
		if err != nil {
			cancel()
		}
		return out, <-res, err
	case <-time.After(90 * time.Second):
		t.Fatalf("%s -R client did not exit; output:\n%s", tool, c.output())
		return "", perftestServed{}, nil
	}
}

// siwServerTeardownError reports the intermittent failure of a perftest
// server against our client (or of a perftest client against our server):
// its figures are printed, followed on the same line by a completion
// error, and the closing exchange fails.
func siwServerTeardownError(out string) bool {
	return strings.Contains(out, "Bad wc status") && strings.Contains(out, "Failed to close connection")
}

// siwServerFailedFirstExchange reports the intermittent failure of a
// perftest server at the start of a run: our client timed out waiting for
// its answer to our first control message, and the server printed that its
// Send of that answer was flushed and the exchange failed.
func siwServerFailedFirstExchange(err error, out string) bool {
	return err != nil && errors.Is(err, context.DeadlineExceeded) &&
		strings.Contains(out, "Bad wc status 5") &&
		strings.Contains(out, "Failed to exchange data between server and clients")
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
