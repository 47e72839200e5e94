package main

import (
	"bytes"
	"encoding/json"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
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
// divided as perftest divides it (issue 48: read and the atomics are
// not halved), and the header line with what the figures are.
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

// helpFlagRE finds the flags a help text mentions: -I, --tx-depth.
var helpFlagRE = regexp.MustCompile(`(?:^|[\s(,'"/])(--?[A-Za-z][\w-]*)`)

// TestHelpMentionsOnlyDefinedFlags: every flag the help of a command
// names (perftest's and rping's spellings included: "perftest -I",
// "perftest -t, --tx-depth") is a flag of that command (issue 48), save
// the client's --connect that serve's help refers to.
func TestHelpMentionsOnlyDefinedFlags(t *testing.T) {
	elsewhere := map[string][]string{"serve": {"--connect"}}
	for _, cmd := range []string{"bench", "ping", "serve", "demo", "harness"} {
		code, out, _ := runCLI(cmd, "-h")
		require.Equal(t, 0, code, cmd)
		defined := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(out, -1) {
			defined[m[1]] = true
		}
		require.NotEmpty(t, defined, cmd)
		for _, m := range helpFlagRE.FindAllStringSubmatch(out, -1) {
			name := m[1]
			if defined[strings.TrimLeft(name, "-")] || slices.Contains(elsewhere[cmd], name) {
				continue
			}
			t.Errorf("sctp-rdma %s -h mentions %s, which it does not define", cmd, name)
		}
	}
	for _, name := range []string{"I", "inline_size", "t", "tx-depth", "post_list", "D", "Q", "n", "s", "q", "b", "a", "p", "d", "e", "l", "r", "F", "report_gbits"} {
		_, out, _ := runCLI("bench", "-h")
		assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(name)+`\b`, out, "bench defines perftest's -%s", name)
	}
	for _, name := range []string{"C", "S", "a", "p", "c", "v"} {
		_, out, _ := runCLI("ping", "-h")
		assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(name)+`\b`, out, "ping defines rping's -%s", name)
	}
}

// TestFlagMistakesOneLine: a mistake on the command line is one line
// naming the flag, then where the help is, never the whole usage (issue
// 48); values that would silently mean something else are refused;
// perftest's and rping's spellings run.
func TestFlagMistakesOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "-X", "1", "192.0.2.1"}, "sctp-rdma bench: -X: no such flag"},
		{[]string{"bench", "-n", "abc", "192.0.2.1"}, `sctp-rdma bench: -n "abc": not a number`},
		{[]string{"bench", "--streams", "-3x", "192.0.2.1"}, `sctp-rdma bench: --streams "-3x": not a positive whole number`},
		{[]string{"bench", "--duration", "soon", "192.0.2.1"}, `sctp-rdma bench: --duration "soon": want seconds (1, 0.5) or a duration (500ms, 2s)`},
		{[]string{"bench", "-n", "0", "192.0.2.1"}, "sctp-rdma bench: -n 0: want at least 1 operation (or give --duration)"},
		{[]string{"bench", "--iters", "0", "192.0.2.1"}, "sctp-rdma bench: --iters 0: want at least 1 operation"},
		{[]string{"bench", "-D", "0", "192.0.2.1"}, "sctp-rdma bench: -D 0: want a positive time"},
		{[]string{"bench", "--duration", "0", "192.0.2.1"}, "sctp-rdma bench: --duration 0: want a positive time"},
		{[]string{"bench", "-Q", "0", "192.0.2.1"}, "sctp-rdma bench: -Q 0: want 1..128"},
		{[]string{"bench", "-I", "100000", "192.0.2.1"}, "sctp-rdma bench: --inline must be 0.."},
		{[]string{"bench", "-t", "0", "192.0.2.1"}, "sctp-rdma bench: --depth must be 1..128"},
		{[]string{"ping", "-C", "0", "192.0.2.1"}, "sctp-rdma ping: -C 0: want at least 1 operation"},
		{[]string{"ping", "-a", "192.0.2.1", "192.0.2.2"}, "sctp-rdma ping: -a 192.0.2.1 and 192.0.2.2: give one server address"},
		{[]string{"ping", "-p", "7"}, "sctp-rdma ping: -p 7 needs the server's address"},
		{[]string{"demo", "--streams", "2", "--break", "5"}, "sctp-rdma demo: --break 5: want a stream index 0..1 (below --streams 2), or -1 for none"},
		{[]string{"demo", "--nope"}, "sctp-rdma demo: --nope: no such flag"},
		{[]string{"serve", "--max-streams", "many"}, `sctp-rdma serve: --max-streams "many": not a number`},
	} {
		code, out, errOut := runCLI(tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Empty(t, out, tc.args)
		assert.True(t, strings.HasPrefix(errOut, tc.msg), "%v: %q", tc.args, errOut)
		assert.LessOrEqual(t, strings.Count(errOut, "\n"), 2, "%v: one line and the hint, not the usage: %q", tc.args, errOut)
		assert.NotContains(t, errOut, "usage:", tc.args)
	}
}

