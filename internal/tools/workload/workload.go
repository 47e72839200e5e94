// Package workload is the verification workload shared by the end-to-end
// suite (e2e), `sctp-rdma demo` (internal/tools/demo) and `make soak`
// (internal/tools/soak): over one SCTP association, many DDP streams each run
// every RDMAP operation (RFC 5040 §5, RFC 7306 §5, §6) with random or
// configured sizes, and every octet is verified at both ends. One stream
// may be broken on purpose (an STag never advertised: the server answers
// with a Terminate, RFC 5041 §7.2) and streams killed at random times;
// every operation posted is accounted for as succeeded or flushed.
// Failures are plain errors in the Result; nothing here panics.
package workload

// What is verified: the client reads back what it wrote and checks every
// atomic's original value; the server regenerates every message it
// receives and compares it, checks the invalidation and the data of a
// Write with Immediate when its Immediate Data arrives, and reports its
// own reading of the atomic counter. A broken stream's tagged segment
// carries an STag the server never advertised: the server must answer
// with a Terminate "DDP layer, tagged buffer error, invalid STag" carrying
// the offending header (RFC 5040 §4.8), and the stream is labelled
// erroneous at both ends (RFC 5040 §7) while every other stream completes;
// a killed stream gets a local Abort (RFC 5040 §6.2.1) or such a segment
// and, in a run of fixed duration, is replaced by a fresh one.

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// Config sizes a Run. Zero fields take defaults.
type Config struct {
	// Streams is the number of streams running at once (default 8). The
	// first streams have IDs 1..Streams; a run of fixed Duration gives the
	// replacement of a killed stream the next unused ID. Every ID must be
	// below both associations' NumStreams.
	Streams int
	// MaxSize is the largest operation size of the default Sizes
	// (default 64 KiB).
	MaxSize int
	// Sizes gives the range lo..hi of the operation sizes on stream id;
	// each operation draws its size from it (log-uniformly, with the
	// stream's random source). The server sizes its receive buffers and
	// target region by hi. Default 0..MaxSize.
	Sizes func(id uint16) (lo, hi int)
	// Rounds is how many times each stream runs the script of every
	// operation (default 1) when Duration is 0.
	Rounds int
	// Duration, if set, runs the streams until it has passed instead of
	// for Rounds; a killed stream is then replaced by a fresh one.
	Duration time.Duration
	// Random draws each operation at random instead of running the script
	// in order.
	Random bool
	// Break is the ID of the stream broken on purpose right after its
	// set-up (0: none).
	Break uint16
	// KillEvery, if set, is the mean interval between deliberate
	// terminations across all streams: each stream is killed after an
	// exponentially distributed time of mean KillEvery×Streams, by a local
	// Abort (even IDs) or a hostile segment (odd IDs).
	KillEvery time.Duration
	// Window is the number of receive buffers the server keeps posted per
	// stream (default 8, at least 2); the client syncs before it could run
	// out of them (RFC 5041 §7.1: a Send without a buffer is an error).
	Window int
	// Seed seeds every random choice (0: from the clock; see Result.Seed).
	Seed uint64
	// Name, if set, is sent as "<Name> stream <id>" in every stream's
	// private data.
	Name string
	// Progress, if set, is called every ProgressEvery (default 10 s) with
	// the counters so far.
	Progress      func(Totals)
	ProgressEvery time.Duration
}

func (c *Config) defaults() {
	if c.Streams <= 0 {
		c.Streams = 8
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 64 << 10
	}
	if c.Sizes == nil {
		maxSize := c.MaxSize
		c.Sizes = func(uint16) (int, int) { return 0, maxSize }
	}
	if c.Rounds <= 0 {
		c.Rounds = 1
	}
	if c.Window <= 0 {
		c.Window = 8
	}
	c.Window = max(c.Window, 2)
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10 * time.Second
	}
}

