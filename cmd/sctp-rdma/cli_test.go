package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
)

// asCLI, set in the environment, makes the test binary run as the
// sctp-rdma command itself: what a test starts with os.Executable (the
// harness's own "serve", serveProcess) is then the command.
const asCLI = "SCTP_RDMA_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
	}
	goleak.VerifyTestMain(m)
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listenRE = regexp.MustCompile(`listening on (\S+)`)

// serve runs "sctp-rdma serve" in-process on a loopback port and returns
// its address and a stop function that cancels it and checks exit 0.
func serve(t *testing.T, args ...string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- runCtx(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), out, errOut)
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := listenRE.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 5*time.Second, time.Millisecond, "serve did not start: %s", errOut.String())
	return addr, func() string {
		cancel()
		require.Equal(t, 0, <-code, errOut.String())
		return out.String()
	}
}

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestServeBenchEveryTest runs serve and bench in-process over each SCTP
// LLP and mpa, a subtest each, for every test, in bandwidth and latency
// mode, with tiny sizes. A failed bench prints the server's log too.
func TestServeBenchEveryTest(t *testing.T) {
	for _, llp := range []string{"sctp-pion", "sctp-native", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			addr, stop := serve(t, "--llp", llp)
			code, out, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--size", "512,2K", "--iters", "20",
				"--streams", "2", "-l", "3", "--json", "all")
			if !assert.Equal(t, 0, code, errOut) {
				t.Fatalf("the server's log:\n%s", stop())
			}
			code2, out2, errOut2 := runCLI("bench", "--llp", llp, "--connect", addr, "--size", "64", "--iters", "20", "--lat",
				"--inline", "64", "--json", "--test", "write,read,send,fetchadd,cmpswap,write-imm")
			if !assert.Equal(t, 0, code2, errOut2) {
				t.Fatalf("the server's log:\n%s", stop())
			}
			checkBenchJSON(t, out+out2, llp, 2, 20)
			assert.Contains(t, stop(), "stopped after")
		})
	}
}

func TestBenchTableAndBidir(t *testing.T) {
	addr, stop := serve(t, "--llp", "mpa")
	defer stop()
	code, out, errOut := runCLI("bench", "write", "--llp", "mpa", "--connect", addr, "--size", "1K-4K", "--iters", "10", "--streams", "2", "--bidir")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "RDMA Write BW Test")
	assert.Contains(t, out, "bidirectional")
	for _, sz := range []string{"1024", "2048", "4096"} {
		assert.Regexp(t, `(?m)^ `+sz+` +all-rev +20 `, out)
		assert.Regexp(t, `(?m)^ `+sz+` +2-rev +10 `, out)
	}
	assert.NotContains(t, errOut, "\r", "no progress line without a terminal")
}

// TestBenchRxDepth: --rx-depth (perftest -r) sets the credited tests'
// receive depth, shown in the header and the JSON; other tests have none.
func TestBenchRxDepth(t *testing.T) {
	addr, stop := serve(t, "--llp", "mpa")
	defer stop()
	code, out, errOut := runCLI("bench", "send", "--llp", "mpa", "--connect", addr, "-s", "1K", "-n", "200", "-r", "3", "--depth", "16")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Depth: 16   Rx depth: 3")
	code, out, errOut = runCLI("bench", "--llp", "mpa", "--connect", addr, "-s", "64K", "-n", "50", "--json", "--test", "send,write")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Contains(t, lines[0], `"rx_depth":128`, "send: an 8 MiB window of 64 KiB buffers")
	assert.NotContains(t, lines[1], "rx_depth", "write has no receive depth")
	code, out, errOut = runCLI("bench", "write-imm", "--llp", "mpa", "--connect", addr, "-s", "1K", "-n", "50")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Rx depth: auto (8 MiB per stream)")
}

