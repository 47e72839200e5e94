package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// Config configures one client run: one test at one message size.
type Config struct {
	// Transport selects the LLP and its options.
	Transport transport.Options
	// Addr is the server's address.
	Addr string
	// Test is the operation measured.
	Test Test
	// Size is the message size (8 for atomics).
	Size int
	// Streams is the number of streams per direction (default 1).
	Streams int
	// Depth is the number of operations in flight per stream (default 16;
	// 1 in latency mode).
	Depth int
	// RxDepth is the number of receive buffers the server posts per
	// stream for bandwidth Sends and Writes with Immediate, the active
	// side's credit window (perftest's rx depth; Setup.RxDepth); 0:
	// DefaultRxDepth. At most MaxRxDepth.
	RxDepth int
	// Buffers makes each stream cycle through this many buffers of Size
	// on both sides, operation i using buffer i mod Buffers (Setup.Buffers):
	// one stream then touches the memory of Buffers streams, which
	// separates what many streams cost from what their buffers cost the
	// caches. 0 or 1: one buffer per stream, as perftest has for messages
	// above half a page. At most MaxBuffers; not for TestPing.
	Buffers int
	// Iters (default 1000 when Duration is 0) or Duration ends the run.
	Iters    uint64
	Duration time.Duration
	// Latency selects the latency variant (ping-pong, one in flight).
	Latency bool
	// Events makes both sides of a Send or Write-with-Immediate ping-pong,
	// and the receiving side of a bandwidth Send or Write with Immediate,
	// wait for each completion in the test's goroutine (perftest's -e)
	// instead of taking it in a CQ handler where it is made (Setup's
	// flagEvents).
	Events bool
	// Inline posts Sends, Writes and Writes with Immediate of at most this
	// many octets inline (rdmap.SendWR.Inline, perftest's -I); 0: never.
	// At most 256, rdmap's inline limit.
	Inline int
	// PostList posts the operations of a bandwidth run in lists of this
	// many: once that many of the depth are free, they go with one
	// Endpoint.PostSend (perftest's --post_list); the last list of a run
	// may be shorter. 0: automatic, a quarter of the depth for the runs
	// that take their completions in a CQ handler (Read and the atomics:
	// the responder then wakes once per list, not once per request), 1 for
	// the others. At most MaxDepth; larger than the depth counts as the
	// depth.
	PostList int
	// CQMod asks, in a bandwidth run of the client's streams, for a
	// completion of every CQMod-th operation and of the run's last only
	// (perftest's -Q; the others are rdmap.SendWR.Unsignaled; with
	// Duration the last of each list too): a completion completes the
	// operations posted before it (RFC 5040 §5.5), each timed there. 0 or
	// 1: every operation; at most Depth less the post list plus one (a full
	// window less one list must hold a signalled operation), more counts
	// as that. Ignored in latency mode, by ping and by reverse streams.
	CQMod int
	// Bidir adds, per stream, a reverse stream on which the server is the
	// active side.
	Bidir bool
	// ConnectTimeout bounds connection set-up (default 10 s).
	ConnectTimeout time.Duration
	// StallTimeout ends the run with ErrPeerUnresponsive when no
	// operation completes for that long (default DefaultStallTimeout;
	// negative: never): a frozen or vanished peer ends a run within its
	// duration plus this grace, whatever the LLP would take to notice.
	StallTimeout time.Duration
	// Counters, if not nil, counts completed operations as they happen.
	Counters *Counters
	// OnPing, if not nil, is called after every verified ping iteration.
	OnPing func(PingLine)
}

func (c *Config) defaults() error {
	if c.Streams <= 0 {
		c.Streams = 1
	}
	if c.Depth <= 0 {
		c.Depth = 16
	}
	if c.Latency || c.Test == TestPing {
		c.Depth = 1
	}
	if c.Iters == 0 && c.Duration <= 0 {
		c.Iters = 1000
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = StallTimeoutFor(c.Transport.LLP)
	}
	if c.Test.Atomic() {
		c.Size = 8
	}
	s := c.setup(false)
	return s.Validate()
}

// EffectiveCQMod is CQMod as a run of c.Test applies it: clamped to the
// depth less the post list plus one, and 1 (every operation asks for a
// completion) in latency mode and for ping.
func (c Config) EffectiveCQMod() int {
	_ = c.defaults() // the depth's; a size not chosen yet does not matter
	return int((&conn{setup: c.setup(false), cqMod: clampDepth(c.CQMod), postList: clampDepth(c.PostList)}).cqModulus())
}

