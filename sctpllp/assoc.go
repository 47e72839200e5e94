package sctpllp

import (
	"context"
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/sessionsm"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/reseq"
)

// Defaults of Config.
const (
	// DefaultMaxPendingInitiates is the default limit of Initiates waiting
	// for the ULP (RFC 5043 §6.4).
	DefaultMaxPendingInitiates = 64
	// defaultMaxHeldBytes bounds what one stream holds for re-sequencing
	// and before Start, charged as held (buffer size classes, ring,
	// bookkeeping): the association's share (docs/security.md, "DDP
	// re-sequencer").
	defaultMaxHeldBytes = defaultMaxHeldAssocBytes
	// defaultMaxHeldAssocBytes is Config.MaxHeldAssocBytes's default: twice
	// what loss recovery held over sctp-native on loopback (7.7 MB), and
	// the per-address share holds sctp's 64 associations per address to
	// defaultMaxHeldAddrBytes: with sctp's own 4 MiB receive buffer each,
	// one address charges at most 320 MiB of membudget.DefaultLimit
	// (docs/security.md, "DDP re-sequencer").
	defaultMaxHeldAssocBytes = 16 << 20
	// defaultMaxHeldAddrBytes is Config.MaxHeldAddrBytes's default: all
	// the associations from one peer IP address together, 1/8 of
	// membudget.DefaultLimit.
	defaultMaxHeldAddrBytes = 64 << 20
	// defaultMaxGapTime is Config.MaxGapTime's default: three successive
	// T3-rtx of the missing chunk at RTO.Min (1+2+4 s) fit in it, and a
	// stalled gap frees its memory within DefaultIdleTimeout.
	defaultMaxGapTime = 10 * time.Second
	// DefaultIdleTimeout is Config.IdleTimeout for accepted associations.
	DefaultIdleTimeout = 10 * time.Second
	// defaultQuietTime is how long a stream identifier stays quarantined
	// after this side's final chunk when the peer's final chunk is not
	// seen (RFC 5043 §6.6).
	defaultQuietTime = 2 * time.Second
	// defaultLinger is how long Close waits for the peer's Terminate.
	defaultLinger = 5 * time.Second
)

// Config configures the adaptation. Zero fields take the defaults.
type Config struct {
	// MaxPendingInitiates is the finite limit of received Initiates not
	// yet decided by the ULP; beyond it an Initiate is answered with a
	// Session Terminate (RFC 5043 §5.2.3, §6.4). It also bounds the
	// streams that hold chunks which arrived before their session's
	// Initiate (see Association).
	MaxPendingInitiates int
	// MaxOpening bounds the Initiates this side keeps unanswered (Open
	// calls waiting for the peer's Accept or Reject); further Opens wait
	// for one of them to end. 0 takes the backend's accept backlog where
	// it has one (sctp-pion: 16, contract.AcceptBacklogger; a pion peer
	// discards the Initiate of a stream beyond its backlog until the
	// T3-rtx timeout, which doubles with each loss), no limit otherwise;
	// negative, no limit. Set it to 16 against a pion peer from another
	// stack.
	MaxOpening int
	// MaxHeldBytes bounds, per stream, the memory held for early chunks
	// (re-sequencing, RFC 5043 §10) plus segments received before Start,
	// charged as held: buffer size classes and bookkeeping, not payload.
	// A stream that exceeds it is terminated (errHeldLimit).
	MaxHeldBytes int
	// MaxHeldAssocBytes is the association's share of Budget for what its
	// streams hold together (default defaultMaxHeldAssocBytes): a peer
	// spreading DDP-SSN gaps over many streams cannot hold MaxHeldBytes on
	// each. MaxHeldAddrBytes bounds all the associations from one peer IP
	// address together (default defaultMaxHeldAddrBytes; negative: no
	// such bound). A charge beyond either, or beyond Budget, aborts the
	// association (errMemoryShare, AssocStats.ShareAborts).
	MaxHeldAssocBytes int
	MaxHeldAddrBytes  int
	// Budget is the process-wide budget the shares draw on; nil:
	// membudget.Process.
	Budget *membudget.Budget
	// MaxGapTime bounds how long a stream waits for a missing DDP-SSN
	// while later chunks are held (default defaultMaxGapTime); then the
	// stream is terminated and its held chunks freed.
	MaxGapTime time.Duration
	// IdleTimeout closes (aborts) the association once no session has
	// been live or pending for that long: an association that never opens
	// a session holds the peer's state for nothing. 0 means no limit for
	// NewAssociation and Dial, DefaultIdleTimeout for associations a
	// Listener accepts; negative, no limit.
	IdleTimeout time.Duration
	// QuietTime: see defaultQuietTime.
	QuietTime time.Duration
	// Linger: see defaultLinger.
	Linger time.Duration
	// KeepIdle keeps the association up when every session has ended.
	// By default the association is shut down once every stream that
	// carried a session is closed or erroneous (RFC 5040 §7).
	KeepIdle bool
	// Stack is the SCTP stack of Dial and Listen with its options, such
	// as native.Stack(native.Config{...}, nil) or pion.Stack(pion.Config{...});
	// Dial and Listen fail without one. NewAssociation does not use it.
	Stack backend.Stack
}

