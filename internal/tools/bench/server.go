package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// Hello is the private data every bench stream request carries (RFC 5043
// §6.2 Initiate, RFC 5044 §7.1.1 MPA Request); the server rejects others.
const Hello = "sctp-rdma bench/1"

// errNotBench is the reason a server rejects a stream request without
// Hello.
var errNotBench = errors.New("not a sctp-rdma bench client")

// ErrBusy is the reason a server rejects a stream beyond MaxStreams.
var ErrBusy = errors.New("server busy: stream limit reached")

// errMemoryBudget is the reason a server refuses a test whose buffers do
// not fit in what is left of ServerConfig.MaxMemory.
var errMemoryBudget = errors.New("server buffer memory budget exhausted")

// ErrClientShare is the reason a server rejects a stream of a client that
// holds its share of MaxStreams (all but ServerConfig.StreamReserve).
var ErrClientShare = errors.New("server busy: this client holds its share of the streams")

// errSetupTimeout ends a stream whose client sent no Setup within
// ServerConfig.SetupTimeout.
var errSetupTimeout = errors.New("no Setup from the client in time")

// Server defaults.
const (
	// defaultMaxMemory is ServerConfig.MaxMemory's default.
	defaultMaxMemory = 1 << 30
	// DefaultStreamReserve is ServerConfig.StreamReserve's default.
	DefaultStreamReserve = 64
	// DefaultSetupTimeout is ServerConfig.SetupTimeout's default.
	DefaultSetupTimeout = 10 * time.Second
)

// ServerConfig configures a bench server.
type ServerConfig struct {
	// MaxSize is the largest message size accepted (0: 64 MiB).
	MaxSize int
	// MaxMemory bounds the octets of buffers the server allocates for all
	// streams together (0: defaultMaxMemory). A stream's share (its
	// registered buffer and its receive buffers, depth x size for Sends)
	// is reserved from the Setup before anything is allocated, and given
	// back when the stream ends; a Setup that does not fit is refused
	// with statusNoMemory, so one 32-octet Setup cannot make the server
	// allocate gigabytes.
	MaxMemory int64
	// SetupTimeout bounds the wait for a client's Setup once its stream is
	// accepted (0: DefaultSetupTimeout); a silent client's stream is then
	// ended and its slot freed.
	SetupTimeout time.Duration
	// MaxStreams bounds the streams served at once over all clients
	// (0: 4096); beyond it stream requests are rejected.
	MaxStreams int
	// StreamReserve is the number of the MaxStreams slots one client (one
	// peer address) cannot take: they stay for other clients, so that one
	// client opening sessions as fast as it can does not lock the others
	// out (0: DefaultStreamReserve, at most MaxStreams/4; negative: none).
	StreamReserve int
	// Log, if not nil, receives one line per finished stream.
	Log io.Writer
	// Counters, if not nil, counts the operations served.
	Counters *Counters
	// Results, if not nil, is called once per client test, when the last
	// of its streams ended (RunResult), from that stream's goroutine.
	Results func(RunResult)
}

// Server is the passive side of the bench exchange. It serves any number
// of clients and streams concurrently.
type Server struct {
	cfg    ServerConfig
	pd     *rdmap.PD
	active atomic.Int64
	// started counts the streams Start handed to goroutines of their own
	// (transport.Starter), which Run waits for.
	started sync.WaitGroup
	// reserved is the buffer memory promised to the streams being served.
	reserved atomic.Int64
	stats    serverCounters
	// slotMu guards the stream slots: active's changes and perClient.
	slotMu    sync.Mutex
	perClient map[netip.Addr]int
	keep      int // stream slots one client cannot take (StreamReserve)
	mu        sync.Mutex
	conns     map[*rdmap.Endpoint]*conn // prepared, not yet served
	live      map[*rdmap.Endpoint]*conn // being served (guarded by mu)
	finished  finishedStreams           // guarded by mu
	runs      map[runKey]*runGroup      // client tests in progress (guarded by mu)
	// idleTimer gives memory back to the OS once no stream is left
	// (idleRelease); guarded by mu.
	idleTimer *time.Timer
	// setup holds the streams Start admitted until their Setup arrives.
	setup setupWait
	logMu sync.Mutex
	// logWindow, logLines, logSuppressed rate-limit the failure log
	// (logFailure); guarded by logMu.
	logWindow     time.Time
	logLines      int
	logSuppressed int
}