// clampDepth is n within 0..MaxDepth (Config.PostList, Config.CQMod: more
// than the depth counts as the depth).
func clampDepth(n int) int16 { return int16(min(max(n, 0), MaxDepth)) }

// Receive windows of DefaultRxDepth.
const (
	// rxWindow is what a raw LLP buffers between its writer and its
	// reader: sctp-native's 4 MiB send and 4 MiB receive buffers (Linux
	// TCP's autotuned buffers are larger still).
	rxWindow      = 8 << 20
	rxWindowTotal = 256 << 20 // all streams of a run together
)

// DefaultRxDepth is the receive depth of a credited test when
// Config.RxDepth is 0: enough buffers of size octets for an 8 MiB window
// per stream, what the raw LLP holds between writer and reader (its send
// and receive buffers), so that Sends are measured against a raw stream
// with the same buffering, not an eighth of it; at least depth, at most
// MaxRxDepth; with many streams, at most 256 MiB of buffers together (but
// never below depth).
func DefaultRxDepth(size, depth, streams int) int {
	size, streams = max(size, 1), max(streams, 1)
	n := min(max((rxWindow+size-1)/size, depth), MaxRxDepth)
	if total := rxWindowTotal / streams / size; n > total {
		n = max(total, depth)
	}
	return min(n, MaxRxDepth)
}

func (c *Config) setup(reverse bool) setupMsg {
	s := setupMsg{Test: c.Test, Size: uint32(c.Size), Depth: uint32(c.Depth), Iters: c.Iters, Duration: c.Duration.Truncate(time.Millisecond), Buffers: uint16(min(max(c.Buffers, 0), MaxBuffers+1))}
	if !c.Latency && (c.Test == TestSend || c.Test == TestWriteImm) {
		rx := c.RxDepth
		if rx <= 0 {
			rx = DefaultRxDepth(c.Size, c.Depth, c.Streams)
		}
		s.RxDepth = uint32(rx)
	}
	if s.Iters > 0 {
		s.Duration = 0
	}
	if reverse {
		s.Flags |= flagReverse
	}
	if c.Latency {
		s.Flags |= flagLatency
	}
	if c.Events {
		s.Flags |= flagEvents
	}
	return s
}

// StreamResult is the outcome of one stream.
type StreamResult struct {
	// Stream is the stream's index (1-based); Reverse marks a stream on
	// which the server measured (Bidir).
	Stream  int
	Reverse bool
	Report
	Err error
	// Start and End bound the measured phase on this host's clock (zero
	// for reverse streams, which the server measured).
	Start, End time.Time
}

// Gbps returns the stream's payload throughput in Gbit/s.
func (r *StreamResult) Gbps() float64 { return gbps(r.Bytes, r.Elapsed) }

// MsgRate returns the stream's operations per second.
func (r *StreamResult) MsgRate() float64 { return rate(r.Ops, r.Elapsed) }

// PeakGbps is the stream's BW peak (Aggregate.PeakGbps), 0 when not
// measured; a reverse stream's is the server's (Report.PeakGbps).
func (r *StreamResult) PeakGbps() float64 {
	if r.Ops == 0 {
		return 0
	}
	if r.times == nil {
		return r.Report.PeakGbps
	}
	return peakGbps([]StreamResult{*r}, r.Bytes/r.Ops)
}

// Result is the outcome of a run.
type Result struct {
	Test    Test
	LLP     string
	Size    int
	Streams int
	Depth   int
	// RxDepth is the credited tests' receive depth (Setup.RxDepth), 0
	// for the others.
	RxDepth int
	// Buffers is how many buffers each stream cycled through
	// (Config.Buffers, Setup.Buffers): 1 by default.
	Buffers int
	// CQMod is the forward streams' effective Config.CQMod: 1 when every
	// operation asked for a completion.
	CQMod   int
	Latency bool
	Bidir   bool
	MULPDU  int
	// PerStream lists every stream, forward ones first.
	PerStream []StreamResult
	// Forward and Reverse aggregate the streams of each direction: octets
	// and operations summed, Elapsed the longest stream's, Lat the
	// smallest minimum, the median of the medians, the largest p99 and the
	// largest maximum.
	Forward, Reverse Aggregate
}

// Aggregate sums the streams of one direction.
type Aggregate struct {
	Streams int
	Ops     uint64
	Bytes   uint64
	Elapsed time.Duration
	Lat     Latency
	// PeakGbps is perftest's BW peak (bench/peak.go) in Gbit/s; 0 when
	// not measured (timed runs, runs above peakMaxIters, the streams the
	// server measured).
	PeakGbps float64
}

