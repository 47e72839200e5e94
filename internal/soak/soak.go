// Package soak runs the long-running load test behind `make soak`: many
// streams on one userspace-SCTP association, every RDMA operation with
// random sizes, random deliberate stream terminations (local abort or a
// hostile segment) replaced by fresh streams, and exact accounting at the
// end — every operation posted completed exactly once (successfully or with
// a flush error), every byte verified, goroutines and heap back to their
// starting level.
package soak

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/streams"
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
	Failures                              []string // verification failures: must be empty
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
	for _, k := range []string{"send", "send-se", "write", "read", "write-imm", "immediate", "fetch-add", "cmp-swap"} {
		fmt.Fprintf(w, "  %-10s %d\n", k, s.Ops[k])
	}
	fmt.Fprintf(w, "goroutines %d → %d, heap %.1f → %.1f MiB\n", s.GoroutinesBefore, s.GoroutinesAfter,
		float64(s.HeapBefore)/(1<<20), float64(s.HeapAfter)/(1<<20))
	if err := s.OK(); err != nil {
		fmt.Fprintf(w, "RESULT: FAIL\n%v\n", err)
	} else {
		fmt.Fprintln(w, "RESULT: PASS (posted = completed, every byte verified, no leak)")
	}
}

// counters are shared by all workers.
type counters struct {
	posted, completed, succeeded, flushed, bytes atomic.Uint64
	opened, killed                               atomic.Uint64
	mu                                           sync.Mutex
	ops                                          map[string]uint64
	failures                                     []string
}

func (c *counters) fail(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) < 50 {
		c.failures = append(c.failures, fmt.Sprintf(format, a...))
	}
}

// do accounts for one operation: posted before, completed after, and
// classifies the outcome. A flush after a deliberate kill is expected; any
// other error is a failure.
func (c *counters) do(name string, n int, killed *atomic.Bool, f func() error) error {
	c.posted.Add(1)
	err := f()
	c.completed.Add(1)
	switch {
	case err == nil:
		c.succeeded.Add(1)
		c.bytes.Add(uint64(n))
		c.mu.Lock()
		c.ops[name]++
		c.mu.Unlock()
	case killed.Load():
		c.flushed.Add(1)
	default:
		c.flushed.Add(1)
		c.fail("%s: %v", name, err)
	}
	return err
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

	ln, err := sctpllp.Listen("127.0.0.1:0", sctpllp.Config{KeepIdle: true})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.Duration+2*time.Minute)
	defer cancel()
	type accepted struct {
		a   *sctpllp.Association
		err error
	}
	ach := make(chan accepted, 1)
	go func() { a, err := ln.Accept(sctx); ach <- accepted{a, err} }()
	ca, err := sctpllp.Dial(sctx, ln.Addr(), sctpllp.Config{KeepIdle: true})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	acc := <-ach
	_ = ln.Close()
	if acc.err != nil {
		_ = ca.Abort()
		return nil, acc.err
	}
	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
	cpd, spd := dev.AllocPD(), dev.AllocPD()
	cm := streams.New(ca, cpd, streams.Config{})
	sm := streams.New(acc.a, spd, streams.Config{})
	cnt := &counters{ops: make(map[string]uint64)}

	// Passive side: accept every session and serve it.
	var srvWG sync.WaitGroup
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for {
			in, err := sm.Accept(sctx)
			if err != nil {
				return
			}
			srv := &server{pd: spd, cnt: cnt, maxSize: cfg.MaxSize}
			s, err := in.AcceptWith(streams.OpenOptions{Prepare: srv.prepare})
			if err != nil {
				cnt.fail("accept stream %d: %v", in.StreamID(), err)
				continue
			}
			srvWG.Add(1)
			go func() { defer srvWG.Done(); srv.serve(sctx, s) }()
		}
	}()

	deadline := time.Now().Add(cfg.Duration)
	var nextID atomic.Uint32
	var wg sync.WaitGroup
	for w := 0; w < cfg.Streams; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			for time.Now().Before(deadline) && sctx.Err() == nil {
				sid := uint16(nextID.Add(1))
				if int(sid) >= ca.NumStreams() {
					return
				}
				killAfter := time.Duration(-1)
				if !cfg.NoKill {
					killAfter = time.Duration(rng.ExpFloat64() * float64(cfg.KillEvery) * float64(cfg.Streams))
				}
				runClient(sctx, cm, cpd, sid, cnt, rng, deadline, killAfter, cfg.MaxSize)
			}
		}(w)
	}
	ticker := time.NewTicker(10 * time.Second)
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	progressWG.Add(1)
	go func() {
		defer progressWG.Done()
		for {
			select {
			case <-progressDone:
				return
			case <-ticker.C:
			}
			if out != nil {
				fmt.Fprintf(out, "soak: %v: %d ops completed, %d streams opened, %d killed\n",
					time.Since(start).Round(time.Second), cnt.completed.Load(), cnt.opened.Load(), cnt.killed.Load())
			}
		}
	}()
	wg.Wait()
	ticker.Stop()
	close(progressDone)
	progressWG.Wait()

	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = cm.Close(cctx)
	_ = sm.Close(cctx)
	ccancel()
	cancel()
	srvWG.Wait()
	select {
	case <-ca.Done():
	case <-time.After(10 * time.Second):
		_ = ca.Abort()
	}
	select {
	case <-acc.a.Done():
	case <-time.After(10 * time.Second):
		_ = acc.a.Abort()
	}

	sum.Elapsed = time.Since(start)
	sum.Posted, sum.Completed = cnt.posted.Load(), cnt.completed.Load()
	sum.Succeeded, sum.Flushed = cnt.succeeded.Load(), cnt.flushed.Load()
	sum.Bytes = cnt.bytes.Load()
	sum.StreamsOpened, sum.StreamsKilled = cnt.opened.Load(), cnt.killed.Load()
	sum.Ops, sum.Failures = cnt.ops, cnt.failures
	// Let goroutines of torn-down pion streams and timers finish.
	for i := 0; i < 50 && runtime.NumGoroutine() > sum.GoroutinesBefore; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	sum.GoroutinesAfter, sum.HeapAfter = runtime.NumGoroutine(), ms.HeapAlloc
	if out != nil {
		sum.Print(out)
	}
	return sum, nil
}

