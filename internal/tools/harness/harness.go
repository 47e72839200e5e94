// Package harness measures, in one run, the raw lower layer (pion SCTP
// user messages, plain TCP) and the RDMA operations over it with the same
// message sizes, and reports the ratios the project targets (issue 7):
// RDMA Write ≥ 90% and Read ≥ 85% of raw LLP throughput, a 64-octet Send
// ping-pong ≤ 1.2× the raw round trip, 256 streams ≥ 90% of one stream, and
// the memory an idle stream costs. Every figure is the median of
// Config.Runs runs. `make bench` runs it through `sctp-rdma harness` and
// writes docs/benchmarks.md.
package harness

import (
	"context"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// Config configures a harness run. Zero fields take defaults.
type Config struct {
	// LLPs to measure (default sctp-pion and mpa).
	LLPs []string
	// Size is the bulk message size (default 64 KiB).
	Size int
	// Bytes is the volume of each throughput measurement (default 64 MiB).
	Bytes int64
	// PingSize and PingIters configure the round-trip measurements
	// (default 64 octets, 2000 round trips).
	PingSize, PingIters int
	// ManyStreams is the stream count of the multistream measurement
	// (default 256).
	ManyStreams int
	// Depth is the operations in flight on the stream of the
	// single-stream throughput measurements and sweeps (default
	// DefaultDepth); a Read's client asks for it as its ORD.
	Depth int
	// StreamDepth is the depth of the multistream measurements: one
	// stream at StreamDepth against many at a quarter of it each (default
	// defaultStreamDepth).
	StreamDepth int
	// Runs is the number of repetitions; the median is reported (default 3).
	Runs int
	// The curves of the plots (Results.Curves), unless NoSweep:
	// SweepSizes are the message sizes of the throughput curves (default
	// 1K to 256K), each point moving about SweepBytes (default 16 MiB);
	// RTTSizes those of the round-trip curves (default 64 to 4K, each
	// SweepPingIters round trips, default 500); StreamCounts the stream
	// counts of the multistream curve (default 1, 4, 16, 64 and
	// ManyStreams).
	NoSweep        bool
	SweepSizes     []int
	SweepBytes     int64
	RTTSizes       []int
	SweepPingIters int
	StreamCounts   []int
	// NoSecure skips the secure modes' rows (sctp-native over DTLS and
	// mpa over TLS against the same LLP in the clear).
	NoSecure bool
	// Progress, if not nil, receives a line per measurement.
	Progress io.Writer
	// Server, if set, starts a bench server for llp in another process
	// and returns its address and a function that stops it. The
	// multistream row and curve then run against it, one stream and many
	// alike: with both ends in one process, the client's hundreds of
	// goroutines and the server's receive path share one Go scheduler and
	// delay each other's critical path, which no deployment has.
	// sctp-rdma harness runs its own "serve". nil: in this process.
	Server func(llp string) (addr string, stop func(), err error)
}

func (c *Config) defaults() {
	if len(c.LLPs) == 0 {
		c.LLPs = []string{transport.SCTPPion, transport.SCTPNative, transport.MPA}
	}
	if c.Size <= 0 {
		c.Size = 64 << 10
	}
	if c.Bytes <= 0 {
		c.Bytes = 64 << 20
	}
	if c.PingSize <= 0 {
		c.PingSize = 64
	}
	if c.PingIters <= 0 {
		c.PingIters = 2000
	}
	if c.ManyStreams <= 0 {
		c.ManyStreams = 256
	}
	if c.Depth <= 0 {
		c.Depth = DefaultDepth
	}
	if c.StreamDepth <= 0 {
		c.StreamDepth = defaultStreamDepth
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if len(c.SweepSizes) == 0 {
		c.SweepSizes = []int{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10}
	}
	if c.SweepBytes <= 0 {
		c.SweepBytes = 16 << 20
	}
	if len(c.RTTSizes) == 0 {
		c.RTTSizes = []int{64, 256, 1 << 10, 4 << 10}
	}
	if c.SweepPingIters <= 0 {
		c.SweepPingIters = 500
	}
	if len(c.StreamCounts) == 0 {
		for _, n := range []int{1, 4, 16, 64} {
			if n < c.ManyStreams {
				c.StreamCounts = append(c.StreamCounts, n)
			}
		}
		c.StreamCounts = append(c.StreamCounts, c.ManyStreams)
	}
}

// Row is one comparison.
type Row struct {
	LLP string
	// Metric names what is compared, e.g. "RDMA Write 64K throughput".
	Metric string
	// Base and Value are the reference (raw LLP, or one stream) and the
	// measured figure, in Unit.
	Base, Value float64
	Unit        string
	// Ratio is the median of the ratios of the measurements to their
	// references taken one after the other (pairedRatio), close to but
	// not always Value/Base; Target describes the goal and Met whether
	// the ratio reaches it. Rows without a target have Target "".
	Ratio  float64
	Target string
	Met    bool
	// Err is set if the measurement failed.
	Err error
}

// Machine describes where the figures were taken.
type Machine struct {
	NumCPU    int
	CPU       string
	Kernel    string
	GoVersion string
	GOGC      string
	GOMAXPROC int
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute averages when the run
	// started and ended: how busy the (shared) machine was.
	LoadAvg, LoadAvgEnd string
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// Results is the outcome of Run.
type Results struct {
	Config  Config
	Machine Machine
	Rows    []Row
	// Curves are the plotted sweeps (none with Config.NoSweep).
	Curves []Curve
	// Plots are the files WritePlots wrote, for the Markdown page.
	Plots []Plot
	Took  time.Duration
}

// describe returns the machine description.
func describe() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), GOMAXPROC: runtime.GOMAXPROCS(0), CPU: "unknown", Kernel: runtime.GOOS}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.LoadAvg = loadAvg()
	m.GOGC = os.Getenv("GOGC")
	if m.GOGC == "" {
		m.GOGC = fmt.Sprintf("%d (default)", debug.SetGCPercent(100))
	}
	return m
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// pairedRatio is the median of v[i]/base[i]: each measurement over the
// reference taken just before it in the same run. On this shared host
// the speed drifts (and a ping-pong settles for a while into one of two
// speeds), which moves a pair together but not two medians taken apart,
// so the ratio of the medians would pair a fast reference with a slow
// measurement as often as not.
func pairedRatio(base, v []float64) float64 {
	var r []float64
	for i := range min(len(base), len(v)) {
		if base[i] > 0 {
			r = append(r, v[i]/base[i])
		}
	}
	return median(r)
}

// Run measures every configured LLP and returns the rows.
func Run(cfg Config) Results {
	cfg.defaults()
	start := time.Now()
	res := Results{Config: cfg, Machine: describe()}
	if slices.Contains(cfg.LLPs, transport.SCTPNative) && slices.Contains(cfg.LLPs, transport.SCTPPion) {
		res.Rows = append(res.Rows, measureRawStacks(cfg)...)
	}
	if !cfg.NoSecure {
		res.Rows = append(res.Rows, measureSecure(cfg)...)
	}
	for _, llp := range cfg.LLPs {
		rows, curves := measureLLP(cfg, llp)
		res.Rows = append(res.Rows, rows...)
		res.Curves = append(res.Curves, curves...)
	}
	res.Took = time.Since(start)
	res.Machine.LoadAvgEnd = loadAvg()
	return res
}

func (c *Config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// server is an in-process bench server on loopback.
type server struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// Default depths of Config.
const (
	// DefaultDepth is the single-stream depth: 128 operations (8 MiB of
	// 64 KiB messages) in flight, perftest's default for its bandwidth
	// tests (tx-depth 128; ib_read_bw keeps the device's maximum
	// outstanding, 128 on siw). A Read's window is its ORD times its
	// size: a smaller one measures the window, not the protocol
	// (docs/benchmarks-notes.md, "Depth of the throughput rows").
	DefaultDepth = 128
	// defaultStreamDepth is the multistream measurements' depth (16 for
	// one stream, 4 per stream for many).
	defaultStreamDepth = 16
)

func startServer(llp string) (*server, error) {
	return startServerOpts(transport.Options{LLP: llp, IRD: ServerIRD})
}

// ServerIRD is the inbound Read queue depth the harness's bench servers
// offer (RFC 6581 §9.1): bench.MaxDepth, so that a client's ORD follows
// its depth (rdmaRunOpts) up to the largest depth bench allows; siw offers
// 128 too (SIW_MAX_IRD_QP), and ib_read_bw takes the device's maximum as
// its outstanding Reads.
const ServerIRD = bench.MaxDepth

// startServerOpts is startServer with the listener's options.
func startServerOpts(o transport.Options) (*server, error) {
	return startServerIn(o, "127.0.0.1:0", func(fn func() error) error { return fn() })
}

// startServerIn starts a bench server listening on addr; in runs the
// listen call (in a network namespace, for the WAN mode).
func startServerIn(o transport.Options, addr string, in func(func() error) error) (*server, error) {
	var ln *transport.Listener
	if err := in(func() (err error) {
		ln, err = transport.Listen(o, addr)
		return err
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{addr: ln.Addr(), cancel: cancel, done: make(chan error, 1)}
	srv := bench.NewServer(bench.ServerConfig{})
	go func() { s.done <- srv.Run(ctx, ln) }()
	return s, nil
}

func (s *server) stop() { s.cancel(); <-s.done }

func newRaw(llp string) (rawPair, error) {
	if llp == transport.MPA {
		return newRawTCP()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return newRawSCTP(ctx, llp, 0)
}

func gbps(b int64, d time.Duration) float64 { return float64(b) * 8 / d.Seconds() / 1e9 }

// rdmaRun runs one bench test against srv and returns the result.
// rttChunks is the number of alternated raw and RDMA parts of a run's
// round-trip measurement (measureLLP).
const rttChunks = 8

func rdmaRun(srv *server, llp string, t bench.Test, size, streams, depth int, iters uint64, lat bool) (*bench.Result, error) {
	return rdmaRunOpts(srv, transport.Options{LLP: llp}, t, size, streams, depth, iters, lat)
}

// rdmaRunOpts is rdmaRun with the client's options.
// The client's ORD is the depth (at least rdmap's default): with a depth
// of D, D Reads may be outstanding, as every other operation may.
func rdmaRunOpts(srv *server, o transport.Options, t bench.Test, size, streams, depth int, iters uint64, lat bool) (*bench.Result, error) {
	if o.ORD == 0 {
		o.ORD = max(depth, iwarp.DefaultORD)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return bench.Run(ctx, bench.Config{Transport: o, Addr: srv.addr, Test: t, Size: size,
		Streams: streams, Depth: depth, Iters: iters, Latency: lat})
}

// rdmaRunBuffers runs a one-stream Write that cycles through buffers
// buffers on both sides (bench.Config.Buffers).
func rdmaRunBuffers(srv *server, llp string, size, depth int, iters uint64, buffers int) (*bench.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return bench.Run(ctx, bench.Config{Transport: transport.Options{LLP: llp, ORD: max(depth, iwarp.DefaultORD)}, Addr: srv.addr,
		Test: bench.TestWrite, Size: size, Streams: 1, Depth: depth, Iters: iters, Buffers: buffers})
}

func measureLLP(cfg Config, llp string) ([]Row, []Curve) {
	name := fmt.Sprintf("%dK", cfg.Size>>10)
	// The targets of issues 17 (sctp-native) and 21 (every LLP).
	writeTarget, rttTarget := "≥ 0.90", "≤ 1.10"
	switch llp {
	case transport.SCTPNative:
		writeTarget = "≥ 0.95"
	case transport.MPA:
		rttTarget = "≤ 1.20"
	}
	rows := []Row{
		{LLP: llp, Metric: "RDMA Write " + name + " throughput vs raw LLP", Unit: "Gbit/s", Target: writeTarget},
		{LLP: llp, Metric: "RDMA Read " + name + " throughput vs raw LLP (server to client, the data's direction)", Unit: "Gbit/s", Target: "≥ 0.90"},
		{LLP: llp, Metric: "Send " + name + " throughput vs raw LLP", Unit: "Gbit/s", Target: "≥ 0.90"},
		{LLP: llp, Metric: fmt.Sprintf("Send %d B ping-pong median RTT vs raw LLP", cfg.PingSize), Unit: "µs", Target: rttTarget},
		{LLP: llp, Metric: fmt.Sprintf("RDMA Write %s, %d streams vs 1 stream", name, cfg.ManyStreams), Unit: "Gbit/s", Target: "≥ 0.95"},
		{LLP: llp, Metric: "memory per idle stream (both ends, beyond the association's own)", Unit: "KiB"},
		// The row above with the working set held equal: what the streams
		// themselves cost (see oneBufBW below). No target of its own.
		{LLP: llp, Metric: fmt.Sprintf("RDMA Write %s, %d streams vs 1 stream cycling through %d buffers (the same memory)", name, cfg.ManyStreams, cfg.ManyStreams), Unit: "Gbit/s"},
	}
	fail := func(err error) ([]Row, []Curve) {
		for i := range rows {
			if rows[i].Err == nil {
				rows[i].Err = err
			}
		}
		return rows, nil
	}
	srv, err := startServer(llp)
	if err != nil {
		return fail(err)
	}
	defer srv.stop()
	msrv := srv // the multistream figures' server
	if cfg.Server != nil && llp != transport.SCTPKernel {
		addr, stop, err := cfg.Server(llp)
		if err != nil {
			return fail(fmt.Errorf("server process: %w", err))
		}
		defer stop()
		msrv = &server{addr: addr}
		rows[4].Metric += " (server in its own process)"
		rows[6].Metric += " (server in its own process)"
	}
	raw, err := newRaw(llp)
	if err != nil {
		return fail(err)
	}
	defer raw.close()
	// Idle memory first, before the bulk runs leave garbage behind.
	// At least 128 streams: the difference of two heaps moves by a few
	// hundred KiB with what other goroutines are doing, which 32 streams
	// of under 4 KiB each do not outweigh.
	// The median of idleSamples measurements: one moves between harness
	// runs, more over MPA and pion once their idle readers park, with no
	// stacks left to count.
	var kibs []float64
	for range idleSamples {
		kib, err := idleStreamMemory(srv, llp, max(cfg.ManyStreams, idleStreams))
		if err != nil {
			rows[5].Err = err
			break
		}
		kibs = append(kibs, kib)
	}
	if rows[5].Err == nil {
		rows[5].Value = median(kibs)
	}
	iters := uint64(max(cfg.Bytes/int64(cfg.Size), 1))
	total := int64(iters) * int64(cfg.Size)
	var rawBW, rawRevBW, rawSendBW, wBW, rBW, sBW, rawRTT, sRTT, oneBW, oneBufBW, manyBW []float64
	for run := 0; run < cfg.Runs; run++ {
		// Each RDMA throughput follows its own raw measurement at once:
		// the raw LLP's speed drifts on a shared host, and a reference
		// taken measurements earlier can pair a fast raw run with a slow
		// RDMA one (docs/benchmarks-notes.md). A Read's data goes from
		// the server (the responder) to the client: its reference is the
		// raw flow that way.
		for _, m := range []struct {
			t        bench.Test
			reverse  bool
			raw, out *[]float64
		}{{bench.TestWrite, false, &rawBW, &wBW}, {bench.TestRead, true, &rawRevBW, &rBW}, {bench.TestSend, false, &rawSendBW, &sBW}} {
			move, dir := raw.throughput, ""
			if m.reverse {
				move, dir = raw.reverse, ", server to client"
			}
			d, err := move(cfg.Size, total)
			if err != nil {
				return fail(fmt.Errorf("raw throughput%s: %w", dir, err))
			}
			*m.raw = append(*m.raw, gbps(total, d))
			r, err := rdmaRun(srv, llp, m.t, cfg.Size, 1, cfg.Depth, iters, false)
			if err != nil {
				return fail(fmt.Errorf("%v: %w", m.t, err))
			}
			*m.out = append(*m.out, r.Forward.Gbps())
		}
		// The round trips alternate raw and RDMA in rttChunks parts:
		// on this host a ping-pong settles for a while into one of two
		// speeds (whether its goroutines share a processor), and one
		// part each would pair a fast raw with a slow RDMA part as often
		// as not. The row's figures are the medians of the parts', its
		// ratio the median of each RDMA part's over the raw part before it.
		chunk := max(cfg.PingIters/rttChunks, 1)
		for range rttChunks {
			s, err := raw.rtt(cfg.PingSize, chunk)
			if err != nil {
				return fail(fmt.Errorf("raw round trip: %w", err))
			}
			slices.Sort(s)
			rawRTT = append(rawRTT, float64(s[len(s)/2])/1e3)
			r, err := rdmaRun(srv, llp, bench.TestSend, cfg.PingSize, 1, 1, uint64(chunk), true)
			if err != nil {
				return fail(fmt.Errorf("send ping-pong: %w", err))
			}
			sRTT = append(sRTT, float64(r.Forward.Lat.Median)/1e3)
		}
		rttRun := func(v []float64) float64 { return median(v[len(v)-rttChunks:]) }
		if msrv == srv && cfg.StreamDepth == cfg.Depth {
			oneBW = append(oneBW, wBW[len(wBW)-1])
		} else {
			r, err := rdmaRun(msrv, llp, bench.TestWrite, cfg.Size, 1, cfg.StreamDepth, iters, false)
			if err != nil {
				return fail(fmt.Errorf("1 stream, server process: %w", err))
			}
			oneBW = append(oneBW, r.Forward.Gbps())
		}
		// One stream over as many buffers as the streams below have
		// (bench.Config.Buffers): the same 2 x 16 MiB of source and sink
		// for 256 streams of 64 KiB, where one stream of one buffer keeps
		// both in the processor's second-level cache. The many-stream
		// row against this one is what the streams cost, without what
		// their memory costs the caches.
		r, err := rdmaRunBuffers(msrv, llp, cfg.Size, cfg.StreamDepth, iters, cfg.ManyStreams)
		if err != nil {
			return fail(fmt.Errorf("1 stream over %d buffers: %w", cfg.ManyStreams, err))
		}
		oneBufBW = append(oneBufBW, r.Forward.Gbps())
		// At least 64 operations per stream, so that the streams that
		// finish last (each with a quarter of the depth) are a small
		// part of the run.
		per := max(iters/uint64(cfg.ManyStreams), 64)
		r, err = rdmaRun(msrv, llp, bench.TestWrite, cfg.Size, cfg.ManyStreams, max(cfg.StreamDepth/4, 1), per, false)
		if err != nil {
			return fail(fmt.Errorf("%d streams: %w", cfg.ManyStreams, err))
		}
		manyBW = append(manyBW, r.Forward.Gbps())
		cfg.logf("%s run %d: raw %.2f Gbit/s, write %.2f, raw server to client %.2f, read %.2f, raw %.2f, send %.2f, raw rtt %.1f µs, send rtt %.1f µs, 1 stream %.2f, 1 stream over %d buffers %.2f, %d streams %.2f",
			llp, run+1, rawBW[run], wBW[run], rawRevBW[run], rBW[run], rawSendBW[run], sBW[run], rttRun(rawRTT), rttRun(sRTT), oneBW[run], cfg.ManyStreams, oneBufBW[run], cfg.ManyStreams, manyBW[run])
	}
	set := func(i int, base, v []float64, lower bool) {
		rows[i].Base, rows[i].Value = median(base), median(v)
		rows[i].Ratio = pairedRatio(base, v)
		var goal float64
		if rows[i].Target != "" {
			fmt.Sscanf(strings.Fields(rows[i].Target)[1], "%g", &goal)
			if lower {
				rows[i].Met = rows[i].Ratio <= goal
			} else {
				rows[i].Met = rows[i].Ratio >= goal
			}
		}
	}
	set(0, rawBW, wBW, false)
	set(1, rawRevBW, rBW, false)
	set(2, rawSendBW, sBW, false)
	set(3, rawRTT, sRTT, true)
	set(4, oneBW, manyBW, false)
	set(6, oneBufBW, manyBW, false)
	if cfg.NoSweep {
		return rows, nil
	}
	return rows, measureSweeps(&cfg, llp, srv, msrv, raw)
}

// idleStreams is the least number of streams the idle-memory row opens.
const idleStreams = 128

// idleSamples is how many times the idle-memory row measures (median).
const idleSamples = 3

// idleStreamMemory returns what one more idle stream costs, heap and
// stacks of client and server in this process together, in KiB: the
// growth with n+1 streams on one association (one connection each for
// mpa) less the growth with 1, over n, so that the association's own
// state (its buffers and tables, about 500 KiB for sctp-native) is not
// spread over the streams.
func idleStreamMemory(srv *server, llp string, n int) (float64, error) {
	one, err := dialGrowth(srv, llp, 1)
	if err != nil {
		return 0, err
	}
	many, err := dialGrowth(srv, llp, n+1)
	if err != nil {
		return 0, err
	}
	return float64(many-one) / float64(n) / 1024, nil
}

// dialGrowth opens n idle streams, each with a receive posted, and
// returns the growth of heap and stacks in octets once both ends settled.
func dialGrowth(srv *server, llp string, n int) (int64, error) {
	var before, after runtime.MemStats
	// What went before (another LLP, a previous dial) goes away
	// asynchronously: collect until the heap stops shrinking, so that its
	// release is not counted against this one.
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		time.Sleep(20 * time.Millisecond)
		runtime.GC()
		prev := before.HeapAlloc
		runtime.ReadMemStats(&before)
		if before.HeapAlloc >= prev-prev/100 {
			break
		}
	}
	pd := new(rdmap.Device).AllocPD()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := transport.Dial(ctx, transport.Options{LLP: llp, PrivateData: []byte(bench.Hello)}, srv.addr, n, pd,
		func(ep *rdmap.Endpoint) error { return ep.PostRecv(1, make([]byte, 128)) })
	if err != nil {
		return 0, err
	}
	// Let both sides settle: the server's side of the opening, and over
	// sctp-pion the stream readers, which end 100 ms after the last
	// message (sctpllp/pion readerIdle).
	time.Sleep(300 * time.Millisecond)
	// One collection: settling here as above also collected what earlier
	// runs were still tearing down, and with 32 MPA streams under load the
	// difference came out negative (seen in CI).
	runtime.GC()
	runtime.ReadMemStats(&after)
	_ = cl.Close(ctx)
	return int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse), nil
}