// Gbps returns the aggregate payload throughput in Gbit/s.
func (a *Aggregate) Gbps() float64 { return gbps(a.Bytes, a.Elapsed) }

// MsgRate returns the aggregate operations per second.
func (a *Aggregate) MsgRate() float64 { return rate(a.Ops, a.Elapsed) }

func gbps(b uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(b) * 8 / d.Seconds() / 1e9
}

func rate(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func aggregate(rs []StreamResult) Aggregate {
	var a Aggregate
	var lats []Latency
	var first, last time.Time
	span := true
	for _, r := range rs {
		if r.Err != nil && r.Ops == 0 {
			continue // failed before measuring anything
		}
		a.Streams++
		a.Ops += r.Ops
		a.Bytes += r.Bytes
		a.Elapsed = max(a.Elapsed, r.Elapsed)
		if r.Start.IsZero() {
			span = false
		} else {
			if first.IsZero() || r.Start.Before(first) {
				first = r.Start
			}
			if r.End.After(last) {
				last = r.End
			}
		}
		lats = append(lats, r.Lat)
	}
	if span && a.Streams > 1 {
		// Streams start at slightly different times: the aggregate rate
		// is over the span from the first start to the last end.
		a.Elapsed = max(a.Elapsed, last.Sub(first))
	}
	a.Lat = combine(lats)
	if a.Ops > 0 {
		a.PeakGbps = peakGbps(rs, a.Bytes/a.Ops)
		if a.Streams == 1 && a.PeakGbps == 0 {
			// One stream the server measured: its own figure. Over
			// several, per-stream peaks do not make perftest's merged one.
			for _, r := range rs {
				if r.Err == nil || r.Ops > 0 {
					a.PeakGbps = r.Report.PeakGbps
				}
			}
		}
	}
	if merged := mergeHists(rs); merged != nil {
		a.Lat = merged.summary() // exact percentiles when this host measured every stream
	}
	return a
}

// DefaultStallTimeout is Config.StallTimeout's default over MPA, whose
// TCP retransmits a lost segment within a few hundred milliseconds.
const DefaultStallTimeout = 3 * time.Second

// SCTPStallTimeout is Config.StallTimeout's default over the SCTP LLPs.
// A lost DATA chunk waits for T3-rtx, whose timer doubles at each expiry
// (RFC 9260 §6.3.3 E2), from RTO.Initial, 1 s, until the association has
// measured a round trip (§6.3.1 C1; a new association's first packets),
// and from RTO.Min, 1 s, in pion (where it cannot be set) and the kernel:
// two expiries back to back take 3 s, DefaultStallTimeout, for a peer
// that is alive. 8 s outlasts three (1 + 2 + 4 s).
const SCTPStallTimeout = 8 * time.Second

// StallTimeoutFor is Config.StallTimeout's default for the lower layer
// named llp (transport.Options.LLP; "" is the default, sctp-native).
func StallTimeoutFor(llp string) time.Duration {
	if llp == transport.MPA {
		return DefaultStallTimeout
	}
	return SCTPStallTimeout
}

// ErrPeerUnresponsive ends a run in which no operation completed for
// Config.StallTimeout.
var ErrPeerUnresponsive = errors.New("peer unresponsive")

// watchProgress cancels ctx with ErrPeerUnresponsive once ops has not
// moved for stall in the measured phase (after started is closed), or for
// setup (the connection time limit) before it; it returns a stop
// function.
func watchProgress(ctx context.Context, cancel context.CancelCauseFunc, ops *atomic.Uint64, started <-chan struct{}, setup, stall time.Duration) func() {
	if stall < 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(stall/4, 250*time.Millisecond))
		defer tick.Stop()
		last, since := ops.Load(), time.Now()
		limit, what := max(setup, stall), "the stream set-up did not finish"
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-started:
				started = nil
				limit, what, since = stall, "no operation completed", time.Now()
			case now := <-tick.C:
				if v := ops.Load(); v != last {
					last, since = v, now
				} else if now.Sub(since) >= limit {
					cancel(fmt.Errorf("%w for %v (%s)", ErrPeerUnresponsive, limit, what))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// Run connects to the server, runs the test on every stream at once and
// closes the streams gracefully. The error is non-nil if set-up failed or
// any stream failed; the Result then holds what did complete.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// Progress is counted whether or not the caller asked for counters,
	// for the stall watchdog.
	if cfg.Counters == nil {
		cfg.Counters = &Counters{}
	}
	n := cfg.Streams
	if cfg.Bidir {
		n *= 2
	}
	pd := new(rdmap.Device).AllocPD()
	var mu sync.Mutex
	conns := make(map[*rdmap.Endpoint]*conn)
	prepare := func(ep *rdmap.Endpoint) error {
		c := newConn(ep)
		c.ctr = cfg.Counters
		c.inline = cfg.Inline
		c.postList = clampDepth(cfg.PostList)
		c.cqMod = clampDepth(cfg.CQMod)
		c.peak = cfg.wantPeak()
		if err := c.post(ctrlLen); err != nil { // the server's Advert
			return err
		}
		mu.Lock()
		conns[ep] = c
		mu.Unlock()
		return nil
	}
	opts := cfg.Transport
	opts.PrivateData = []byte(Hello)
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	cl, err := transport.Dial(dctx, opts, cfg.Addr, n, pd, prepare)
	timedOut := errors.Is(dctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		if timedOut && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer from %s within %v: %w", cfg.Addr, cfg.ConnectTimeout, err)
		}
		return nil, err
	}
	res := &Result{Test: cfg.Test, LLP: opts.LLP, Size: cfg.Size, Streams: cfg.Streams, Depth: cfg.Depth,
		RxDepth: int(cfg.setup(false).RxDepth), Buffers: cfg.setup(false).buffers(), CQMod: cfg.EffectiveCQMod(), Latency: cfg.Latency, Bidir: cfg.Bidir, MULPDU: cl.MULPDU, PerStream: make([]StreamResult, n)}
	if res.LLP == "" {
		res.LLP = transport.LLPs()[0].Name
	}
	rctx, rcancel := context.WithCancelCause(ctx)
	defer rcancel(nil)
	var wg sync.WaitGroup
	start := newBarrier(len(cl.Endpoints))
	stopWatch := watchProgress(rctx, rcancel, &cfg.Counters.Ops, start.all, cfg.ConnectTimeout, cfg.StallTimeout)
	for i, ep := range cl.Endpoints {
		c := conns[ep]
		c.onPing = cfg.OnPing
		if cfg.OnPing != nil {
			idx := i + 1
			c.onPing = func(l PingLine) { l.Stream = idx; cfg.OnPing(l) }
		}
		sr := &res.PerStream[i]
		sr.Stream, sr.Reverse = i%cfg.Streams+1, i >= cfg.Streams
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr.Report, sr.Err = runStream(rctx, c, cfg.setup(sr.Reverse), start)
			if cause := context.Cause(rctx); sr.Err != nil && cause != nil && ctx.Err() == nil {
				sr.Err = cause // the watchdog's verdict, not "context canceled"
			}
			if errors.Is(sr.Err, rdmap.ErrPeerClosed) || errors.Is(sr.Err, llp.ErrClosed) {
				// Only a server that stops closes a stream before the
				// client does (RFC 5040 §6.2 graceful termination); an
				// operation posted meanwhile finds the LLP stream closed.
				sr.Err = ErrServerEnded
			}
			sr.Start, sr.End = c.span()
			if sr.Err != nil {
				_ = c.ep.Abort()
			}
		}()
	}
	wg.Wait()
	stopWatch()
	for i := range res.PerStream {
		res.PerStream[i].settle() // summarised now that every stream has ended
	}
	var cerr error
	if errors.Is(context.Cause(rctx), ErrPeerUnresponsive) {
		if note := assocNote(cl); note != "" {
			for i := range res.PerStream {
				if r := &res.PerStream[i]; errors.Is(r.Err, ErrPeerUnresponsive) {
					r.Err = fmt.Errorf("%w; %s", r.Err, note)
				}
			}
		}
		cl.Abort() // a graceful close would wait for the frozen peer
	} else {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cerr = cl.Close(cctx)
		cancel()
	}
	for _, c := range conns {
		c.release()
	}
	var errs []error
	var fwd, rev []StreamResult
	ended := false
	for _, r := range res.PerStream {
		ended = ended || errors.Is(r.Err, ErrServerEnded)
		if r.Err != nil {
			dir := ""
			if r.Reverse {
				dir = " (reverse)"
			}
			errs = append(errs, fmt.Errorf("stream %d%s: %w", r.Stream, dir, r.Err))
		}
		if r.Reverse {
			rev = append(rev, r)
		} else {
			fwd = append(fwd, r)
		}
	}
	res.Forward, res.Reverse = aggregate(fwd), aggregate(rev)
	if ended {
		// One line: the other streams' errors follow from it.
		return res, ErrServerEnded
	}
	if len(errs) == 0 && cerr != nil {
		errs = append(errs, fmt.Errorf("close: %w", cerr))
	}
	return res, errors.Join(errs...)
}