// TestBenchBuffers: --buffers N cycles each stream through N buffers on
// both sides (bench.Config.Buffers); the header and the JSON say so, and a
// count outside 1..1024 is a usage error.
func TestBenchBuffers(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	defer stop()
	code, out, errOut := runCLI("bench", "write", "read", "fetchadd", "--connect", addr, "-s", "4K", "-n", "100", "--buffers", "4", "--depth", "8")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 3, strings.Count(out, "Buffers: 4 per stream"), out)
	code, out, errOut = runCLI("bench", "--connect", addr, "-s", "4K", "-n", "50", "--json", "--buffers", "16")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"buffers":16`)
	code, out, errOut = runCLI("bench", "--connect", addr, "-s", "4K", "-n", "50", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"buffers":1`)
	code, _, errOut = runCLI("bench", "--connect", addr, "--buffers", "1025")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--buffers must be 1..1024")
}

// TestBenchCQMod: --cq-mod N (perftest -Q) runs every bandwidth test with
// a completion asked for every N-th operation only; the header and the
// JSON give the modulus applied (clamped to the depth less the post list
// plus one: Read and the atomics post lists of a quarter of the depth),
// latency mode ignores it, and a value outside 1..128 is a usage error.
func TestBenchCQMod(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	defer stop()
	code, out, errOut := runCLI("bench", "all", "--connect", addr, "-s", "4K", "-n", "301", "-Q", "10", "--depth", "16")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 6, strings.Count(out, "CQ moderation: 10"), out)
	assert.Equal(t, 6, len(regexp.MustCompile(`(?m)^ \d+ +all +301 `).FindAllString(out, -1)), out)
	code, out, errOut = runCLI("bench", "read", "--connect", addr, "-s", "4K", "-n", "100", "--cq-mod", "100", "--depth", "16", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"cq_mod":13`, "16 - 16/4 + 1")
	code, out, errOut = runCLI("bench", "send", "--lat", "--connect", addr, "-n", "50", "-Q", "10", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"cq_mod":1`)
	code, _, errOut = runCLI("bench", "--connect", addr, "--cq-mod", "129")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--cq-mod must be 1..128")
}

// TestBenchLatencyCompletions: the latency ping-pongs and the bandwidth
// Read and atomics run with the completions taken by a CQ handler (the
// default) and, with --events (perftest -e), waited for in the test's
// goroutine; both complete every iteration over each LLP, and so do the
// other bandwidth tests beside them.
func TestBenchLatencyCompletions(t *testing.T) {
	for _, llp := range []string{"sctp-native", "mpa"} {
		addr, stop := serve(t, "--llp", llp)
		for _, mode := range []struct{ flag, header string }{{"", "Completions: CQ handler"}, {"-e", "Completions: events"}} {
			args := []string{"bench", "send", "write-imm", "--lat", "--llp", llp, "--connect", addr, "-n", "300", "-s", "64"}
			if mode.flag != "" {
				args = append(args, mode.flag)
			}
			code, out, errOut := runCLI(args...)
			require.Equal(t, 0, code, "%s %s: %s", llp, mode.flag, errOut)
			assert.Equal(t, 2, strings.Count(out, mode.header), out)
			assert.Regexp(t, `(?m)^ 64 +all +300 `, out)
			assert.Contains(t, out, "Send Latency Test")
			assert.Contains(t, out, "RDMA Write with Immediate Latency Test")
			// Every bandwidth test; Read and the atomics take their
			// completions in the handler (operation k of an atomic
			// must return k: bench checks the order of execution).
			args = []string{"bench", "all", "--llp", llp, "--connect", addr, "-n", "300", "-s", "4K", "--depth", "8"}
			if mode.flag != "" {
				args = append(args, mode.flag)
			}
			code, out, errOut = runCLI(args...)
			require.Equal(t, 0, code, "%s %s: %s", llp, mode.flag, errOut)
			assert.Equal(t, 3, strings.Count(out, mode.header), out)
			assert.Regexp(t, `(?m)^ 4096 +all +300 `, out)
			assert.Regexp(t, `(?m)^ 8 +all +300 `, out)
		}
		stop()
	}
}