// Totals counts the operations of a run. Every operation the client posts
// (including the syncs) is counted Posted before and Completed after, as
// Succeeded or Flushed (an error: expected on a stream killed on purpose,
// a failure otherwise).
type Totals struct {
	Posted, Completed, Succeeded, Flushed uint64
	// Octets is the payload moved by the operations that succeeded.
	Octets uint64
	// Opened counts the streams opened, Killed those broken or killed on
	// purpose.
	Opened, Killed uint64
}

// OpNames lists the operation names of Result.Ops in script order.
var OpNames = []string{
	"write", "read", "send", "send-se", "send-inv", "send-se-inv",
	"fetch-add", "cmp-swap", "immediate", "write-imm", "read-counter", "sync",
}

// StreamResult is what happened on one stream.
type StreamResult struct {
	ID uint16
	// Size is the largest operation size of the stream.
	Size int
	// Ops and Octets count the client's operations that succeeded and
	// their payload.
	Ops    int
	Octets int64
	// Err is the client's verdict, ServerErr the server's: nil if every
	// operation succeeded and verified and the stream ended as intended.
	Err, ServerErr error
	// Broken marks the stream of Config.Break; Killed says how a random
	// kill ended the stream ("abort", "hostile segment"; empty if none).
	Broken bool
	Killed string
	// Erroneous and ServerErroneous report that the stream was labelled
	// erroneous (RFC 5040 §7) by the client's and the server's manager.
	Erroneous, ServerErroneous bool
	// Terminate is the Terminate the client received on a broken stream,
	// Injected the DDP header of the segment that provoked it.
	Terminate *rdmap.TerminateError
	Injected  []byte
	// ServerEnd is how the server's endpoint ended (its Err).
	ServerEnd error
	Elapsed   time.Duration
}

// Result is the outcome of a Run.
type Result struct {
	Totals
	// Ops counts the operations that succeeded by name (OpNames).
	Ops map[string]uint64
	// Streams holds one entry per stream opened or tried, by ID.
	Streams []StreamResult
	// AcceptErr is an error of the server's accept loop.
	AcceptErr error
	// ClientStats and ServerStats count each side's streams after the run.
	ClientStats, ServerStats SideStats
	// MULPDU is the smaller of the two associations' MULPDUs.
	MULPDU int
	// Seed is the seed in effect.
	Seed    uint64
	Elapsed time.Duration
}

// SideStats count one side's streams: Opened those the client opened,
// Erroneous those labelled erroneous (RFC 5040 §7).
type SideStats struct {
	Opened, Erroneous uint64
}

// Errs lists every failure of the run, each naming its stream.
func (r *Result) Errs() []error {
	var errs []error
	if r.AcceptErr != nil {
		errs = append(errs, r.AcceptErr)
	}
	for _, s := range r.Streams {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("stream %d: %w", s.ID, s.Err))
		}
		if s.ServerErr != nil {
			errs = append(errs, fmt.Errorf("stream %d (server side): %w", s.ID, s.ServerErr))
		}
	}
	return errs
}

// Err joins Errs: nil if every stream behaved as intended.
func (r *Result) Err() error { return errors.Join(r.Errs()...) }

// run is the shared state of one Run.
type run struct {
	cfg      Config
	cm, sm   *streams.Manager
	cpd, spd *rdmap.PD
	deadline time.Time // zero: Rounds
	nextID   atomic.Uint32

	posted, completed, succeeded, flushed, octets atomic.Uint64
	opened, killed                                atomic.Uint64

	mu    sync.Mutex
	ops   map[string]uint64
	plans map[uint16]*plan
}

// plan is what the client intends for one stream, shared with the server
// side (both run in this process) so that each can judge how the stream
// ended.
type plan struct {
	broken bool
	lo, hi int
	killed atomic.Bool // set before a kill is carried out
	server chan serverResult
}