// assocNote describes the client's SCTP association for a stalled run:
// whether its stack was retransmitting (a lost packet waits for T3-rtx,
// RTO.Min 1 s, doubled on each expiry: RFC 9260 §6.3.3) or had nothing to
// resend. "" over MPA.
func assocNote(cl *transport.Client) string {
	st, ok := cl.AssocStats()
	if !ok {
		return ""
	}
	t := st.Transport
	var b strings.Builder
	b.WriteString("this end's SCTP association:")
	if t.HasRetransmissions {
		fmt.Fprintf(&b, " %d DATA chunks retransmitted", t.Retransmissions)
	}
	if t.HasSRTT {
		fmt.Fprintf(&b, ", SRTT %v", t.SRTT)
	}
	for _, p := range t.Paths {
		fmt.Fprintf(&b, ", path %v %s RTO %v cwnd %d errors %d", p.Addr, p.State, p.RTO, p.Cwnd, p.Errors)
	}
	fmt.Fprintf(&b, ", %d octets held", st.HeldBytes)
	return b.String()
}

// ErrServerEnded ends a run the server stopped serving (its serve command
// was told to stop): its Report said so, or it closed the streams.
var ErrServerEnded = errors.New("the server ended the run")

// errRefused is wrapped when the server's Advert or Report carries a
// non-zero Status.
var errRefused = errors.New("server refused")