// Message framing for Sends: [kind u8][pad 3][len u32][crc32 u32] + data.
const (
	kindData = 1
	kindPing = 2
	hdrLen   = 12
	window   = 16 // receive buffers the server keeps posted per stream
)

// server is the passive side of one stream: it advertises a target
// region, keeps window receive buffers posted, verifies every Send and
// answers each ping (a credit round trip) once it has re-posted every
// buffer consumed before the ping.
type server struct {
	pd      *rdmap.PD
	cnt     *counters
	maxSize int
	bufs    [][]byte
}

func (s *server) prepare(ep *rdmap.Endpoint) error {
	s.bufs = make([][]byte, window)
	for i := range s.bufs {
		s.bufs[i] = make([]byte, hdrLen+s.maxSize)
		if err := ep.PostRecv(rdmap.RecvWR{ID: uint64(i), Buf: s.bufs[i]}); err != nil {
			return err
		}
	}
	return nil
}

func (s *server) serve(ctx context.Context, st *streams.Stream) {
	ep := st.Endpoint()
	target, err := s.pd.Register(make([]byte, s.maxSize+8),
		rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic, rdmap.WithEndpoint(ep))
	if err != nil {
		s.cnt.fail("register: %v", err)
		return
	}
	defer target.Deregister()
	adv := make([]byte, 8)
	binary.BigEndian.PutUint32(adv, target.STag())
	binary.BigEndian.PutUint32(adv[4:], uint32(s.maxSize))
	if ep.Send(ctx, adv) != nil {
		return
	}
	for {
		c, err := ep.RecvCQ().Poll(ctx)
		if err != nil || c.Err != nil {
			return // flushed: the stream ended
		}
		b := s.bufs[c.WRID][:c.Length]
		if c.HasImm {
			// Immediate Data carries the CRC of the region the Write just
			// filled (Write with Immediate) or a sequence tag.
		} else if len(b) < hdrLen || int(binary.BigEndian.Uint32(b[4:])) != len(b)-hdrLen ||
			crc32.ChecksumIEEE(b[hdrLen:]) != binary.BigEndian.Uint32(b[8:]) {
			s.cnt.fail("stream %d: corrupt Send of %d octets", st.ID(), len(b))
			_ = ep.Abort()
			return
		}
		if ep.PostRecv(rdmap.RecvWR{ID: c.WRID, Buf: s.bufs[c.WRID]}) != nil {
			return
		}
		if !c.HasImm && b[0] == kindPing {
			if ep.Send(ctx, []byte("pong")) != nil {
				return
			}
		}
	}
}