// TestPerftestAndRpingSpellingsRun: -I, -t, --tx-depth, --inline_size,
// --duration 1 (seconds, as perftest -D), and ping -C -S -a -p run.
func TestPerftestAndRpingSpellingsRun(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	defer stop()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"bench", "-I", "64", "-s", "64", "-n", "50", "send", addr},
		{"bench", "--inline_size", "64", "-s", "64", "-n", "50", addr},
		{"bench", "-t", "8", "-n", "50", addr},
		{"bench", "--tx-depth", "8", "-n", "50", addr},
		{"bench", "--duration", "0.3", "-s", "1K", addr},
		{"ping", "-C", "3", "-S", "128", "-a", host, "-p", port},
		{"ping", "-c", "-a", addr, "-C", "2"},
	} {
		code, out, errOut := runCLI(args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		switch {
		case args[0] == "ping":
			assert.Contains(t, out, "iterations verified", args)
		case slices.Contains(args, "-t") || slices.Contains(args, "--tx-depth"):
			assert.Contains(t, out, "Depth: 8", args)
		default:
			assert.Contains(t, out, "BW average[Gb/sec]", args)
		}
	}
	// -b: both directions' BW peak, the reverse one measured by the
	// server and returned in its Report.
	code, out, errOut := runCLI("bench", "-b", "-n", "200", "-s", "4K", "--json", addr, "write")
	require.Equal(t, 0, code, errOut)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.NotNil(t, res.Reverse)
	assert.Positive(t, res.Forward.PeakGbps, out)
	assert.Positive(t, res.Reverse.PeakGbps, out)
	assert.GreaterOrEqual(t, res.Forward.PeakGbps, res.Forward.Gbps*0.999, "the peak is at least the average")
	assert.GreaterOrEqual(t, res.Reverse.PeakGbps, res.Reverse.Gbps*0.999, "the peak is at least the average")
	code, out, errOut = runCLI("ping", "-C", "3", "-S", "128", "-a", addr, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"size":128`)
	assert.Contains(t, out, `"ops":3`)
}

// TestStreamShareRefusalNamesTheFlags: a client asking for more streams
// than a server lets one client take is told which serve flags decide it
// (issue 48: "-q 4095" against a default server).
func TestStreamShareRefusalNamesTheFlags(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native", "--max-streams", "8")
	defer stop()
	code, _, errOut := runCLI("bench", "-q", "8", "-n", "1", addr)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "this client holds its share of the streams: 6 streams, serve's --max-streams 8 less its --stream-reserve 2 kept for other clients")
	assert.Contains(t, errOut, "start the server with --stream-reserve 0 (or a larger --max-streams)")
	// Its share it gets, once the refused run's streams are released.
	require.Eventually(t, func() bool {
		code, _, _ := runCLI("bench", "-q", "6", "-n", "1", addr)
		return code == 0
	}, 30*time.Second, 200*time.Millisecond)
}

// TestServePrintsResultPerClientTest: serve prints one row per client
// test once its last stream ended: the test, size, streams (forward +
// reverse for -b) and the operations it served; --json a "result" event.
func TestServePrintsResultPerClientTest(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	code, _, errOut := runCLI("bench", "-n", "50", "-q", "2", "-b", "-s", "4K", addr, "write")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = runCLI("bench", "--lat", "-n", "30", addr, "read")
	require.Equal(t, 0, code, errOut)
	out := stop()
	assert.Regexp(t, `(?m)^ client +test +mode +#bytes +streams +#iterations +BW average\[Gb/sec\] +MsgRate\[Mpps\] +result$`, out)
	assert.Equal(t, 1, strings.Count(out, " client "), "one header")
	assert.Regexp(t, `(?m)^ 127\.0\.0\.1 +write +bw +4096 +2\+2 +200 +\d+\.\d{3} +\d+\.\d{6} +ok$`, out)
	assert.Regexp(t, `(?m)^ 127\.0\.0\.1 +read +lat +2 +1 +30 +`, out)

	var b bytes.Buffer
	resultPrinter(&b, true)(bench.RunResult{Test: bench.TestSend, Size: 64, Streams: 1, Ops: 20, Bytes: 1280, Elapsed: time.Millisecond})
	var ev map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &ev), b.String())
	assert.Equal(t, "result", ev["event"])
	assert.Equal(t, "send", ev["test"])
	assert.Equal(t, 20.0, ev["ops"])
}