// NewServer returns a server with its own device and protection domain.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 64 << 20
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 4096
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = defaultMaxMemory
	}
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = DefaultSetupTimeout
	}
	reserve := cfg.StreamReserve
	if reserve == 0 {
		reserve = DefaultStreamReserve
	}
	reserve = max(min(reserve, cfg.MaxStreams/4), 0)
	s := &Server{cfg: cfg, pd: new(rdmap.Device).AllocPD(), conns: make(map[*rdmap.Endpoint]*conn),
		perClient: make(map[netip.Addr]int), keep: reserve,
		live: make(map[*rdmap.Endpoint]*conn), finished: newFinishedStreams(), runs: make(map[runKey]*runGroup)}
	s.setup.timeout, s.setup.expire = cfg.SetupTimeout, s.serveWaiter
	return s
}

// Run serves ln until ctx ends; then every stream is aborted (its
// outstanding work requests are flushed, RFC 5040 §6.2.1) and Run returns
// when every goroutine has finished.
func (s *Server) Run(ctx context.Context, ln *transport.Listener) error {
	err := ln.Serve(ctx, s.pd, s)
	s.started.Wait() // the streams Start left to their own goroutines
	s.setup.stop()
	s.mu.Lock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.mu.Unlock()
	return err
}

// activeStreams returns the number of streams being served.
func (s *Server) activeStreams() int { return int(s.active.Load()) }

// serverCounters count what the server's caps did.
type serverCounters struct {
	admitted, refusedBusy, refusedNotBench atomic.Uint64
	refusedMemory, setupTimeouts           atomic.Uint64
	refusedShare                           atomic.Uint64
}

// ServerStats are a server's counters: what each cap refused or ended.
type ServerStats struct {
	// Active is the number of streams being served; Reserved the buffer
	// octets reserved for them, out of MaxMemory.
	Active              int
	Reserved, MaxMemory int64
	// Admitted counts stream requests admitted; RefusedBusy those refused
	// at MaxStreams; RefusedNotBench those without Hello.
	Admitted, RefusedBusy, RefusedNotBench uint64
	// RefusedMemory counts Setups refused because their buffers did not
	// fit in MaxMemory; SetupTimeouts streams ended for want of a Setup.
	RefusedMemory, SetupTimeouts uint64
	// RefusedShare counts stream requests refused because their client
	// held its share (MaxStreams less StreamReserve).
	RefusedShare uint64
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{
		Active: s.activeStreams(), Reserved: s.reserved.Load(), MaxMemory: s.cfg.MaxMemory,
		Admitted: s.stats.admitted.Load(), RefusedBusy: s.stats.refusedBusy.Load(),
		RefusedNotBench: s.stats.refusedNotBench.Load(),
		RefusedMemory:   s.stats.refusedMemory.Load(), SetupTimeouts: s.stats.setupTimeouts.Load(),
		RefusedShare: s.stats.refusedShare.Load(),
	}
}