// runClient opens stream sid and runs random operations on it until the
// deadline, or until killAfter (≥ 0) when it terminates the stream on
// purpose, alternately by a local Abort and by a hostile segment.
func runClient(ctx context.Context, cm *streams.Manager, pd *rdmap.PD, sid uint16, cnt *counters,
	rng *rand.Rand, deadline time.Time, killAfter time.Duration, maxSize int) {
	pong := make([]byte, 8)
	adv := make([]byte, 8)
	st, err := cm.Open(ctx, sid, streams.OpenOptions{Prepare: func(ep *rdmap.Endpoint) error {
		return ep.PostRecv(rdmap.RecvWR{ID: 0, Buf: adv})
	}})
	if err != nil {
		if ctx.Err() == nil {
			cnt.fail("open %d: %v", sid, err)
		}
		return
	}
	cnt.opened.Add(1)
	ep := st.Endpoint()
	how := "none"
	defer func() {
		// A stream must end promptly once its client stops: a hang here is
		// a failure of the termination state machine, reported, not waited
		// on forever.
		select {
		case <-st.Done():
		case <-time.After(30 * time.Second):
			cnt.fail("stream %d did not end 30 s after its client stopped (kill %s, endpoint err %v)", sid, how, ep.Err())
			_ = ep.Abort()
			<-st.Done()
		}
	}()
	if c, err := ep.RecvCQ().Poll(ctx); err != nil || c.Err != nil {
		cnt.fail("stream %d: advertisement: %v %v", sid, err, c.Err)
		_ = ep.Abort()
		return
	}
	rstag := binary.BigEndian.Uint32(adv)
	sink, err := pd.Register(make([]byte, maxSize+8), rdmap.LocalWrite, rdmap.WithEndpoint(ep))
	if err != nil {
		cnt.fail("register: %v", err)
		_ = ep.Abort()
		return
	}
	defer sink.Deregister()

	var killed atomic.Bool
	var kill *time.Timer
	if killAfter >= 0 {
		kill = time.AfterFunc(killAfter, func() {
			killed.Store(true)
			cnt.killed.Add(1)
			if rng2 := sid % 2; rng2 == 0 {
				how = "abort"
				_ = ep.Abort()
			} else {
				// A tagged segment for an STag the peer never issued: the
				// peer must answer with a Terminate (RFC 5041 §7.2). It
				// carries data: a zero-length Write needs no valid STag
				// (it is one of the RTR forms of RFC 6581 §9.2).
				how = "hostile segment"
				h := ddp.TaggedHeader{Last: true, RsvdULP: rdmap.ControlByte(rdmap.OpWrite), STag: rstag ^ 0x00FF0000}
				var hb [ddp.TaggedHeaderLen]byte
				if st.Session().SendSegment(h.Append(hb[:0]), []byte("intruder")) != nil {
					_ = ep.Abort()
				}
			}
		})
		defer kill.Stop()
	}

	var counter uint64 // the value this stream's atomics expect at the target
	consumed := 0      // peer receive buffers used since the last credit round trip
	buf := make([]byte, hdrLen+maxSize)
	// credit makes a ping round trip once the peer may be running out of
	// posted receive buffers: the pong proves that every buffer consumed
	// before the ping has been posted again (RFC 5041 §7.1: a Send without
	// a buffer is a protocol error, so the ULP must pace itself).
	credit := func() error {
		if consumed < window-2 {
			return nil
		}
		payload := buf[:hdrLen]
		payload[0] = kindPing
		binary.BigEndian.PutUint32(payload[4:], 0)
		binary.BigEndian.PutUint32(payload[8:], crc32.ChecksumIEEE(nil))
		if err := ep.PostRecv(rdmap.RecvWR{ID: 1, Buf: pong}); err != nil {
			return err
		}
		err := cnt.do("send", 0, &killed, func() error {
			return postWait(ctx, ep, rdmap.SendWR{Op: rdmap.WRSend, Local: payload})
		})
		if err != nil {
			return err
		}
		c, err := ep.RecvCQ().Poll(ctx)
		if err == nil {
			err = c.Err
		}
		consumed = 0
		return err
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-ep.Done():
			if !killed.Load() {
				cnt.fail("stream %d ended unexpectedly: %v", sid, ep.Err())
			}
			return
		default:
		}
		n := randSize(rng, maxSize)
		op := rng.IntN(8)
		var err error
		if op == 0 || op == 1 || op == 3 || op == 4 {
			if err = credit(); err != nil {
				op = -1
			}
			consumed++
		}
		switch op {
		case 0, 1: // Send / Send with SE carrying a checksummed payload
			payload := buf[:hdrLen+n]
			fill(rng, payload[hdrLen:])
			payload[0] = kindData
			binary.BigEndian.PutUint32(payload[4:], uint32(n))
			binary.BigEndian.PutUint32(payload[8:], crc32.ChecksumIEEE(payload[hdrLen:]))
			name, wt := "send", rdmap.WRSend
			if op == 1 {
				name, wt = "send-se", rdmap.WRSendSE
			}
			err = cnt.do(name, n, &killed, func() error {
				return postWait(ctx, ep, rdmap.SendWR{Op: wt, Local: payload})
			})
		case 2: // Write then Read back (RFC 5040 §5.5 rule 12)
			src := buf[:n]
			fill(rng, src)
			err = cnt.do("write", n, &killed, func() error { return ep.Write(ctx, src, rstag, 0) })
			if err == nil {
				err = cnt.do("read", n, &killed, func() error { return ep.Read(ctx, sink, 0, uint32(n), rstag, 0) })
				if err == nil && string(sink.Bytes()[:n]) != string(src) {
					cnt.fail("stream %d: read-back of %d octets differs", sid, n)
				}
			}
		case 3:
			src := buf[:n]
			fill(rng, src)
			err = cnt.do("write-imm", n, &killed, func() error {
				return ep.WriteImm(ctx, src, rstag, 0, uint64(crc32.ChecksumIEEE(src)), rng.IntN(2) == 0)
			})
		case 4:
			err = cnt.do("immediate", 8, &killed, func() error { return ep.Immediate(ctx, rng.Uint64(), rng.IntN(2) == 0) })
		case 5:
			add := rng.Uint64N(1000)
			var orig uint64
			err = cnt.do("fetch-add", 8, &killed, func() (e error) {
				orig, e = ep.FetchAdd(ctx, rstag, uint64(maxSize), add, 0)
				return e
			})
			if err == nil {
				if orig != counter {
					cnt.fail("stream %d: fetch-add returned %d, want %d", sid, orig, counter)
				}
				counter += add
			}
		case 6, 7:
			swap := rng.Uint64()
			var orig uint64
			err = cnt.do("cmp-swap", 8, &killed, func() (e error) {
				orig, e = ep.CmpSwap(ctx, rstag, uint64(maxSize), counter, ^uint64(0), swap, ^uint64(0))
				return e
			})
			if err == nil {
				if orig != counter {
					cnt.fail("stream %d: cmp-swap returned %d, want %d", sid, orig, counter)
				}
				counter = swap
			}
		}
		if err != nil {
			if !killed.Load() {
				_ = ep.Abort()
			}
			return
		}
	}
	if kill != nil && !kill.Stop() {
		return // the kill is under way: its flush ends the stream
	}
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ep.Close(cctx); err != nil && !errors.Is(err, rdmap.ErrClosed) && !killed.Load() {
		cnt.fail("stream %d: close: %v", sid, err)
	}
}

// postWait posts wr and waits for its completion on the send CQ.
func postWait(ctx context.Context, ep *rdmap.Endpoint, wr rdmap.SendWR) error {
	wr.ID = 7
	if err := ep.PostSend(wr); err != nil {
		return err
	}
	c, err := ep.SendCQ().Poll(ctx)
	if err != nil {
		return err
	}
	return c.Err
}

// randSize returns a log-uniform size in [0, max].
func randSize(rng *rand.Rand, max int) int {
	if rng.IntN(16) == 0 {
		return 0
	}
	bits := rng.IntN(18) + 1
	return min(rng.IntN(1<<bits), max)
}

func fill(rng *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
}
