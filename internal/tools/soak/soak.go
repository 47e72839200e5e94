// Package soak runs the long-running load test behind `make soak`: many
// streams on one userspace-SCTP association, every RDMA operation in
// random order with random sizes, random deliberate stream terminations
// (local abort or a hostile segment) replaced by fresh streams, and exact
// accounting at the end — every operation posted completed exactly once
// (successfully or with a flush error), every byte verified at both ends,
// goroutines and heap back to their starting level. The work itself is
// internal/tools/workload run for a duration; this package adds the set-up, the
// leak checks and the summary.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// Config configures a soak run.
type Config struct {
	Streams  int           // concurrent streams (default 64)
	Duration time.Duration // how long to generate load (default 10 min)
	MaxSize  int           // largest message (default 256 KiB)
	// KillEvery is the mean interval between deliberate stream
	// terminations (default Duration/20); 0 with NoKill disables them.
	KillEvery time.Duration
	NoKill    bool
	Seed      uint64
}

func (c *Config) defaults() {
	if c.Streams <= 0 {
		c.Streams = 64
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Minute
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 256 << 10
	}
	if c.KillEvery <= 0 {
		c.KillEvery = c.Duration / 20
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
}

// Summary is the outcome of a soak run.
type Summary struct {
	Posted, Completed, Succeeded, Flushed uint64
	Ops                                   map[string]uint64
	Bytes                                 uint64
	StreamsOpened, StreamsKilled          uint64
	Failures                              []string // failures (the first 50): must be empty
	GoroutinesBefore, GoroutinesAfter     int
	HeapBefore, HeapAfter                 uint64
	Elapsed                               time.Duration
}

// OK reports whether the run met every invariant.
func (s *Summary) OK() error {
	var errs []error
	if s.Posted != s.Completed {
		errs = append(errs, fmt.Errorf("posted %d operations but %d completed", s.Posted, s.Completed))
	}
	if s.Completed != s.Succeeded+s.Flushed {
		errs = append(errs, fmt.Errorf("completed %d ≠ succeeded %d + flushed %d", s.Completed, s.Succeeded, s.Flushed))
	}
	for _, f := range s.Failures {
		errs = append(errs, errors.New(f))
	}
	if s.GoroutinesAfter > s.GoroutinesBefore+2 {
		errs = append(errs, fmt.Errorf("goroutines: %d before, %d after", s.GoroutinesBefore, s.GoroutinesAfter))
	}
	if s.HeapAfter > s.HeapBefore+32<<20 {
		errs = append(errs, fmt.Errorf("heap: %d MiB before, %d MiB after", s.HeapBefore>>20, s.HeapAfter>>20))
	}
	return errors.Join(errs...)
}

// Print writes a readable summary.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "soak: %v, %d streams opened, %d killed on purpose\n", s.Elapsed.Round(time.Second), s.StreamsOpened, s.StreamsKilled)
	fmt.Fprintf(w, "operations: posted %d, completed %d (succeeded %d, flushed %d), %.1f MiB moved\n",
		s.Posted, s.Completed, s.Succeeded, s.Flushed, float64(s.Bytes)/(1<<20))
	for _, k := range workload.OpNames {
		fmt.Fprintf(w, "  %-12s %d\n", k, s.Ops[k])
	}
	fmt.Fprintf(w, "goroutines %d → %d, heap %.1f → %.1f MiB\n", s.GoroutinesBefore, s.GoroutinesAfter,
		float64(s.HeapBefore)/(1<<20), float64(s.HeapAfter)/(1<<20))
	if err := s.OK(); err != nil {
		fmt.Fprintf(w, "RESULT: FAIL\n%v\n", err)
	} else {
		fmt.Fprintln(w, "RESULT: PASS (posted = completed, every byte verified, no leak)")
	}
}

// Run runs the soak and returns its summary; out (if not nil) gets
// progress lines and the summary.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Summary, error) {
	cfg.defaults()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sum := &Summary{GoroutinesBefore: runtime.NumGoroutine(), HeapBefore: ms.HeapAlloc}
	start := time.Now()

	sctx, cancel := context.WithTimeout(ctx, cfg.Duration+2*time.Minute)
	defer cancel()
	// KeepIdle: the association outlives the moments when every stream
	// has been killed and none replaced yet.
	// Every stream opens at once: the passive side lets as many Initiates
	// wait for its ULP (RFC 5043 §6.4: beyond the limit an Initiate is
	// answered with a Session Terminate).
	acfg := sctpllp.Config{Stack: pion.Stack(pion.Config{}), KeepIdle: true, MaxPendingInitiates: max(cfg.Streams, sctpllp.DefaultMaxPendingInitiates)}
	client, server, err := workload.Loopback(sctx, "127.0.0.1:0", acfg, nil)
	if err != nil {
		return nil, err
	}
	wcfg := workload.Config{
		Streams: cfg.Streams, MaxSize: cfg.MaxSize, Duration: cfg.Duration, Random: true,
		KillEvery: cfg.KillEvery, Window: window, Seed: cfg.Seed,
	}
	if cfg.NoKill {
		wcfg.KillEvery = 0
	}
	if out != nil {
		wcfg.Progress = func(t workload.Totals) {
			fmt.Fprintf(out, "soak: %v: %d ops completed, %d streams opened, %d killed\n",
				time.Since(start).Round(time.Second), t.Completed, t.Opened, t.Killed)
		}
	}
	res, err := workload.Run(sctx, client, server, wcfg)
	if err != nil {
		_ = client.Abort()
		_ = server.Abort()
		return nil, err
	}
	_ = client.Close()
	_ = server.Close()
	_ = workload.AwaitEnd(client, 10*time.Second)
	_ = workload.AwaitEnd(server, 10*time.Second)

	sum.Elapsed = time.Since(start)
	sum.Posted, sum.Completed = res.Posted, res.Completed
	sum.Succeeded, sum.Flushed = res.Succeeded, res.Flushed
	sum.Bytes = res.Octets
	sum.StreamsOpened, sum.StreamsKilled = res.Opened, res.Killed
	sum.Ops = res.Ops
	for _, err := range res.Errs() {
		if len(sum.Failures) == maxFailures {
			break
		}
		sum.Failures = append(sum.Failures, err.Error())
	}
	// Let goroutines of torn-down pion streams and timers finish.
	for i := 0; i < 50 && runtime.NumGoroutine() > sum.GoroutinesBefore; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	// Two collections: the first moves what sync.Pools hold (the packet
	// and segment buffers every association returned on close) to their
	// victim caches, where it is still counted; the second frees it. What
	// is left after both is what something still references.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	sum.GoroutinesAfter, sum.HeapAfter = runtime.NumGoroutine(), ms.HeapAlloc
	if out != nil {
		sum.Print(out)
	}
	return sum, nil
}

const (
	window      = 16 // receive buffers the server keeps posted per stream
	maxFailures = 50 // failures listed in a Summary
)