// barrier holds every stream of a run until all have finished their
// set-up exchange, so that the measured phase of every stream starts
// together: with many streams on one association, the Setup and Advert
// messages of late streams otherwise queue behind the bulk data of early
// ones, starts spread over hundreds of milliseconds and the aggregate
// (first start to last end) measures the stagger, not the streams.
type barrier struct {
	left atomic.Int64
	all  chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{all: make(chan struct{})}
	b.left.Store(int64(n))
	return b
}

// arrive counts one stream in (also one that failed before the barrier,
// so that the others are not held for ever).
func (b *barrier) arrive() {
	if b.left.Add(-1) == 0 {
		close(b.all)
	}
}

// runStream is the client side of one stream's exchange (docs/cli.md).
// It passes start (arriving exactly once) after the server's Advert.
func runStream(ctx context.Context, c *conn, s setupMsg, start *barrier) (Report, error) {
	arrived := false
	defer func() {
		if !arrived {
			start.arrive()
		}
	}()
	c.setup = s
	if err := c.sendMsg(ctx, &s); err != nil {
		return Report{}, fmt.Errorf("setup: %w", err)
	}
	b, err := c.recvMsg(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("waiting for the server's advert: %w", err)
	}
	adv, _, err := parseAdvert(b)
	if err != nil {
		return Report{}, err
	}
	if adv.Status != statusOK {
		return Report{}, fmt.Errorf("%w: %v", errRefused, adv.Status)
	}
	if adv.Length < uint64(bufLen(s)) {
		return Report{}, fmt.Errorf("server advertised %d octets, the test needs %d", adv.Length, bufLen(s))
	}
	c.peer = peerBuffer{STag: adv.STag, Length: adv.Length}
	active := !s.Reverse()
	if err := c.prepareData(active); err != nil {
		return Report{}, err
	}
	arrived = true
	start.arrive()
	select {
	case <-start.all:
	case <-ctx.Done():
		return Report{}, ctx.Err()
	}
	if err := c.sendMsg(ctx, &advertMsg{Region: regionOf(c.mr)}); err != nil {
		return Report{}, err
	}
	var mine Report
	if active {
		mine, err = c.active(ctx)
		c.end = time.Since(runEpoch)
		c.start = c.end - mine.Elapsed
	} else {
		mine, err = c.passive(ctx)
	}
	if err != nil {
		return mine, err
	}
	if b, err = c.recvMsg(ctx); err != nil {
		return mine, fmt.Errorf("waiting for the server's report: %w", err)
	}
	theirs, _, err := parseReport(b)
	if err != nil {
		return mine, err
	}
	if theirs.Status != statusOK {
		return mine, theirs.Status.err()
	}
	if active {
		return mine, nil
	}
	return theirs, nil
}