func TestPingVerified(t *testing.T) {
	for _, llp := range []string{"sctp-pion", "sctp-native", "mpa"} {
		addr, stop := serve(t, "--llp", llp)
		code, out, errOut := runCLI("ping", "--llp", llp, "--connect", addr, "--count", "4", "--size", "3000", "--streams", "2")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, 8, strings.Count(out, "3000 octets verified"), out)
		assert.Contains(t, out, "8 iterations verified on 2 streams")
		stop()
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "--connect", "x", "--size", "3X"}, "invalid size"},
		{[]string{"bench", "--connect", "x", "--llp", "carrier-pigeon"}, "--llp"},
		{[]string{"bench", "--size", "1K"}, "--connect is required"},
		{[]string{"bench", "--connect", "x", "nosuchtest"}, "unknown test"},
		{[]string{"bench", "--connect", "x", "--iters", "5", "--duration", "1s"}, "not both"},
		{[]string{"bench", "--connect", "x", "--streams", "0"}, "--streams"},
		{[]string{"bench", "--connect", "x", "--depth", "1000"}, "--depth"},
		{[]string{"bench", "--connect", "x", "--inline", "100000"}, "--inline"},
		{[]string{"bench", "--connect", "x", "--post-list", "129"}, "--post-list must be 0..128"},
		{[]string{"bench", "--connect", "x", "-l", "-1"}, "--post-list"},
		{[]string{"bench", "--connect", "x", "--rx-depth", "241"}, "--rx-depth must be 1..240"},
		{[]string{"bench", "--connect", "x", "-r", "-1"}, "--rx-depth"},
		{[]string{"bench", "--connect", "x", "--llp", "mpa", "--mtu", "1500"}, "--mtu applies"},
		{[]string{"bench", "--connect", "x", "--ird", "0"}, "--ird"},
		{[]string{"bench", "--connect", "x", "--lat", "--bidir"}, "--bidir"},
		{[]string{"bench", "--connect", "x", "--mode", "fast"}, "--mode"},
		{[]string{"bench", "--no-such-flag"}, "--no-such-flag: no such flag"},
		{[]string{"ping", "--connect", "x", "--size", "1K,2K"}, "one --size"},
		{[]string{"ping", "--connect", "x", "extra"}, "give one server address"},
		{[]string{"ping", "host1", "host2"}, "unexpected arguments"},
		{[]string{"serve", "--max-size", "2"}, "--max-size"},
		{[]string{"serve", "--max-streams", "0"}, "--max-streams"},
		{[]string{"frobnicate"}, "unknown command"},
		// The validation agrees with the help (issue 19).
		{[]string{"bench", "--connect", "x", "--streams", "4096"}, "--streams must be 1..4095"},
		{[]string{"bench", "--connect", "x", "--size", "-4K"}, "sizes are positive"},
		{[]string{"bench", "--connect", "x", "--depth", "0"}, "--depth must be 1..128"},
		{[]string{"demo", "--size", "0"}, "at least 1 octet"},
		{[]string{"ping", "--connect", "x", "--iters", "3", "--count", "5"}, "disagree"},
		{[]string{"bench", "--connect", "x", "--llp", "sctp-native", "--mtu", "70000"}, "--mtu 70000"},
	} {
		code, _, errOut := runCLI(tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, tc.args)
	}
	code, helpOut, helpErr := runCLI("bench", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, helpOut, "usage: sctp-rdma bench", "help goes to stdout")
	assert.Empty(t, helpErr)
	code, out, _ := runCLI("--version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "sctp-rdma "), out)
}

func TestUnreachablePeer(t *testing.T) {
	start := time.Now()
	code, _, errOut := runCLI("bench", "--connect", "127.0.0.1:9", "--timeout", "500ms", "--iters", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "127.0.0.1:9")
	assert.Less(t, time.Since(start), 5*time.Second, "the connect timeout bounds the wait")
	code, _, errOut = runCLI("ping", "--llp", "mpa", "--connect", "127.0.0.1:9", "--timeout", "500ms")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "connection refused")
}

func TestKernelSCTPUnavailableOrWorks(t *testing.T) {
	code, _, errOut := runCLI("bench", "--llp", "sctp-kernel", "--connect", "127.0.0.1:9", "--timeout", "500ms", "--iters", "1")
	assert.Equal(t, 1, code)
	if strings.Contains(errOut, "kernel SCTP unavailable") {
		assert.Contains(t, errOut, "modprobe sctp")
	}
}