// Run runs the workload over an established association pair: client is
// the side that opens the streams, server the side that accepts them;
// neither may carry a stream yet. It returns once every stream has ended
// on both sides; the associations are left as they are (without
// sctpllp.Config.KeepIdle they shut down by themselves once every stream
// is closed or erroneous, RFC 5040 §7). The error reports a configuration
// the associations cannot carry; what happened on the streams is in the
// Result.
func Run(ctx context.Context, client, server *sctpllp.Association, cfg Config) (*Result, error) {
	cfg.defaults()
	if n := min(client.NumStreams(), server.NumStreams()); cfg.Streams >= n {
		return nil, fmt.Errorf("workload: %d streams need stream IDs up to %d, the associations carry %d", cfg.Streams, cfg.Streams, n)
	}
	if int(cfg.Break) > cfg.Streams {
		return nil, fmt.Errorf("workload: Break %d is not one of the streams 1..%d", cfg.Break, cfg.Streams)
	}
	start := time.Now()
	dev := new(rdmap.Device)
	r := &run{cfg: cfg, cpd: dev.AllocPD(), spd: dev.AllocPD(), ops: map[string]uint64{}, plans: map[uint16]*plan{}}
	r.cm = streams.New(client, r.cpd, streams.Config{})
	r.sm = streams.New(server, r.spd, streams.Config{})
	r.nextID.Store(uint32(cfg.Streams))
	if cfg.Duration > 0 {
		r.deadline = start.Add(cfg.Duration)
	}
	maxID := min(client.NumStreams(), server.NumStreams()) - 1

	// Server: accept every stream and serve each in its own goroutine.
	actx, stopAccept := context.WithCancel(ctx)
	defer stopAccept()
	var acceptErr error
	var swg sync.WaitGroup
	swg.Go(func() {
		for n := 0; cfg.Duration > 0 || n < cfg.Streams; n++ {
			var p *plan
			var srv *serverStream
			unexpected := -1
			s, err := r.sm.Accept(actx, func(sid uint16, _ []byte) (streams.OpenOptions, error) {
				if p = r.plan(sid); p == nil {
					unexpected = int(sid)
					return streams.OpenOptions{}, errors.New("unexpected stream")
				}
				srv = &serverStream{r: r, p: p, sid: sid}
				return streams.OpenOptions{Prepare: srv.prepare}, nil
			})
			switch {
			case err == nil:
				swg.Go(func() { p.server <- srv.serve(ctx, s) })
			case unexpected >= 0:
				acceptErr = fmt.Errorf("accept: stream %d was never opened", unexpected)
			case p != nil:
				p.server <- serverResult{err: fmt.Errorf("accept: %w", err)}
			default:
				if actx.Err() == nil {
					acceptErr = fmt.Errorf("accept: %w", err)
				}
				return
			}
		}
	})

	// Progress.
	stopProgress := make(chan struct{})
	var pwg sync.WaitGroup
	if cfg.Progress != nil {
		pwg.Go(func() {
			t := time.NewTicker(cfg.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					cfg.Progress(r.totals())
				}
			}
		})
	}

	// Client: one worker per concurrent stream. The first streams all
	// open before any runs: the association shuts down once every stream
	// is closed or erroneous (RFC 5040 §7), so a short stream must not end
	// it under one still opening.
	var cmu sync.Mutex
	var results []StreamResult
	var cwg, opening sync.WaitGroup
	opening.Add(cfg.Streams)
	for w := range cfg.Streams {
		cwg.Go(func() {
			id := uint16(w + 1)
			first := &opening
			for {
				res := r.client(ctx, id, first)
				first = nil
				cmu.Lock()
				results = append(results, res)
				cmu.Unlock()
				if r.deadline.IsZero() || !time.Now().Before(r.deadline) || ctx.Err() != nil {
					return
				}
				next := r.nextID.Add(1)
				if next > uint32(maxID) {
					return
				}
				id = uint16(next)
			}
		})
	}
	cwg.Wait()
	stopAccept()
	swg.Wait()
	close(stopProgress)
	pwg.Wait()

	for i := range results {
		sr := &results[i]
		p := r.plan(sr.ID)
		select {
		case s := <-p.server:
			sr.ServerErr, sr.ServerEnd, sr.ServerErroneous = s.err, s.end, s.erroneous
		default:
			if sr.Err == nil {
				sr.ServerErr = errors.New("the server never served the stream")
			}
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].ID < results[j].ID })
	cs := SideStats{Opened: r.opened.Load()}
	var ss SideStats
	for _, sr := range results {
		if sr.Erroneous {
			cs.Erroneous++
		}
		if sr.ServerErroneous {
			ss.Erroneous++
		}
	}
	res := &Result{
		Totals: r.totals(), Ops: r.ops, Streams: results, AcceptErr: acceptErr,
		ClientStats: cs, ServerStats: ss,
		MULPDU: min(client.MULPDU(), server.MULPDU()), Seed: cfg.Seed, Elapsed: time.Since(start),
	}
	return res, nil
}