func (c Config) withDefaults() Config {
	if c.MaxPendingInitiates <= 0 {
		c.MaxPendingInitiates = DefaultMaxPendingInitiates
	}
	if c.MaxHeldBytes <= 0 {
		c.MaxHeldBytes = defaultMaxHeldBytes
	}
	if c.MaxHeldAssocBytes <= 0 {
		c.MaxHeldAssocBytes = defaultMaxHeldAssocBytes
	}
	if c.MaxHeldAddrBytes == 0 {
		c.MaxHeldAddrBytes = defaultMaxHeldAddrBytes
	}
	if c.Budget == nil {
		c.Budget = membudget.Process
	}
	if c.MaxGapTime <= 0 {
		c.MaxGapTime = defaultMaxGapTime
	}
	if c.QuietTime <= 0 {
		c.QuietTime = defaultQuietTime
	}
	if c.Linger <= 0 {
		c.Linger = defaultLinger
	}
	return c
}

// OpenRequest is the active side's Initiate.
type OpenRequest struct {
	// PrivateData is the ULP private data; at most 512 octets, 508 for
	// an enhanced request (RFC 5043 §5.2.3, RFC 6581 §7).
	PrivateData []byte
	// IRD and ORD are the initiator's values (RFC 6581 §9.1), 0..0x3FFF;
	// used when Enhanced is set.
	IRD, ORD int
	// Enhanced selects the RFC 6581 Enhanced Initiate.
	Enhanced bool
	// PeerToPeer is flag A of the initiator's word (RFC 6581 §9.2); RTR
	// (flags B–D) the RTR indications this side supports in the
	// peer-to-peer model, sent as 0 without PeerToPeer.
	PeerToPeer bool
	RTR        iwarp.RTR
}

// Association runs the RFC 5043 adaptation over one SCTP association:
// many DDP Stream Sessions, one per SCTP stream pair. Every chunk of a
// session, session control included, is taken in DDP-SSN order (RFC 5043
// §5.2.1, §6.1). Chunks that arrive before their session's Initiate are
// held for it, on at most Config.MaxPendingInitiates streams, for up to
// Config.QuietTime; then they are dropped, and on a stream that never
// carried a session answered with a Terminate (§6.1).
type Association struct {
	t    backend.Transport
	more backend.MoreWriter // t, if it is one
	cfg  Config
	n    int

	slots []atomic.Pointer[slot]
	mu    sync.Mutex // guards slot creation and the fields below

	incoming     chan *Incoming
	pendingIn    int
	early        int // sessions holding chunks that precede their Initiate
	live         int
	everSession  bool
	shuttingDown bool
	ended        bool

	done     chan struct{}
	err      error
	stopOnce sync.Once
	dropped  atomic.Uint64
	ctr      assocCounters
	idle     *time.Timer // Config.IdleTimeout; guarded by mu
	// opening holds a token per unanswered Initiate (Config.MaxOpening);
	// nil: no limit.
	opening chan struct{}
	held    reseq.Account // what the streams hold for the peer
	grace   shrinkGrace   // see shrinkGraceTime
	// shareErr: the association is aborted for its memory share
	// (overShare); idleGraced: idleExpired gave early chunks their
	// QuietTime once. Guarded by mu.
	shareErr   error
	idleGraced bool
	gone       atomic.Bool // the transport is done (onTransportDone)
}