func TestServerRejectsSession(t *testing.T) {
	for _, llp := range []string{"sctp-pion", "sctp-native", "mpa"} {
		addr, stop := serve(t, "--llp", llp, "--max-streams", "1", "--max-size", "1K")
		code, _, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--streams", "2", "--iters", "1", "--size", "64")
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "rejected")
		assert.Contains(t, errOut, "server busy")
		// The server frees the refused run's one slot when it sees that
		// run's association end, which may come after the client exits.
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, _, errOut = runCLI("bench", "--llp", llp, "--connect", addr, "--iters", "1", "--size", "4K")
			if !strings.Contains(errOut, "server busy") || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "max-size")
		stop()
	}
}

// TestServeSIGTERM stops a server with a real signal while a client runs:
// the server flushes and exits 0, the client reports the lost stream.
func TestServeSIGTERM(t *testing.T) {
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	code := make(chan int, 1)
	go func() { code <- run([]string{"serve", "--listen", "127.0.0.1:0", "--llp", "mpa"}, out, errOut) }()
	var addr string
	require.Eventually(t, func() bool {
		m := listenRE.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 5*time.Second, time.Millisecond)
	cl := make(chan int, 1)
	var clErr bytes.Buffer
	go func() {
		cl <- runCtx(context.Background(), []string{"bench", "--llp", "mpa", "--connect", addr, "--duration", "20s", "--size", "4K"}, &bytes.Buffer{}, &clErr)
	}()
	require.Eventually(t, func() bool { return strings.Contains(fmt.Sprint(out.String()), "listening") }, time.Second, time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case c := <-code:
		assert.Equal(t, 0, c, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	assert.Contains(t, out.String(), "stopped after")
	assert.Equal(t, 1, <-cl)
	assert.NotEmpty(t, clErr.String())
}

func TestServeJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- runCtx(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--llp", "mpa", "--json"}, out, errOut)
	}()
	var ev struct{ Event, LLP, Addr string }
	require.Eventually(t, func() bool {
		line, _, _ := strings.Cut(out.String(), "\n")
		return json.Unmarshal([]byte(line), &ev) == nil && ev.Addr != ""
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, "listening", ev.Event)
	assert.Equal(t, "mpa", ev.LLP)
	c, _, e := runCLI("bench", "--llp", "mpa", "--connect", ev.Addr, "--iters", "5", "send")
	require.Equal(t, 0, c, e)
	cancel()
	require.Equal(t, 0, <-code, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last struct {
		Event      string
		Operations uint64
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	assert.Equal(t, "stopped", last.Event)
	assert.Equal(t, uint64(5), last.Operations, "the server counted the 5 Sends it received")
}

// checkBenchJSON checks the --json lines of a "bench all" bandwidth run
// with streams streams and a latency run, iters operations each: every
// test present at every size (two sizes in bandwidth mode; atomics at 8
// octets), no error, the operation counts exact, the figures sane.
func checkBenchJSON(t *testing.T, out, llp string, streams int, iters uint64) {
	t.Helper()
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r jsonResult
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.Empty(t, r.Error)
		assert.Equal(t, llp, r.LLP)
		want := iters
		if r.Mode == "bw" {
			want = iters * uint64(streams)
			assert.Len(t, r.PerStream, streams)
		}
		assert.Equal(t, want, r.Forward.Ops, "%s %s %d", r.Test, r.Mode, r.Size)
		assert.Positive(t, r.Forward.Gbps)
		assert.Positive(t, r.Forward.MsgRate)
		assert.Positive(t, r.Forward.LatMinUS)
		assert.LessOrEqual(t, r.Forward.LatMedUS, r.Forward.LatP99US)
		seen[r.Test+"/"+r.Mode]++
	}
	for _, tc := range []string{"write", "read", "send", "write-imm"} {
		assert.Equal(t, 2, seen[tc+"/bw"], tc)
		assert.Equal(t, 1, seen[tc+"/lat"], tc)
	}
	for _, tc := range []string{"fetchadd", "cmpswap"} {
		assert.Equal(t, 1, seen[tc+"/bw"], tc)
		assert.Equal(t, 1, seen[tc+"/lat"], tc)
	}
}

// TestPerftestHabits: the spellings a perftest user guesses work: the
// server as an argument, -s, -n, -q, -b, -D, -p, -d, -F, --report_gbits
// (issue 19).
func TestPerftestHabits(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	defer stop()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"bench", "-d", "sctp-native", "-s", "4K", "-n", "100", "-q", "2", host, "-p", port},
		{"bench", "-d", "sctp-native", "--lat", "send", addr},
		{"bench", "-d", "sctp-native", "--lat", "-n", "100", "read", "fetchadd", addr},
		{"bench", "-d", "sctp-native", "-b", "-F", "--report_gbits", "-n", "50", "write", addr},
		{"bench", "-d", "sctp-native", "-D", "1", "-s", "1K", addr, "read"},
	} {
		code, out, errOut := runCLI(args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		if slices.Contains(args, "--lat") {
			// ib_send_lat's columns and default size (2 octets), one way.
			assert.Contains(t, out, "t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]", args)
			if slices.Contains(args, "read") {
				// ib_read_lat and ib_atomic_lat: the whole round trip.
				assert.Regexp(t, `(?m)^ 2 +all +100 `, out, args)
				assert.Regexp(t, `(?m)^ 8 +all +100 `, out, args)
				assert.Equal(t, 2, strings.Count(out, "Latency: the full round trip"), out)
				assert.NotContains(t, out, "round trip / 2", args)
				continue
			}
			assert.Regexp(t, `(?m)^ 2 +all +1000 `, out, args)
			assert.Contains(t, out, "round trip / 2", args)
			continue
		}
		assert.Contains(t, out, "BW peak[Gb/sec] BW average[Gb/sec]", args)
		if slices.Contains(args, "-n") && !slices.Contains(args, "-b") {
			assert.Regexp(t, `(?m)^ 4096 +all +200 +\d+\.\d{3} +\d+\.\d{3} `, out, "BW peak measured in an iteration run")
		}
	}
	code, _, errOut := runCLI("bench", "-p", port, addr)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "give one")
}

// TestInterruptedRunPrintsPartial: Ctrl-C (the command's context
// canceled) during a run prints what was measured, marked partial, says
// "interrupted" once, and exits 130 (issue 19).
func TestInterruptedRunPrintsPartial(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-native")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	var out, errOut bytes.Buffer
	code := runCtx(ctx, []string{"bench", "--llp", "sctp-native", "--connect", addr, "--duration", "10s", "write"}, &out, &errOut)
	assert.Equal(t, 130, code)
	assert.Equal(t, "sctp-rdma bench: interrupted\n", errOut.String())
	assert.Contains(t, out.String(), "(partial")
	assert.Regexp(t, `65536\s+all\s+[1-9]\d*\s`, out.String())
}

// TestProgressLineNamesTestAndSize: the live line on a terminal says which
// test and size are running (issue 19), and nothing is printed otherwise.
func TestProgressLineNamesTestAndSize(t *testing.T) {
	var ctr bench.Counters
	ctr.Ops.Store(10)
	ctr.Bytes.Store(640 << 10)
	var w lockedBuffer
	stop := progress(context.Background(), true, &w, &ctr, "write 64K")
	time.Sleep(700 * time.Millisecond)
	stop()
	assert.Contains(t, w.String(), "write 64K")
	assert.Contains(t, w.String(), "10 ops")
	var quiet lockedBuffer
	progress(context.Background(), false, &quiet, &ctr, "write 64K")()
	assert.Empty(t, quiet.String())
}

// TestBenchDefaultsArePerftests: without flags, bench keeps perftest's
// tx-depth of 128 operations in flight, and every command asks for and
// offers 128 outstanding Reads (ib_read_bw's device maximum on siw).
func TestBenchDefaultsArePerftests(t *testing.T) {
	var f llpFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.register(fs)
	require.NoError(t, fs.Parse(nil))
	o, err := f.options()
	require.NoError(t, err)
	assert.Equal(t, 128, o.IRD)
	assert.Equal(t, 128, o.ORD)

	addr, stop := serve(t, "--llp", "mpa")
	defer stop()
	code, out, errOut := runCLI("bench", "read", "--llp", "mpa", "--connect", addr, "-s", "4K", "-n", "300")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Depth: 128")
	code, out, errOut = runCLI("bench", "write", "--llp", "mpa", "--connect", addr, "-s", "4K", "-n", "300", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"depth":128`)
}
