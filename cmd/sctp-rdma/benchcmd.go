package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// clientFlags are the flags of bench and ping.
type clientFlags struct {
	llpFlags
	connect  string
	streams  int
	size     string
	iters    uint64
	duration time.Duration
	depth    int
	bidir    bool
	lat      bool
	events   bool
	inline   int
	postList int
	rxDepth  int
	buffers  int
	cqMod    int // --cq-mod, -Q
	json     bool
	// depthFlag: the command has --depth (bench), so 0 is a mistake.
	depthFlag bool
	timeout   time.Duration
	stall     time.Duration
	// emulate is bench's --emulate: a profile of internal/tools/netem.
	emulate string
	// local is --local: the address(es) to connect from.
	local string
}

func (f *clientFlags) register(fs *flag.FlagSet, defSize string) {
	f.llpFlags.register(fs)
	fs.StringVar(&f.connect, "connect", "", "server address host[:port] (required; port "+defaultPort+" if omitted); sctp-native and sctp-kernel: several hosts of one port, host1/host2:port, for multihoming")
	fs.StringVar(&f.local, "local", "", "local IP address to connect from (default: the system's choice); sctp-native and sctp-kernel: several, ip1/ip2, a multi-homed client (RFC 9260 §6.4) that lists them in its INIT")
	fs.IntVar(&f.streams, "streams", 1, "streams per direction (SCTP stream pairs on one association; TCP connections for mpa)")
	fs.StringVar(&f.size, "size", defSize, "message size: 64K, a list 1K,64K or a power-of-two sweep 64-1M (K/M/G suffixes)")
	fs.Uint64Var(&f.iters, "iters", 0, "operations per stream (default 1000 unless --duration is given)")
	fs.Var(durationFlag{&f.duration}, "duration", "run each size for this long instead of --iters: seconds (1, 0.5) or a Go duration (500ms, 2s)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "connection set-up time limit")
	fs.DurationVar(&f.stall, "stall", 0, "end the run when no operation completes for this long (the peer is frozen or gone); negative: never (default 8s over SCTP, 3s over mpa)")
	fs.BoolVar(&f.json, "json", false, "print results as JSON (one object per line) instead of a table")
}

// maxClientStreams is the most streams a client opens: the SCTP backends'
// 4096 streams less stream 0, which carries no DDP stream.
const maxClientStreams = 4095

// localOptions sets every LLP's local address from --local: one IP for
// any LLP, several ("ip1/ip2") for the multi-homed ones.
func (f *clientFlags) localOptions(o *transport.Options) error {
	if f.local == "" {
		return nil
	}
	hosts := strings.Split(f.local, "/")
	for _, h := range hosts {
		if _, err := netip.ParseAddr(h); err != nil {
			return usageError("--local %q: want an IP address, or several as ip1/ip2", f.local)
		}
	}
	if len(hosts) > 1 && f.llp != transport.SCTPNative && f.llp != transport.SCTPKernel {
		return usageError("--local %s: several addresses need --llp %s or %s (multihoming)", f.local, transport.SCTPNative, transport.SCTPKernel)
	}
	o.Native.LocalAddr, o.Pion.LocalAddr, o.Kernel.LocalAddr, o.MPA.LocalAddr = f.local, f.local, f.local, f.local
	return nil
}

// maxInline is the largest payload rdmap carries inline (SendWR.Inline:
// ErrInvalidWR beyond it).
const maxInline = 256

func (f *clientFlags) config() (bench.Config, []int, error) {
	o, err := f.options()
	if err == nil {
		err = f.localOptions(&o)
	}
	if err == nil {
		err = f.secureOptions(&o, false, withPort(f.connect))
	}
	if err != nil {
		return bench.Config{}, nil, err
	}
	switch {
	case f.emulate != "" && f.connect != "":
		return bench.Config{}, nil, usageError("--emulate runs its own server: no server address with it")
	case f.emulate != "" && (o.Native.DTLS != nil || o.MPA.TLS != nil):
		return bench.Config{}, nil, usageError("--emulate runs its own server in the clear: no --secure with it")
	case f.connect == "" && f.emulate == "":
		return bench.Config{}, nil, usageError("--connect is required")
	}
	if f.streams < 1 || f.streams > maxClientStreams {
		return bench.Config{}, nil, usageError("--streams must be 1..%d (SCTP stream 0 carries no DDP stream: an association of 4096 SCTP streams holds %d)", maxClientStreams, maxClientStreams)
	}
	sizes, err := parseSizes(f.size)
	if err != nil {
		return bench.Config{}, nil, usageError("--size: %v", err)
	}
	for _, s := range sizes {
		if s < 1 {
			return bench.Config{}, nil, usageError("--size: sizes must be at least 1 octet")
		}
	}
	if f.iters > 0 && f.duration > 0 {
		return bench.Config{}, nil, usageError("give --iters or --duration, not both")
	}
	if f.duration < 0 || (f.duration > 0 && f.duration < time.Millisecond) {
		return bench.Config{}, nil, usageError("--duration must be at least 1ms")
	}
	if f.depth < 0 || f.depth > bench.MaxDepth || (f.depthFlag && f.depth == 0) {
		return bench.Config{}, nil, usageError("--depth must be 1..%d", bench.MaxDepth)
	}
	if f.timeout <= 0 {
		return bench.Config{}, nil, usageError("--timeout must be positive")
	}
	if f.rxDepth < 0 || f.rxDepth > bench.MaxRxDepth {
		return bench.Config{}, nil, usageError("--rx-depth must be 1..%d", bench.MaxRxDepth)
	}
	if f.inline < 0 || f.inline > maxInline {
		return bench.Config{}, nil, usageError("--inline must be 0..%d", maxInline)
	}
	if f.postList < 0 || f.postList > bench.MaxDepth {
		return bench.Config{}, nil, usageError("--post-list must be 0..%d", bench.MaxDepth)
	}
	if f.cqMod < 0 || f.cqMod > bench.MaxDepth {
		return bench.Config{}, nil, usageError("--cq-mod must be 1..%d", bench.MaxDepth)
	}
	if f.buffers < 0 || f.buffers > bench.MaxBuffers {
		return bench.Config{}, nil, usageError("--buffers must be 1..%d", bench.MaxBuffers)
	}
	return bench.Config{Transport: o, Addr: withPort(f.connect), Streams: f.streams, Depth: f.depth,
		RxDepth: f.rxDepth, Iters: f.iters, Duration: f.duration, Latency: f.lat, Events: f.events, Inline: f.inline, PostList: f.postList, CQMod: f.cqMod, Buffers: f.buffers, Bidir: f.bidir, ConnectTimeout: f.timeout,
		StallTimeout: stallTimeout(f.stall, o.LLP)}, sizes, nil
}

// stallTimeout is the --stall value in force: the flag's when given, else
// the LLP's default (bench.StallTimeoutFor).
func stallTimeout(flag time.Duration, llp string) time.Duration {
	if flag != 0 {
		return flag
	}
	return bench.StallTimeoutFor(llp)
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sctp-rdma bench [flags] [HOST[:PORT]] [test ...]\n\ntests: write read send fetchadd cmpswap write-imm all (default write)\n\n")
		fs.PrintDefaults()
	}
	var f clientFlags
	f.register(fs, "64K")
	testList := fs.String("test", "", "tests, comma separated (write, read, send, fetchadd, cmpswap, write-imm, all); also accepted as arguments")
	fs.IntVar(&f.depth, "depth", bench.MaxDepth, "operations in flight per stream in bandwidth mode (1.."+fmt.Sprint(bench.MaxDepth)+"; perftest -t, --tx-depth, 128 by default there too)")
	f.depthFlag = true
	fs.BoolVar(&f.bidir, "bidir", false, "measure both directions at once (the server drives one reverse stream per stream)")
	fs.BoolVar(&f.lat, "lat", false, "latency mode: one operation in flight, ping-pong for send and write-imm; 2-octet messages unless --size says otherwise (as ib_*_lat)")
	fs.BoolVar(&f.events, "events", false, "latency ping-pongs (send, write-imm): wait for each completion in the test's goroutine instead of taking it in a CQ handler where it is made (perftest -e)")
	fs.IntVar(&f.rxDepth, "rx-depth", 0, fmt.Sprintf("receive buffers the server posts per stream for bandwidth send and write-imm, the credit window (1..%d; default: an 8 MiB window, at least depth buffers)", bench.MaxRxDepth))
	fs.IntVar(&f.inline, "inline", 0, fmt.Sprintf("post Sends and Writes of at most this many octets inline (perftest -I, --inline_size; 0..%d)", maxInline))
	fs.IntVar(&f.postList, "post-list", 0, fmt.Sprintf("bandwidth mode: post operations in lists of this many, once as many slots of the depth are free (perftest --post_list; 0..%d, 0: a quarter of the depth for read and the atomics, 1 for the others)", bench.MaxDepth))
	fs.IntVar(&f.cqMod, "cq-mod", 1, fmt.Sprintf("bandwidth mode: ask for a completion of every N-th operation and the last only, the others posted unsignalled (perftest -Q, --cq-mod, whose bandwidth tests default to 100; 1..%d, at most the depth less the post list plus one)", bench.MaxDepth))
	fs.IntVar(&f.buffers, "buffers", 1, fmt.Sprintf("buffers of the message size each stream cycles through on both sides, operation i in buffer i mod N (1..%d): one stream with N buffers touches the memory of N streams, to tell what streams cost from what their buffers cost the caches", bench.MaxBuffers))
	mode := fs.String("mode", "", "bw or lat (same as --lat); default bw")
	fs.StringVar(&f.emulate, "emulate", "", `run against a server of this process over an emulated path between two network namespaces (root), e.g. "rtt=50ms,loss=0.1%,rate=100M" (keys: rtt, delay, jitter, loss, burst, duplicate, reorder, rate, queue)`)
	// perftest's spellings (ib_write_bw and friends), on the same settings.
	fs.StringVar(&f.size, "s", "64K", "perftest -s: same as --size")
	fs.IntVar(&f.rxDepth, "r", 0, "perftest -r: same as --rx-depth")
	fs.IntVar(&f.postList, "l", 0, "perftest -l: same as --post-list")
	fs.IntVar(&f.cqMod, "Q", 1, "perftest -Q: same as --cq-mod")
	fs.IntVar(&f.inline, "I", 0, "perftest -I: same as --inline")
	fs.IntVar(&f.inline, "inline_size", 0, "perftest --inline_size: same as --inline")
	fs.IntVar(&f.depth, "t", bench.MaxDepth, "perftest -t: same as --depth")
	fs.IntVar(&f.depth, "tx-depth", bench.MaxDepth, "perftest --tx-depth: same as --depth")
	fs.IntVar(&f.postList, "post_list", 0, "perftest --post_list: same as --post-list")
	fs.BoolVar(&f.events, "e", false, "perftest -e: same as --events")
	fs.Uint64Var(&f.iters, "n", 0, "perftest -n: same as --iters")
	fs.IntVar(&f.streams, "q", 1, "perftest -q: same as --streams (SCTP stream pairs play the QPs)")
	fs.BoolVar(&f.bidir, "b", false, "perftest -b: same as --bidir")
	fs.Var(durationFlag{&f.duration}, "D", "perftest -D: run each size for this many seconds (same as --duration)")
	allSizes := fs.Bool("a", false, "perftest -a: every power-of-two size from 2 octets to 8 MiB")
	port := fs.Int("p", 0, "perftest -p: the server's port (with a host given without one)")
	fs.StringVar(&f.llp, "d", transport.LLPs()[0].Name, "perftest -d (device): same as --llp")
	_ = fs.Bool("F", false, "perftest -F: accepted and ignored (no CPU frequency check here)")
	_ = fs.Bool("report_gbits", false, "perftest --report_gbits: accepted; bandwidth is always reported in Gbit/s")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := f.startLogging(stderr, f.json); err != nil {
		return err
	}
	if err := checkGiven(fs); err != nil {
		return err
	}
	if *allSizes {
		f.size = "2-8M"
	}
	switch *mode {
	case "", "bw":
	case "lat":
		f.lat = true
	default:
		return usageError("--mode %q: want bw or lat", *mode)
	}
	if f.lat && !flagGiven(fs, "size", "s", "a") {
		f.size = "2" // ib_*_lat's default message size
	}
	var names []string
	if *testList != "" {
		names = strings.Split(*testList, ",")
	}
	// As with perftest, the server's host may come as an argument:
	// "sctp-rdma bench -s 4K -n 1000 HOST".
	for _, p := range pos {
		if _, err := bench.ParseTest(p); err == nil || p == "all" || f.connect != "" {
			names = append(names, p)
			continue
		}
		f.connect = p
	}
	if *port != 0 && f.connect != "" {
		if _, _, err := net.SplitHostPort(f.connect); err == nil {
			return usageError("-p %d and a port in %q: give one", *port, f.connect)
		}
		f.connect = net.JoinHostPort(f.connect, fmt.Sprint(*port))
	}
	if len(names) == 0 {
		names = []string{"write"}
	}
	var tests []bench.Test
	for _, n := range names {
		if n == "all" {
			tests = append(tests, bench.Tests...)
			continue
		}
		t, err := bench.ParseTest(n)
		if err != nil || t == bench.TestPing {
			return usageError("unknown test %q (want write, read, send, fetchadd, cmpswap, write-imm or all; see also sctp-rdma ping)", n)
		}
		tests = append(tests, t)
	}
	cfg, sizes, err := f.config()
	if err != nil {
		return err
	}
	if f.bidir && f.lat {
		return usageError("--bidir applies to bandwidth mode only")
	}
	if checkOnly.Load() {
		return nil
	}
	stopProfile, err := startProfile(f.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	capw, stopCapture, err := startCapture(f.pcap, f.pcapSnap, stderr)
	if err != nil {
		return err
	}
	defer stopCapture()
	cfg.Transport.Capture = capw
	tw, stopTrace, err := startTrace(f.trace, stderr)
	if err != nil {
		return err
	}
	defer stopTrace()
	cfg.Transport.Trace = tw
	run := func(c bench.Config) (*bench.Result, error) { return bench.Run(ctx, c) }
	if f.emulate != "" {
		t := cfg.Transport
		// The server's: the client's LLP options, in the clear, and the
		// trace (its associations are the data's sender in a Read).
		so := transport.Options{LLP: t.LLP, IRD: t.IRD, ORD: t.ORD, Native: t.Native, Pion: t.Pion, Kernel: t.Kernel, MPA: t.MPA, Trace: t.Trace}
		so.Native.DTLS, so.MPA.TLS = nil, nil
		em, err := startEmulated(f.emulate, so, stderr)
		if err != nil {
			return err
		}
		defer em.close()
		cfg.Addr = em.addr
		run = func(c bench.Config) (*bench.Result, error) { return em.run(ctx, c) }
	}
	tty := isTerminal(stdout) && !f.json
	var errs []error
	for _, t := range tests {
		sz := sizes
		if t.Atomic() {
			sz = []int{8} // RFC 7306 §5: 64-bit operands
		}
		header := !f.json
		for _, s := range sz {
			c := cfg
			c.Test, c.Size = t, s
			c.Counters = &bench.Counters{}
			stop := progress(ctx, tty, stderr, c.Counters, fmt.Sprintf("%v %s", t, formatSize(s)))
			res, err := run(c)
			stop()
			// A run refused or failed before any operation completed has
			// no row to show, only its error.
			measured := res != nil && (err == nil || res.Forward.Ops+res.Reverse.Ops > 0)
			if res != nil && (measured || f.json) {
				if f.json {
					_ = json.NewEncoder(stdout).Encode(toJSON(res, err))
				} else {
					if header {
						printHeader(stdout, t, cfg)
						header = false
					}
					printRow(stdout, res)
				}
			}
			if err != nil {
				if res == nil {
					return err
				}
				errs = append(errs, fmt.Errorf("%v %s: %w", t, formatSize(s), err))
			}
			if ctx.Err() != nil {
				return errors.Join(append(errs, ctx.Err())...)
			}
		}
	}
	return errors.Join(errs...)
}

// progress prints a live line on stderr while a run is in progress, naming
// the test and size (label), only when stdout is a terminal.
func progress(ctx context.Context, tty bool, w io.Writer, ctr *bench.Counters, label string) func() {
	if !tty {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-ctx.Done():
				return
			case <-t.C:
				el := time.Since(start)
				fmt.Fprintf(w, "\r\033[K  %s  %6.1fs  %d ops  %.3f Gb/s", label, el.Seconds(), ctr.Ops.Load(),
					float64(ctr.Bytes.Load())*8/el.Seconds()/1e9)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

var testTitles = map[bench.Test]string{
	bench.TestWrite: "RDMA Write", bench.TestRead: "RDMA Read", bench.TestSend: "Send",
	bench.TestFetchAdd: "Atomic FetchAdd", bench.TestCmpSwap: "Atomic CmpSwap", bench.TestWriteImm: "RDMA Write with Immediate",
	bench.TestPing: "Ping (Read + Write-back, verified)",
}

const rule = "---------------------------------------------------------------------------------------------------------"

func printHeader(w io.Writer, t bench.Test, c bench.Config) {
	kind := "BW"
	if c.Latency {
		kind = "Latency"
	}
	dir := ""
	if c.Bidir {
		dir = ", bidirectional"
	}
	fmt.Fprintln(w, rule)
	fmt.Fprintf(w, "                    %s %s Test\n", testTitles[t], kind)
	depth := c.Depth
	if c.Latency {
		depth = 1
	}
	rx := ""
	if !c.Latency && (t == bench.TestSend || t == bench.TestWriteImm) {
		rx = "   Rx depth: auto (8 MiB per stream)"
		if c.RxDepth > 0 {
			rx = fmt.Sprintf("   Rx depth: %d", c.RxDepth)
		}
	}
	if c.Buffers > 1 {
		rx += fmt.Sprintf("   Buffers: %d per stream", c.Buffers)
	}
	ct := c
	ct.Test = t
	if m := ct.EffectiveCQMod(); m > 1 {
		rx += fmt.Sprintf("   CQ moderation: %d", m)
	}
	if bench.UsesHandler(t, c.Latency) {
		// perftest prints its CQ mode as "Use event" or polling.
		if c.Events {
			rx += "   Completions: events"
		} else {
			rx += "   Completions: CQ handler"
		}
	}
	fmt.Fprintf(w, " LLP: %s   Streams: %d%s   Depth: %d%s   Server: %s\n", orDefault(c.Transport.LLP), c.Streams, dir, depth, rx, c.Addr)
	fmt.Fprintln(w, rule)
	if c.Latency {
		// ib_*_lat's columns, divided as perftest divides them.
		fmt.Fprintln(w, latHeader(t))
		fmt.Fprintf(w, " %-10s %-8s %-11s %-11s %-11s %-15s %-11s %-12s %-19s %-19s\n",
			"#bytes", "stream", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]",
			"t_stdev[usec]", "99% percentile[usec]", "99.9% percentile[usec]")
		return
	}
	// perftest's columns (RESULT_FMT_G), then the latency of the operations.
	fmt.Fprintf(w, " %-10s %-8s %-11s %-15s %-18s %-13s %-10s %-10s %-10s %-10s\n",
		"#bytes", "stream", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]", "t_min[us]", "t_med[us]", "t_p99[us]", "t_max[us]")
}

// latHeader says what a latency test's figures are: perftest's rule per
// verb (bench.Test.RTTFactor).
func latHeader(t bench.Test) string {
	if t.RTTFactor() == 2 {
		return " Latency: one way, round trip / 2, as ib_send_lat and ib_write_lat report it (--json has the full round trips)"
	}
	return " Latency: the full round trip, as ib_read_lat and ib_atomic_lat report it"
}

func orDefault(llp string) string {
	if llp == "" {
		return "sctp-pion"
	}
	return llp
}

// peakNote follows a bandwidth table whose BW peak was not measured
// (perftest's "BW peak won't be measured in this run").
const peakNote = " (BW peak: measured in runs of --iters up to 20000 per stream, as perftest, not in --duration runs; the server measures a -b run's reverse streams, whose total peak is shown for one stream only)"

func fmtPeak(gb float64) string {
	if gb <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", gb)
}

func printRow(w io.Writer, r *bench.Result) {
	noPeak := false
	row := func(label string, ops uint64, peak, gb, rate float64, l bench.Latency) {
		if r.Latency {
			h := l.Divided(r.Test.RTTFactor())
			fmt.Fprintf(w, " %-10d %-8s %-11d %-11s %-11s %-15s %-11s %-12s  %-19s %-19s\n", r.Size, label, ops,
				fmtDur(h.Min), fmtDur(h.Max), fmtDur(h.Median), fmtDur(h.Mean), fmtDur(h.Stdev), fmtDur(h.P99), fmtDur(h.P999))
			return
		}
		noPeak = noPeak || peak <= 0
		lat := []string{fmtDur(l.Min), fmtDur(l.Median), fmtDur(l.P99), fmtDur(l.Max)}
		if l.Count == 0 {
			lat = []string{"-", "-", "-", "-"}
		}
		fmt.Fprintf(w, " %-10d %-8s %-11d %-15s %-18.3f %-13.6f %-10s %-10s %-10s %-10s\n", r.Size, label, ops, fmtPeak(peak), gb, rate/1e6,
			lat[0], lat[1], lat[2], lat[3])
	}
	f, b := &r.Forward, &r.Reverse
	row("all", f.Ops, f.PeakGbps, f.Gbps(), f.MsgRate(), f.Lat)
	if r.Bidir {
		row("all-rev", b.Ops, b.PeakGbps, b.Gbps(), b.MsgRate(), b.Lat)
		// perftest -b prints the sum of both directions.
		peak := 0.0
		if f.PeakGbps > 0 && b.PeakGbps > 0 {
			peak = f.PeakGbps + b.PeakGbps
		}
		row("both", f.Ops+b.Ops, peak, f.Gbps()+b.Gbps(), f.MsgRate()+b.MsgRate(), bench.Latency{})
	}
	if len(r.PerStream) > 1 {
		for _, s := range r.PerStream {
			label := fmt.Sprint(s.Stream)
			if s.Reverse {
				label += "-rev"
			}
			if s.Err != nil {
				fmt.Fprintf(w, " %-10d %-8s FAILED: %v\n", r.Size, label, s.Err)
				continue
			}
			row(label, s.Ops, s.PeakGbps(), s.Gbps(), s.MsgRate(), s.Lat)
		}
	}
	if noPeak {
		fmt.Fprintln(w, peakNote)
	}
	for _, s := range r.PerStream {
		if s.Err != nil {
			fmt.Fprintf(w, " (partial: what was measured before the run ended early; the cause follows)\n")
			break
		}
	}
}

// jsonResult is the --json form of one run.
type jsonResult struct {
	Test      string       `json:"test"`
	LLP       string       `json:"llp"`
	Mode      string       `json:"mode"`
	Size      int          `json:"size"`
	Streams   int          `json:"streams"`
	Depth     int          `json:"depth"`
	RxDepth   int          `json:"rx_depth,omitempty"`
	Buffers   int          `json:"buffers"`
	CQMod     int          `json:"cq_mod"`
	Bidir     bool         `json:"bidir"`
	MULPDU    int          `json:"mulpdu"`
	Forward   jsonAgg      `json:"forward"`
	Reverse   *jsonAgg     `json:"reverse,omitempty"`
	PerStream []jsonStream `json:"per_stream"`
	Error     string       `json:"error,omitempty"`
}

type jsonAgg struct {
	Streams  int     `json:"streams"`
	Ops      uint64  `json:"ops"`
	Bytes    uint64  `json:"bytes"`
	ElapsedS float64 `json:"elapsed_s"`
	Gbps     float64 `json:"gbps"`
	// PeakGbps is perftest's BW peak, absent when not measured.
	PeakGbps float64 `json:"bw_peak_gbps,omitempty"`
	MsgRate  float64 `json:"msg_rate"`
	// Latencies of the run, full round trips for latency tests (the text
	// table divides Send and Write ones by two, as ib_*_lat does).
	LatMinUS   float64 `json:"lat_min_us"`
	LatMedUS   float64 `json:"lat_median_us"`
	LatAvgUS   float64 `json:"lat_avg_us"`
	LatStdevUS float64 `json:"lat_stdev_us"`
	LatP99US   float64 `json:"lat_p99_us"`
	LatP999US  float64 `json:"lat_p999_us"`
	LatMaxUS   float64 `json:"lat_max_us"`
	LatCount   uint64  `json:"lat_count"`
}

type jsonStream struct {
	Stream  int    `json:"stream"`
	Reverse bool   `json:"reverse"`
	Error   string `json:"error,omitempty"`
	jsonAgg
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func aggJSON(streams int, ops, bytes uint64, el time.Duration, gb, peak, rate float64, l bench.Latency) jsonAgg {
	return jsonAgg{Streams: streams, Ops: ops, Bytes: bytes, ElapsedS: el.Seconds(), Gbps: gb, PeakGbps: peak, MsgRate: rate,
		LatMinUS: us(l.Min), LatMedUS: us(l.Median), LatAvgUS: us(l.Mean), LatStdevUS: us(l.Stdev),
		LatP99US: us(l.P99), LatP999US: us(l.P999), LatMaxUS: us(l.Max), LatCount: l.Count}
}

func toJSON(r *bench.Result, err error) jsonResult {
	mode := "bw"
	if r.Latency {
		mode = "lat"
	}
	j := jsonResult{Test: r.Test.String(), LLP: r.LLP, Mode: mode, Size: r.Size, Streams: r.Streams, Depth: r.Depth,
		RxDepth: r.RxDepth, Buffers: r.Buffers, CQMod: max(r.CQMod, 1), Bidir: r.Bidir, MULPDU: r.MULPDU,
		Forward: aggJSON(r.Forward.Streams, r.Forward.Ops, r.Forward.Bytes, r.Forward.Elapsed, r.Forward.Gbps(), r.Forward.PeakGbps, r.Forward.MsgRate(), r.Forward.Lat)}
	if r.Bidir {
		a := aggJSON(r.Reverse.Streams, r.Reverse.Ops, r.Reverse.Bytes, r.Reverse.Elapsed, r.Reverse.Gbps(), r.Reverse.PeakGbps, r.Reverse.MsgRate(), r.Reverse.Lat)
		j.Reverse = &a
	}
	for _, s := range r.PerStream {
		js := jsonStream{Stream: s.Stream, Reverse: s.Reverse, jsonAgg: aggJSON(1, s.Ops, s.Bytes, s.Elapsed, s.Gbps(), s.PeakGbps(), s.MsgRate(), s.Lat)}
		if s.Err != nil {
			js.Error = s.Err.Error()
		}
		j.PerStream = append(j.PerStream, js)
	}
	if err != nil {
		j.Error = err.Error()
	}
	return j
}

// checkGiven refuses the settings given explicitly that would otherwise
// be taken as "the default" (-n 0, -D 0, -Q 0): a run does what its
// command line says or nothing.
func checkGiven(fs *flag.FlagSet) error {
	var err error
	timed := flagGiven(fs, "duration", "D")
	fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		v := fl.Value.String()
		switch fl.Name {
		case "iters", "n", "count", "C":
			if v == "0" && !timed {
				err = usageError("%s 0: want at least 1 operation (or give --duration)", flagName(fl.Name))
			}
		case "duration", "D":
			if v == "0s" {
				err = usageError("%s 0: want a positive time (seconds, or a Go duration such as 500ms)", flagName(fl.Name))
			}
		case "cq-mod", "Q":
			if v == "0" {
				err = usageError("%s 0: want 1..%d (1: a completion for every operation)", flagName(fl.Name), bench.MaxDepth)
			}
		}
	})
	return err
}

// flagGiven reports whether any of the named flags was set on the command
// line.
func flagGiven(fs *flag.FlagSet, names ...string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			given = given || f.Name == n
		}
	})
	return given
}