// NewAssociation runs the adaptation over an established transport and
// starts it. The association owns t.
func NewAssociation(t backend.Transport, cfg Config) *Association {
	cfg = cfg.withDefaults()
	n := t.NumStreams()
	more, _ := t.(backend.MoreWriter)
	a := &Association{
		t:        t,
		more:     more,
		cfg:      cfg,
		n:        n,
		slots:    make([]atomic.Pointer[slot], n),
		incoming: make(chan *Incoming, cfg.MaxPendingInitiates),
		done:     make(chan struct{}),
	}
	a.held.Acct = membudget.NewAccount(cfg.Budget, int64(cfg.MaxHeldAssocBytes))
	a.held.Acct.SetReclaim(a.reclaimMemory)
	if cfg.MaxHeldAddrBytes > 0 {
		a.held.Addr = reseq.ShareOf(cfg.Budget, t.RemoteAddr(), int64(cfg.MaxHeldAddrBytes))
	}
	maxOpening := cfg.MaxOpening
	if bl, ok := t.(contract.AcceptBacklogger); ok && maxOpening == 0 {
		maxOpening = bl.AcceptBacklog()
	}
	if maxOpening > 0 {
		a.opening = make(chan struct{}, maxOpening)
	}
	if cfg.IdleTimeout > 0 {
		a.idle = time.AfterFunc(cfg.IdleTimeout, a.idleExpired)
	}
	t.Start(a.onMessage, a.onTransportDone)
	return a
}

// errNoStack reports a Dial or Listen without Config.Stack.
var errNoStack = errors.New("sctpllp: Config.Stack is nil: choose an SCTP stack (native.Stack, pion.Stack)")

// Dial opens an association to raddr with Config.Stack and runs the
// adaptation on it.
func Dial(ctx context.Context, raddr string, cfg Config) (*Association, error) {
	if cfg.Stack == nil {
		return nil, errNoStack
	}
	t, err := cfg.Stack.Dial(ctx, raddr)
	if err != nil {
		return nil, err
	}
	return NewAssociation(t, cfg), nil
}

// Listener accepts associations and runs the adaptation on each.
type Listener struct {
	l   backend.Listener
	cfg Config
}