func (r *run) plan(id uint16) *plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plans[id]
}

func (r *run) newPlan(id uint16) *plan {
	lo, hi := r.cfg.Sizes(id)
	hi = max(hi, 0)
	lo = min(max(lo, 0), hi)
	p := &plan{broken: id == r.cfg.Break, lo: lo, hi: hi, server: make(chan serverResult, 1)}
	r.mu.Lock()
	r.plans[id] = p
	r.mu.Unlock()
	return p
}

func (r *run) totals() Totals {
	return Totals{
		Posted: r.posted.Load(), Completed: r.completed.Load(),
		Succeeded: r.succeeded.Load(), Flushed: r.flushed.Load(), Octets: r.octets.Load(),
		Opened: r.opened.Load(), Killed: r.killed.Load(),
	}
}

// drawSize draws an operation size in lo..hi, log-uniformly: every power
// of two up to hi is as likely, so small sizes (and 0) are well covered.
func drawSize(rng *rand.Rand, lo, hi int) int {
	span := hi - lo
	if span <= 0 {
		return lo
	}
	b := rng.IntN(bits.Len(uint(span)) + 1)
	return lo + min(rng.IntN(1<<b), span)
}

// Loopback establishes an association of cfg.Stack to itself on addr
// (for example 127.0.0.1:0): client dialled, server accepted. The server
// listens with listen when it is not nil (a stack without the client's
// capture, so that every packet is recorded once), cfg.Stack otherwise.
func Loopback(ctx context.Context, addr string, cfg sctpllp.Config, listen backend.Stack) (client, server *sctpllp.Association, err error) {
	lcfg := cfg
	if listen != nil {
		lcfg.Stack = listen
	}
	ln, err := sctpllp.Listen(addr, lcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	type accepted struct {
		a   *sctpllp.Association
		err error
	}
	ch := make(chan accepted, 1)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		a, err := ln.Accept(actx)
		ch <- accepted{a, err}
	}()
	client, err = sctpllp.Dial(ctx, ln.Addr(), cfg)
	if err != nil {
		cancel()
		if acc := <-ch; acc.a != nil {
			_ = acc.a.Abort()
		}
		return nil, nil, fmt.Errorf("dial: %w", err)
	}
	acc := <-ch
	if acc.err != nil {
		_ = client.Abort()
		return nil, nil, fmt.Errorf("accept: %w", acc.err)
	}
	return client, acc.a, nil
}

// ErrStillUp reports an association still up when it should have ended.
var ErrStillUp = errors.New("association still up")

// AwaitEnd waits up to d for a to end and returns its error (nil: a
// graceful shutdown). An association still up after d is aborted and
// ErrStillUp returned.
func AwaitEnd(a *sctpllp.Association, d time.Duration) error {
	select {
	case <-a.Done():
		return a.Err()
	case <-time.After(d):
		_ = a.Abort()
		return fmt.Errorf("%w %v after the last stream ended (RFC 5040 §7)", ErrStillUp, d)
	}
}