// reserve takes n octets of the memory budget, or reports that they do not
// fit.
func (s *Server) reserve(n int64) bool {
	for {
		cur := s.reserved.Load()
		if n > s.cfg.MaxMemory-cur {
			return false
		}
		if s.reserved.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// Admit implements transport.Handler: a request with Hello is admitted
// while fewer than MaxStreams are served and its client (peer address)
// holds less than its share, MaxStreams less the reserve kept for other
// clients.
func (s *Server) Admit(peer netip.Addr, privateData []byte) error {
	if string(privateData) != Hello {
		s.stats.refusedNotBench.Add(1)
		return errNotBench
	}
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	if s.active.Load() >= int64(s.cfg.MaxStreams) {
		s.stats.refusedBusy.Add(1)
		return fmt.Errorf("%w (serve --max-streams %d)", ErrBusy, s.cfg.MaxStreams)
	}
	if share := s.cfg.MaxStreams - s.keep; s.perClient[peer] >= share {
		s.stats.refusedShare.Add(1)
		return fmt.Errorf("%w: %d streams, serve's --max-streams %d less its --stream-reserve %d kept for other clients", ErrClientShare, share, s.cfg.MaxStreams, s.keep)
	}
	s.active.Add(1)
	s.perClient[peer]++
	s.stats.admitted.Add(1)
	return nil
}

// rootCause is what the server logs of a failed stream: the innermost
// error of err's chain that each layer only prefixed ("x: %w"), so
// "sctp: association aborted (peer): User-Initiated Abort" or
// "connection reset by peer", not every layer's wrapping of it.
func rootCause(err error) string {
	msg := err.Error()
	for {
		var kids []error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			kids = []error{u.Unwrap()}
		case interface{ Unwrap() []error }:
			kids = u.Unwrap()
		}
		var next error
		for _, k := range kids {
			if k != nil && strings.HasSuffix(msg, k.Error()) {
				next = k
			}
		}
		if next == nil {
			return msg
		}
		err, msg = next, next.Error()
	}
}

// logBurst is how many stream failures the server logs per second at
// most; beyond it lines are counted and summed up in the next line, so a
// flood of failing streams cannot flood the log.
const logBurst = 10

// logFailure writes line unless logBurst lines went out this second.
func (s *Server) logFailure(line string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	now := time.Now()
	if now.Sub(s.logWindow) >= time.Second {
		if s.logSuppressed > 0 {
			fmt.Fprintf(s.cfg.Log, "(%d more stream failures not logged)\n", s.logSuppressed)
		}
		s.logWindow, s.logLines, s.logSuppressed = now, 0, 0
	}
	if s.logLines >= logBurst {
		s.logSuppressed++
		return
	}
	s.logLines++
	fmt.Fprintln(s.cfg.Log, line)
}

// release gives back a stream slot of peer.
func (s *Server) release(peer netip.Addr) {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	s.active.Add(-1)
	if s.perClient[peer]--; s.perClient[peer] <= 0 {
		delete(s.perClient, peer)
	}
}

// Dropped implements transport.Handler: an admitted stream failed
// before it was served.
func (s *Server) Dropped(peer netip.Addr) { s.release(peer) }

// Prepare implements transport.Handler: it posts the receive for the
// client's Setup.
func (s *Server) Prepare(ep *rdmap.Endpoint) error {
	c := newConn(ep)
	c.ctr = s.cfg.Counters
	if err := c.post(ctrlLen); err != nil {
		return err
	}
	s.mu.Lock()
	s.conns[ep] = c
	s.mu.Unlock()
	return nil
}

// Serve implements transport.Handler: it runs one stream's exchange.
func (s *Server) Serve(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint) {
	_ = s.serveFrom(ctx, peer, ep, time.Now())
}

var _ transport.Starter = (*Server)(nil)

// Start implements transport.Starter: a stream holds no goroutine until
// the client's Setup (or anything else) arrives or the stream ends; the
// Setup must still arrive within SetupTimeout of Start (one timer for all
// the streams waiting, not a goroutine or a timer each, enforces it), so
// idle streams cannot be held open for free.
// The stream's receive CQ must be its own (the serve command never
// shares CQs).
func (s *Server) Start(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint) {
	w := &setupWaiter{s: s, ctx: ctx, ep: ep, peer: peer}
	s.started.Add(1) // Run waits for it
	s.setup.add(w)   // the deadline: serveFrom finds it passed
	// The receive Prepare posted completes when the Setup arrives, or
	// flushed when the stream ends first: a handler that removes itself
	// wakes the waiter either way.
	cq := ep.Config().RecvCQ
	cq.SetHandler(func() {
		cq.SetHandler(nil)
		go w.run()
	})
}

// serveWaiter serves a stream Start admitted, in a goroutine of its own.
func (s *Server) serveWaiter(w *setupWaiter) {
	defer s.started.Done()
	if err := s.serveFrom(w.ctx, w.peer, w.ep, w.admitted); err != nil && w.ctx.Err() == nil {
		_ = w.ep.Abort() // a failed stream ends at once (RFC 5040 §6.2.1)
		return
	}
	closeStream(w.ep)
}

// serveFrom runs one stream's exchange; the client's Setup is due
// SetupTimeout after admitted.
func (s *Server) serveFrom(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint, admitted time.Time) error {
	defer s.release(peer)
	s.mu.Lock()
	c := s.conns[ep]
	delete(s.conns, ep)
	if c != nil {
		s.live[ep] = c
	}
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	defer c.release()
	defer s.streamEnded(c)
	err := s.serve(ctx, c, admitted, peer)
	if err == nil {
		// Wait for the client's graceful close (RFC 5040 §6.2).
		select {
		case <-ep.Done():
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		// Closed before its buffers go: the client's operations still in
		// flight find their STags until the stream is down.
		closeStream(ep)
	}
	if s.cfg.Log != nil && err != nil && ctx.Err() == nil {
		s.logFailure(fmt.Sprintf("stream failed (%v test, client %v): %s", c.setup.Test, peer, rootCause(err)))
	}
	return err
}

func (s *Server) serve(ctx context.Context, c *conn, admitted time.Time, peer netip.Addr) (err error) {
	sctx, cancel := context.WithDeadlineCause(ctx, admitted.Add(s.cfg.SetupTimeout), errSetupTimeout)
	b, err := c.recvMsg(sctx)
	cancel()
	if err != nil {
		if errors.Is(context.Cause(sctx), errSetupTimeout) && ctx.Err() == nil {
			s.stats.setupTimeouts.Add(1)
			return fmt.Errorf("%w (%v)", errSetupTimeout, s.cfg.SetupTimeout)
		}
		return err
	}
	setup, _, err := parseSetup(b)
	if err == nil && int(setup.Size) > s.cfg.MaxSize {
		_ = c.sendMsg(ctx, &advertMsg{Status: statusTooLarge})
		return fmt.Errorf("size %d above --max-size %d", setup.Size, s.cfg.MaxSize)
	}
	if err != nil {
		_ = c.sendMsg(ctx, &advertMsg{Status: statusBadSetup})
		return err
	}
	c.setup = setup
	s.mu.Lock()
	c.test = setup.Test.String()
	s.mu.Unlock()
	var rep Report
	if k, ok := s.joinRun(peer, setup); ok {
		defer func() { s.leaveRun(k, rep, err != nil) }()
	}
	active := setup.Reverse()
	// The stream's buffers are reserved before any is allocated.
	cost := memoryCost(setup, active)
	if !s.reserve(cost) {
		s.stats.refusedMemory.Add(1)
		_ = c.sendMsg(ctx, &advertMsg{Status: statusNoMemory})
		return fmt.Errorf("%w: the test needs %d octets, %d of %d reserved", errMemoryBudget, cost, s.reserved.Load(), s.cfg.MaxMemory)
	}
	defer s.reserved.Add(-cost)
	if err := c.post(ctrlLen); err != nil { // the client's Advert
		return err
	}
	if err := c.prepareData(active); err != nil {
		return err
	}
	if err := c.sendMsg(ctx, &advertMsg{Region: regionOf(c.mr)}); err != nil {
		return err
	}
	if b, err = c.recvMsg(ctx); err != nil {
		return err
	}
	adv, _, err := parseAdvert(b)
	if err != nil {
		return err
	}
	c.peer = peerBuffer{STag: adv.STag, Length: adv.Length}
	if active {
		c.peak = setup.peakable() // reported back (Report.PeakGbps)
		rep, err = c.active(ctx)
		if rep.times != nil && rep.Ops > 0 {
			rep.PeakGbps = peakGbps([]StreamResult{{Report: rep}}, rep.Bytes/rep.Ops)
		}
	} else {
		rep, err = c.passive(ctx)
	}
	rctx := ctx
	switch {
	case ctx.Err() != nil:
		// The server is stopping: the Report still goes out, so that the
		// client learns why its run ended.
		rep.Status = statusStopped
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
		defer cancel()
	case err != nil && rep.Status == statusOK:
		rep.Status = statusFailed
	}
	if serr := c.sendMsg(rctx, &rep); serr != nil && err == nil {
		err = serr
	}
	return err
}

// stopGrace bounds what a stopping server waits for per stream: its Report
// to go out and the client to close its side.
const stopGrace = 2 * time.Second

// closeStream ends a served stream gracefully (RFC 5040 §6.2), so that the
// client learns rdmap.ErrPeerClosed rather than a Terminate; Close aborts
// it after stopGrace.
func closeStream(ep *rdmap.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	_ = ep.Close(ctx)
	cancel()
}