// Listen listens for associations of Config.Stack on laddr.
func Listen(laddr string, cfg Config) (*Listener, error) {
	if cfg.Stack == nil {
		return nil, errNoStack
	}
	bl, err := cfg.Stack.Listen(laddr)
	if err != nil {
		return nil, err
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	return &Listener{l: bl, cfg: cfg}, nil
}

// Accept waits for the next association.
func (l *Listener) Accept(ctx context.Context) (*Association, error) {
	t, err := l.l.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return NewAssociation(t, l.cfg), nil
}

// Addr returns the listening address.
func (l *Listener) Addr() string { return l.l.Addr().String() }

// HandshakeStats returns the counters of the listener's stateless
// handshake (see sctp.HandshakeStats); zero for a stack without one.
func (l *Listener) HandshakeStats() sctp.HandshakeStats {
	if h, ok := l.l.(interface{ HandshakeStats() sctp.HandshakeStats }); ok {
		return h.HandshakeStats()
	}
	return sctp.HandshakeStats{}
}

// Close stops listening; accepted associations continue.
func (l *Listener) Close() error { return l.l.Close() }

// Transport returns the underlying transport.
func (a *Association) Transport() backend.Transport { return a.t }

// NumStreams returns the number of usable stream identifiers.
func (a *Association) NumStreams() int { return a.n }

// MULPDU returns the largest DDP segment of every session: the transport's
// MaxMessage less the DDP-SSN (2) and BundlingReserve, and never below
// 516 (RFC 5043 §9).
func (a *Association) MULPDU() int {
	m := max(a.t.MaxMessage()-pmtu.DDPSSNLen-pmtu.BundlingReserve, iwarp.SCTPMinMULPDU)
	a.grace.observe(m)
	return m
}

// segmentLimit is the largest DDP segment SendSegment accepts now: the
// MULPDU, or the previous one for shrinkGraceTime after the path shrank.
func (a *Association) segmentLimit() int { return a.grace.limit(a.MULPDU()) }

// checkSegment refuses a segment of n octets above segmentLimit.
func (a *Association) checkSegment(n int) error {
	if m := a.segmentLimit(); n > m {
		return fmt.Errorf("%w: %d octets, MULPDU %d (RFC 5043 §9)", llp.ErrSegmentTooLarge, n, m)
	}
	return nil
}

// Done is closed when the association has ended.
func (a *Association) Done() <-chan struct{} { return a.done }

// Err returns why the association ended: nil for a graceful shutdown
// (by either side), an error wrapping llp.ErrAborted otherwise. Valid
// after Done is closed.
func (a *Association) Err() error {
	select {
	case <-a.done:
		return a.err
	default:
		return nil
	}
}

// Dropped returns the number of chunks dropped because their stream
// identifier is outside NumStreams.
func (a *Association) droppedChunks() uint64 { return a.dropped.Load() }

func (a *Association) slot(sid uint16) *slot {
	if sl := a.slots[sid].Load(); sl != nil {
		return sl
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if sl := a.slots[sid].Load(); sl != nil {
		return sl
	}
	sl := &slot{sid: sid}
	a.slots[sid].Store(sl)
	return sl
}

func (a *Association) isEnded() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ended || a.shuttingDown
}

// Open starts a DDP Stream Session on stream sid as the active side: it
// sends the (Enhanced) Initiate and waits for the reply (RFC 5043 §6.2).
// A Reject returns *RejectError with the peer's private data; a Terminate
// returns ErrSessionTerminated (§6.4). If ctx ends first, Open returns
// its error at once and the request is withdrawn: a Terminate follows the
// peer's Accept, never the Initiate alone (§6.6), and the stream stays in
// use until the peer replies or the association ends. At most
// Config.MaxOpening Initiates are unanswered at a time: a further Open
// waits for one of them to end, within ctx.
func (a *Association) Open(ctx context.Context, sid uint16, req OpenRequest) (Session, error) {
	if int(sid) >= a.n {
		return nil, fmt.Errorf("%w: %d of %d", backend.ErrStreamRange, sid, a.n)
	}
	c := ddpchunk.Control{Function: funcInitiate, PrivateData: req.PrivateData}
	if req.Enhanced {
		if req.IRD < 0 || req.IRD > iwarp.NoNegotiation || req.ORD < 0 || req.ORD > iwarp.NoNegotiation {
			return nil, fmt.Errorf("%w: IRD %d ORD %d", iwarp.ErrInvalidIRDORD, req.IRD, req.ORD)
		}
		c.Function = funcEnhancedInitiate
		c.IRDORD = iwarpwire.WireIRDORD(iwarp.IRDORD{PeerToPeer: req.PeerToPeer, RTR: req.RTR, IRD: uint16(req.IRD), ORD: uint16(req.ORD)})
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if a.isEnded() {
		return nil, backend.ErrAssociationClosed
	}
	if a.opening != nil {
		select {
		case a.opening <- struct{}{}:
			defer func() { <-a.opening }()
		case <-a.done:
			return nil, backend.ErrAssociationClosed
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	sl := a.slot(sid)
	sl.mu.Lock()
	if err := a.slotAvailable(sl, time.Now()); err != nil {
		sl.mu.Unlock()
		return nil, fmt.Errorf("%w: stream %d", err, sid)
	}
	s := newSession(a, sl, true)
	s.params.Enhanced = req.Enhanced
	s.params.LocalIRDORD = c.IRDORD
	res := make(chan error, 1)
	s.openRes = res
	s.counted = true
	s.setState(sessionsm.InitSent)
	sl.cur.Store(s)
	sl.mu.Unlock()
	a.sessionStarted()

	s.txMu.Lock()
	err := s.sendControlLocked(c)
	s.txMu.Unlock()
	if err != nil {
		s.sendClosed.Store(true)
		s.markSentFinal()
		s.finish(fmt.Errorf("%w: %w", llp.ErrClosed, err))
		return nil, fmt.Errorf("sctpllp: stream %d: Initiate: %w", sid, err)
	}
	select {
	case err := <-res:
		if err != nil {
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		s.withdraw(res)
		return nil, context.Cause(ctx)
	}
}

// Accept waits for the next received Initiate (RFC 5043 §6.2). Initiates
// withdrawn by the peer before they are taken are skipped.
func (a *Association) Accept(ctx context.Context) (*Incoming, error) {
	for {
		select {
		case in := <-a.incoming:
			if in.s.st() == sessionsm.InitReceived {
				return in, nil
			}
		case <-a.done:
			return nil, backend.ErrAssociationClosed
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// MarkErroneous labels stream sid erroneous (RFC 5040 §7): its session
// ends (HandleClosed with an error wrapping errErroneous, a Session
// Terminate to the peer), no further data is sent or delivered on it, and
// the identifier is never used again on this association. When every
// stream that carried a session is closed or erroneous the association is
// shut down.
func (a *Association) MarkErroneous(sid uint16) error {
	if int(sid) >= a.n {
		return fmt.Errorf("%w: %d of %d", backend.ErrStreamRange, sid, a.n)
	}
	sl := a.slot(sid)
	sl.mu.Lock()
	if !sl.erroneous.Swap(true) {
		a.ctr.erroneous.Add(1)
	}
	s := sl.cur.Load()
	sl.mu.Unlock()
	if s != nil && !s.closePending.Load() {
		s.requestTerminate()
		s.finish(fmt.Errorf("%w: %w: stream %d", llp.ErrClosed, errErroneous, sid))
	}
	return nil
}

// Close shuts the association down gracefully (SCTP SHUTDOWN): open
// sessions end with an error wrapping llp.ErrAborted, without a Session
// Terminate each (RFC 5043 §11.3). It waits until the association has
// ended and must not be called from an llp.Handler callback.
func (a *Association) Close() error {
	a.stop(false)
	<-a.done
	return nil
}

// Abort ends the association at once (SCTP ABORT). Like Close it waits and
// must not be called from an llp.Handler callback.
func (a *Association) Abort() error {
	a.stop(true)
	<-a.done
	return nil
}

func (a *Association) stop(abort bool) {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.shuttingDown = true
		a.mu.Unlock()
		if abort {
			_ = a.t.Abort()
		} else {
			_ = a.t.Close()
		}
	})
}

func (a *Association) sessionStarted() {
	a.mu.Lock()
	a.live++
	a.idleGraced = false
	a.mu.Unlock()
}

// established records that a session reached the established state. Only
// established sessions count for the shutdown rule of RFC 5040 §7: a
// rejected or withdrawn Initiate never was a DDP stream, so rejecting the
// first request does not end the association.
func (a *Association) established() {
	a.mu.Lock()
	a.everSession = true
	a.mu.Unlock()
}

// sessionEnded applies RFC 5040 §7: "when all Streams are either
// gracefully torn down or are labeled as erroneous Streams, the LLP
// connection MUST be torn down".
func (a *Association) sessionEnded() {
	a.mu.Lock()
	a.live--
	shut := a.live == 0 && a.pendingIn == 0 && a.everSession && !a.cfg.KeepIdle && !a.ended && !a.shuttingDown
	if a.live == 0 && a.idle != nil {
		a.idle.Reset(a.cfg.IdleTimeout)
	}
	a.mu.Unlock()
	if shut {
		go a.stop(false)
	}
}

// idleExpired aborts the association if no session is live or pending
// since Config.IdleTimeout (re-armed when the last one ends). Chunks held
// for an Initiate that has not arrived get one QuietTime more, once: a
// peer that keeps sending such chunks never opens a session.
func (a *Association) idleExpired() {
	a.mu.Lock()
	idle := a.live == 0 && a.pendingIn == 0 && !a.ended && !a.shuttingDown
	if idle && a.early > 0 && !a.idleGraced {
		a.idleGraced = true
		a.idle.Reset(a.cfg.QuietTime)
		idle = false
	}
	a.mu.Unlock()
	if idle {
		a.ctr.idleClosed.Add(1)
		a.stop(true)
	}
}

func (a *Association) incomingDone() {
	a.mu.Lock()
	a.pendingIn--
	a.mu.Unlock()
}

// onInitiate admits an Initiate on an idle stream (called from the
// session's receive path, under the slot's rxMu). The Incoming is handed to
// Accept by session.offerIncoming once the chunks processed together with
// the Initiate are done, so an Initiate withdrawn by a Terminate that
// arrived before it is never offered.
func (a *Association) onInitiate(s *session, c ddpchunk.Control) error {
	s.params.Enhanced = ddpchunk.Enhanced(c.Function)
	s.params.PeerIRDORD = c.IRDORD
	s.params.PeerPrivateData = append([]byte(nil), c.PrivateData...)
	in := &Incoming{s: s, StreamID: s.sid, Enhanced: s.params.Enhanced, IRDORD: c.IRDORD,
		PrivateData: s.params.PeerPrivateData}
	a.mu.Lock()
	if a.pendingIn >= a.cfg.MaxPendingInitiates || a.ended || a.shuttingDown {
		a.mu.Unlock()
		// RFC 5043 §6.4: too many requests pending a ULP decision.
		s.mu.Lock()
		s.setState(sessionsm.Done)
		s.mu.Unlock()
		s.requestTerminate()
		s.finish(fmt.Errorf("%w: too many pending Initiates", llp.ErrClosed))
		return errSessionOver
	}
	a.pendingIn++
	a.live++
	a.idleGraced = false
	a.mu.Unlock()
	s.mu.Lock()
	s.setState(sessionsm.InitReceived)
	s.incoming = in
	s.counted = true
	s.mu.Unlock()
	s.unoffered = in
	return nil
}

// holdEarly reserves room for one more stream holding chunks that precede
// its Initiate.
func (a *Association) holdEarly() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.early >= a.cfg.MaxPendingInitiates || a.ended || a.shuttingDown {
		return false
	}
	a.early++
	return true
}

func (a *Association) earlyDone() {
	a.mu.Lock()
	a.early--
	a.mu.Unlock()
}

// onMessage is the transport's delivery callback.
func (a *Association) onMessage(sid uint16, ppid uint32, b []byte) {
	if int(sid) >= a.n {
		a.dropped.Add(1)
		return
	}
	sl := a.slots[sid].Load()
	if sl == nil {
		sl = a.slot(sid)
	}
	sl.rxMu.Lock()
	var s *session
	// The data path (dispatch's first case, without its call): a chunk
	// with its DDP-SSN for the running session of a stream that is not
	// erroneous.
	if cur, erroneous := sl.current(); cur != nil && !erroneous && cur.st() != sessionsm.Done && len(b) >= pmtu.DDPSSNLen {
		cur.receive(ppid, b)
		s = cur
	} else {
		s = a.dispatch(sl, ppid, b)
	}
	sl.rxMu.Unlock()
	if s != nil && s.closePending.Load() {
		s.deliverClosed()
	}
}

// unboundKind classifies a chunk received on a stream without a session.
type unboundKind uint8

const (
	unboundInvalid   unboundKind = iota // malformed, or not PPID 16 or 17
	unboundSegment                      // a DDP Segment Chunk
	unboundInitiate                     // an (Enhanced) Initiate
	unboundTerminate                    // a Terminate
	unboundControl                      // another session control message
)

// classifyUnbound returns the DDP-SSN and kind of a chunk received on a
// stream without a session.
func classifyUnbound(ppid uint32, b []byte) (uint16, unboundKind) {
	switch ppid {
	case backend.PPIDSegment:
		if sc, _, err := ddpchunk.ParseSegment(b); err == nil {
			return sc.SSN, unboundSegment
		}
	case backend.PPIDControl:
		c, _, err := ddpchunk.ParseControl(b)
		switch {
		case err != nil:
		case c.Function == funcTerminate:
			return c.SSN, unboundTerminate
		case ddpchunk.Base(c.Function) == funcInitiate:
			return c.SSN, unboundInitiate
		default:
			return c.SSN, unboundControl
		}
	}
	return 0, unboundInvalid
}

// startSession begins a passive session on sl with its first chunk; early
// is set when that chunk precedes the Initiate and is held (the session
// then waits at most QuietTime for the Initiate), fresh when the stream
// never carried a session before. The caller holds sl.rxMu.
func (a *Association) startSession(sl *slot, ppid uint32, b []byte, early, fresh bool) *session {
	s := newSession(a, sl, false)
	if early {
		s.mu.Lock()
		s.earlyCounted = true
		s.earlyFresh = fresh
		s.earlyTimer = time.AfterFunc(a.cfg.QuietTime, s.expireEarly)
		s.mu.Unlock()
	}
	sl.mu.Lock()
	sl.cur.Store(s)
	sl.mu.Unlock()
	s.receive(ppid, b)
	return s
}

// dispatch routes one message to the stream's session, starting a new
// passive session for an Initiate on an idle stream; the caller holds
// sl.rxMu.
func (a *Association) dispatch(sl *slot, ppid uint32, b []byte) *session {
	cur, erroneous := sl.current()
	if erroneous {
		return nil // RFC 5040 §7: no further data on an erroneous stream
	}
	// A running session is not over: the clock (50 ns a read on some
	// hosts, once per message) is read only for one that is done.
	if cur != nil && (cur.st() != sessionsm.Done || !cur.over(time.Now(), a.cfg.QuietTime)) {
		if len(b) < pmtu.DDPSSNLen {
			cur.fail(&protocolError{StreamID: sl.sid, Reason: "chunk without DDP-SSN", Err: errTruncated})
			return cur
		}
		cur.receive(ppid, b)
		return cur
	}
	// No session on the stream. A session starts with its Initiate,
	// DDP-SSN 0 (RFC 5043 §6.1); a chunk with a later DDP-SSN within the
	// window of §10 may precede it and is held for it.
	ssn, kind := classifyUnbound(ppid, b)
	switch {
	case kind == unboundInitiate && ssn == 0 && !a.isEnded():
		return a.startSession(sl, ppid, b, false, false)
	case kind != unboundInvalid && ssn != 0 && ssn <= contract.MaxSSNWindow && a.holdEarly():
		return a.startSession(sl, ppid, b, true, cur == nil)
	case kind == unboundTerminate:
		if cur != nil {
			cur.receiveWhileDone(ppid, b)
		}
		return nil // a late or stray Terminate needs no answer
	}
	if cur != nil && cur.st() == sessionsm.Done {
		cur.receiveWhileDone(ppid, b)
		if cur.over(time.Now(), a.cfg.QuietTime) {
			return nil
		}
	}
	// A chunk for a stream without a session: terminate that stream
	// (RFC 5043 §6.1) with a Terminate of DDP-SSN 0, and quarantine it.
	s := newSession(a, sl, false)
	s.mu.Lock()
	s.setState(sessionsm.Done)
	s.closeErr = &protocolError{StreamID: sl.sid, Reason: "chunk on a stream without a session"}
	s.closePending.Store(true)
	s.mu.Unlock()
	sl.mu.Lock()
	sl.cur.Store(s)
	sl.mu.Unlock()
	s.requestTerminate()
	return nil
}

// onTransportDone ends every session when the association ends
// (RFC 5043 §11.3: no Session Terminate per stream; every consumer is
// notified).
func (a *Association) onTransportDone(err error) {
	a.mu.Lock()
	a.ended = true
	if a.shareErr != nil {
		err = a.shareErr
	}
	if a.idle != nil {
		a.idle.Stop()
	}
	a.mu.Unlock()
	a.gone.Store(true)
	for i := range a.slots {
		sl := a.slots[i].Load()
		if sl == nil {
			continue
		}
		s, _ := sl.current()
		if s != nil && s.closePending.Load() {
			s.deliverClosed() // frees what it still holds
		}
		if s == nil || s.closePending.Load() {
			continue
		}
		var cause error
		if s.st() == sessionsm.LocalClosed && err == nil {
			cause = nil // our Terminate went out before the graceful end
		} else {
			cause = &AssociationError{Err: err}
		}
		s.sendClosed.Store(true)
		s.finish(cause)
	}
	a.held.Close()
	a.err = err
	close(a.done)
}
