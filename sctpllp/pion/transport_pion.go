package pion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"

	"github.com/pion/logging"
	"github.com/pion/sctp"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/internal/pionlog"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/sockbuf"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// pion's limits. The header sizes that turn a path MTU into pion's SCTP
// packet budget and into the largest unfragmented user message are pmtu's
// (IP, UDP: RFC 6951 §5) and internal/sctp/wire's (RFC 9260 §3, §3.3.1).
const (
	// pionMaxPacket is the largest SCTP packet pion handles: its receive
	// buffer is a fixed 8192 octets and larger packets break the
	// association.
	pionMaxPacket = 8192
	// pionStreamSentinel is a stream identifier the adaptation never uses
	// on the wire (it is outside every stream count this backend
	// offers). The transport opens it locally, without sending anything,
	// to learn the cause when pion's association ends.
	pionStreamSentinel = 0xFFFF
)

// Defaults of Config (why: docs/sctp-userspace.md, "Settings and why").
const (
	// DefaultStreams is the default stream count.
	DefaultStreams = 4096
	// defaultDeadPeerTimeout is Config.DeadPeerTimeout's default: a
	// peer silent this long (probes unanswered) is declared dead, the
	// association fails and every outstanding work request is flushed.
	defaultDeadPeerTimeout = 30 * time.Second
	// defaultSocketBuffer is the requested UDP socket buffer (both ways).
	defaultSocketBuffer = 8 << 20
	// defaultPionReceiveBuffer is pion's receive window.
	defaultPionReceiveBuffer = 16 << 20
	// defaultStreamSendBuffer bounds the unacknowledged octets per stream.
	defaultStreamSendBuffer = 4 << 20
	// defaultSendBuffer bounds the unacknowledged octets per association.
	defaultSendBuffer = 16 << 20
	// defaultHandshakeTimeout bounds the SCTP four-way handshake.
	defaultHandshakeTimeout = 10 * time.Second
	// defaultLoopbackMTU is the path MTU assumed towards a loopback
	// address: pion's largest packet plus UDP and IPv4 headers.
	defaultLoopbackMTU = pionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen
	// defaultMTU is the path MTU assumed towards any other address
	// (Ethernet); pion has no path MTU discovery.
	defaultMTU = 1500
)

// Config configures the userspace SCTP backend (github.com/pion/sctp
// over UDP or any net.Conn). Zero fields take the defaults
// (docs/sctp-userspace.md).
type Config struct {
	// MTU is the IP path MTU towards the peer. pion's SCTP packet budget
	// is MTU less the IP and UDP headers, at most 8192. 0 selects 8220
	// (8192 plus the UDP and IPv4 headers) for a loopback peer and 1500
	// otherwise. For a net.Conn that is not UDP (NewTransport), MTU is
	// the SCTP packet size itself.
	MTU int
	// Streams is the number of streams the adaptation may use
	// (NumStreams; 0: DefaultStreams). pion always advertises 65535 in
	// INIT; this is the local limit, at most 65535.
	Streams int
	// SocketBuffer is the UDP SO_RCVBUF/SO_SNDBUF requested; the kernel
	// caps it at net.core.rmem_max / wmem_max. 0 means 8 MiB.
	SocketBuffer int
	// ReceiveBuffer is pion's receive buffer (advertised window).
	ReceiveBuffer uint32
	// StreamSendBuffer bounds the unacknowledged octets per stream.
	StreamSendBuffer int
	// SendBuffer bounds the unacknowledged octets of the association.
	SendBuffer int
	// HandshakeTimeout bounds the association set-up of the passive side.
	HandshakeTimeout time.Duration
	// LoggerFactory is handed to pion; nil routes pion's log lines through
	// log/slog's default logger (internal/pionlog), with the attribute
	// pion=SCOPE.
	LoggerFactory logging.LoggerFactory
	// DeadPeerTimeout, when positive, aborts the association after that
	// long without a packet from the peer (ending with ErrPeerUnresponsive
	// and llp.ErrAborted): pion's T3-rtx never gives up and it sends no
	// HEARTBEAT of its own (RFC 9260 §8.1, §8.3). Meanwhile a HEARTBEAT
	// goes out every DeadPeerTimeout/4 and pion's RTO is capped at
	// DeadPeerTimeout/3 (deadpeer_pion.go). 0 means 30 s; negative keeps
	// pion's behaviour, no failure detection at all.
	DeadPeerTimeout time.Duration
	// InitAckRate bounds the INIT ACKs (and answers to out-of-the-blue
	// packets) a listener sends per second; 0 means defaultInitAckRate.
	// A listener answers INITs statelessly (pion_handshake.go): an INIT
	// costs one INIT ACK and no memory.
	InitAckRate int
	// LocalAddr, for Dial, is the local IP address to send from
	// (empty: the system's choice).
	LocalAddr string
	// MaxAssociations and MaxAssociationsPerAddress bound a listener's
	// associations, in total and per peer IP address (0:
	// defaultMaxAssociations 1024, defaultMaxAssociationsPerAddress 64);
	// a valid COOKIE ECHO beyond them is answered with an ABORT.
	MaxAssociations, MaxAssociationsPerAddress int
	// LegacyHandshake makes a listener hand every INIT to a new pion
	// association, as before the stateless handshake: about 47 KB and six
	// goroutines per INIT until the handshake times out. For comparison
	// only; it leaves the listener open to INIT floods.
	LegacyHandshake bool
	// snap, set by the listener for an association a valid COOKIE ECHO
	// established, starts pion from the two INITs (SNAP).
	snap *snapInit
	// Capture, if not nil, records every SCTP packet of the association
	// as sent and received over UDP (capture.Writer.SCTPOverUDPConn): the
	// packets on the wire, the Adaptation Layer Indication included, with
	// the server's UDP port written as 9899 so that Wireshark decodes them.
	Capture *capture.Writer
	// AllowMissingAdaptation accepts a peer whose INIT or INIT ACK carries
	// no DDP Adaptation Layer Indication (RFC 5043 §5.1, §11.1). By default
	// the indication is sent and required: an association with such a peer
	// is aborted and set-up fails with ErrAdaptationMismatch. Set it only
	// for peers that cannot send one (pion-based stacks of other projects).
	AllowMissingAdaptation bool
	// PathMTU, when not nil, tracks the path MTU of every association
	// (RFC 8899, docs/pmtu.md): dialPMTU and listenPMTU in pmtu_pion.go.
	// pion's packet budget is then its maximum and MTU is ignored.
	PathMTU *dplpmtud.ConnConfig

	// adaptation overrides the indication sent (tests only); nil means
	// AdaptationIndicationDDP, a pointer to 0 sends none.
	adaptation *uint32
}

func (c Config) withDefaults() Config {
	if c.DeadPeerTimeout == 0 {
		c.DeadPeerTimeout = defaultDeadPeerTimeout
	}
	if c.Streams <= 0 || c.Streams > 0xFFFF {
		c.Streams = DefaultStreams
	}
	if c.SocketBuffer <= 0 {
		c.SocketBuffer = defaultSocketBuffer
	}
	if c.ReceiveBuffer == 0 {
		c.ReceiveBuffer = defaultPionReceiveBuffer
	}
	if c.StreamSendBuffer <= 0 {
		c.StreamSendBuffer = defaultStreamSendBuffer
	}
	if c.SendBuffer <= 0 {
		c.SendBuffer = defaultSendBuffer
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = defaultHandshakeTimeout
	}
	return c
}

// pionPacketSize returns pion's SCTP packet budget for a path MTU towards
// raddr (nil raddr: the MTU is already the packet size).
func pionPacketSize(mtu int, raddr *net.UDPAddr) int {
	if raddr == nil {
		if mtu <= 0 {
			mtu = pionMaxPacket
		}
		return min(mtu, pionMaxPacket)
	}
	ipHdr := pmtu.IPv4HeaderLen
	if raddr.IP.To4() == nil {
		ipHdr = pmtu.IPv6HeaderLen
	}
	if mtu <= 0 {
		mtu = defaultMTU
		if raddr.IP.IsLoopback() {
			mtu = pionMaxPacket + pmtu.UDPHeaderLen + ipHdr
		}
	}
	return min(mtu-ipHdr-pmtu.UDPHeaderLen, pionMaxPacket)
}

// maxMessageForPacket is the largest user message pion sends in one DATA
// chunk for a packet budget: pion fragments any message above
// floor4(packet − 12 − 16) (its maxPayloadSizeForMTU without I-DATA, which
// this backend disables).
func maxMessageForPacket(packet int) int {
	n := packet - wire.HeaderLen - wire.DataHeaderLen
	return n - n%4
}

// minPionPacket is the smallest packet budget that carries a 516-octet
// MULPDU plus the DDP-SSN in one DATA chunk (RFC 5043 §9).
const minPionPacket = wire.HeaderLen + wire.DataHeaderLen + iwarp.SCTPMinMULPDU + pmtu.DDPSSNLen + 2

// transport is the backend.Transport over github.com/pion/sctp. Every
// message is sent unordered and reliable (RFC 5043 §10) with its PPID. A
// stream that receives has a reader goroutine while messages arrive
// (reader.go). Writes block while a stream has more than StreamSendBuffer,
// the association more than SendBuffer octets unacknowledged, or the stream
// contract.MaxOutstandingSegments chunks outstanding (RFC 5043 §10); session
// control (PPID 17) is never held back. pion has no path failure detection:
// Config.DeadPeerTimeout (on by default) and, for Dial's connected socket,
// an ICMP port unreachable end the association. More: docs/sctp-userspace.md.
type transport struct {
	assoc      *sctp.Association
	conn       net.Conn
	udp        *net.UDPConn // nil unless the transport owns a UDP socket
	cfg        Config
	packet     int
	maxMsg     int
	numStreams int

	mu      sync.RWMutex
	streams map[uint16]*pionStream
	lowAny  chan struct{} // closed and replaced when any stream drains

	refused  atomic.Uint64 // streams started by the peer beyond numStreams
	started  atomic.Bool
	fn       func(sid uint16, ppid uint32, b []byte)
	doneFn   func(err error)
	closing  atomic.Bool
	aborting atomic.Bool
	closed   chan struct{} // closed when teardown starts
	once     sync.Once
	readers  sync.WaitGroup
	// noReaders is set (under mu) once pion's association has closed:
	// no stream reader starts after it (reader.go).
	noReaders bool
	// The streams the last packet pion read brought something for
	// (reader.go: sniff, wakeSniffed); pion's read goroutine only.
	sniffed, resetIDs []uint16
	resetAll          bool
	woken             []*pionStream
	finished          chan struct{} // closed after done was called
	// ended is closed when pion's association has closed (AcceptStream
	// failed): after a peer's SHUTDOWN, once its handshake completed.
	ended    chan struct{}
	cause    atomic.Pointer[error]
	sentinel *sctp.Stream
	pmtu     *dplpmtud.Conn // nil unless set up by dialPMTU (pmtu_pion.go)
	live     *liveConn      // nil when DeadPeerTimeout is negative (deadpeer_pion.go)
	wconn    *writeErrConn
}

type pionStream struct {
	s         *sctp.Stream
	sid       uint16
	low       chan struct{} // signalled by OnBufferedAmountLow
	reset     chan struct{} // closed by ResetStream
	resetOnce sync.Once
	sinceZero atomic.Int64 // messages sent since BufferedAmount was seen 0
	outClosed atomic.Bool
	eof       atomic.Bool
	readerState
}

var (
	_ backend.Transport         = (*transport)(nil)
	_ contract.AcceptBacklogger = (*transport)(nil)
)

// NewTransport runs the SCTP handshake over conn (client: active open)
// and returns the established transport; conn is owned by it from then
// on. For a conn that is not a *net.UDPConn, cfg.MTU is the SCTP packet
// size. Stack's Dial and Listen make the UDP socket themselves.
func NewTransport(ctx context.Context, conn net.Conn, client bool, cfg Config) (backend.Transport, error) {
	t, err := newTransport(ctx, conn, client, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// newTransport runs the SCTP handshake over conn (client: active open)
// and returns the established transport. conn is owned by the transport
// from then on. cfg.MTU is the SCTP packet size for a conn that is not a
// *net.UDPConn.
func newTransport(ctx context.Context, conn net.Conn, client bool, cfg Config) (*transport, error) {
	cfg = cfg.withDefaults()
	var raddr *net.UDPAddr
	udpConn, isUDP := conn.(*net.UDPConn)
	switch a := conn.RemoteAddr().(type) {
	case *net.UDPAddr:
		raddr = a
	}
	packet := pionPacketSize(cfg.MTU, raddr)
	if packet < minPionPacket {
		_ = conn.Close()
		return nil, fmt.Errorf("sctpllp: MTU %d leaves an SCTP packet of %d octets, need %d for a 516-octet MULPDU (RFC 5043 §9)",
			cfg.MTU, packet, minPionPacket)
	}
	maxMsg := maxMessageForPacket(packet)
	if cfg.Capture != nil {
		// The server's UDP port is recorded as 9899 (RFC 6951) so that
		// Wireshark decodes SCTP; the first packet's comment names it.
		conn = cfg.Capture.SCTPOverUDPConn(conn, !client)
	}
	wconn := &writeErrConn{Conn: conn}
	wconn.ali.send = backend.AdaptationIndicationDDP
	if cfg.adaptation != nil {
		wconn.ali.send = *cfg.adaptation
	}
	var pconn net.Conn = wconn
	var live *liveConn
	if cfg.DeadPeerTimeout > 0 {
		live = newLiveConn(wconn)
		pconn = live
	}
	opts := []sctp.AssociationOption{
		sctp.WithNetConn(pconn),
		sctp.WithMTU(uint32(packet)),
		sctp.WithMaxReceiveBufferSize(cfg.ReceiveBuffer),
		sctp.WithMaxMessageSize(uint32(maxMsg)),
		// Plain DATA chunks (RFC 4960) as RFC 5043 specifies, not I-DATA.
		sctp.WithEnableInterleaving(false),
	}
	lf := cfg.LoggerFactory
	if lf == nil {
		lf = pionlog.Factory(nil) // pion's lines go through slog.Default, never straight to stderr
	}
	opts = append(opts, sctp.WithLoggerFactory(lf))
	if live != nil {
		opts = append(opts, sctp.WithRTOMax(deadPeerRTOMax(cfg.DeadPeerTimeout)))
	}
	var (
		a   *sctp.Association
		err error
	)
	if cfg.snap != nil {
		// The handshake was done statelessly by the listener's
		// demultiplexer: pion starts established from both INITs.
		wconn.ali.setPeer(cfg.snap.cookie.PeerAdaptation, cfg.snap.cookie.HasPeerAdaptation)
		opts = append(opts, sctp.WithSNAP(cfg.snap.local, cfg.snap.remote))
		client = true
	}
	if client {
		copts := make([]sctp.ClientOption, len(opts))
		for i, o := range opts {
			copts[i] = o
		}
		a, err = sctp.ClientContext(ctx, copts...)
	} else {
		a, err = serverContext(ctx, conn, opts)
	}
	if err != nil {
		_ = conn.Close()
		if werr := wconn.failed(); errors.Is(werr, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("sctpllp: SCTP handshake: peer port unreachable (ICMP): %w", werr)
		}
		return nil, fmt.Errorf("sctpllp: SCTP handshake: %w", err)
	}
	if ind, ok := wconn.ali.peerIndication(); !cfg.AllowMissingAdaptation && (!ok || ind != backend.AdaptationIndicationDDP) {
		// RFC 5043 §5.1, §11.1: not a DDP peer. The association is
		// aborted, so the peer learns it at once too.
		a.Abort("no DDP Adaptation Layer Indication (RFC 5043 5.1)")
		_ = a.Close()
		_ = conn.Close()
		if ok {
			return nil, fmt.Errorf("%w (peer sent %#08x)", backend.ErrAdaptationMismatch, ind)
		}
		return nil, fmt.Errorf("%w (peer sent none)", backend.ErrAdaptationMismatch)
	}
	t := &transport{
		assoc:      a,
		conn:       conn,
		cfg:        cfg,
		packet:     packet,
		maxMsg:     maxMsg,
		numStreams: cfg.Streams,
		streams:    make(map[uint16]*pionStream),
		lowAny:     make(chan struct{}),
		closed:     make(chan struct{}),
		finished:   make(chan struct{}),
		ended:      make(chan struct{}),
		live:       live,
		wconn:      wconn,
	}
	if isUDP {
		t.udp = udpConn
	}
	if cfg.Streams >= pionStreamSentinel {
		t.numStreams = pionStreamSentinel // the sentinel id stays unused
	}
	s, err := a.OpenStream(pionStreamSentinel, sctp.PayloadProtocolIdentifier(0))
	if err != nil {
		_ = a.Close()
		_ = conn.Close()
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	t.sentinel = s
	wconn.rx.Store(t)
	return t, nil
}

func serverContext(ctx context.Context, conn net.Conn, opts []sctp.AssociationOption) (*sctp.Association, error) {
	sopts := make([]sctp.ServerOption, len(opts))
	for i, o := range opts {
		sopts[i] = o
	}
	type result struct {
		a   *sctp.Association
		err error
	}
	ch := make(chan result, 1)
	go func() {
		a, err := sctp.ServerWithOptions(sopts...)
		ch <- result{a, err}
	}()
	select {
	case r := <-ch:
		return r.a, r.err
	case <-ctx.Done():
		// Closing the conn ends pion's read loop and so the handshake.
		_ = conn.Close()
		r := <-ch
		if r.a != nil {
			_ = r.a.Close()
		}
		return nil, context.Cause(ctx)
	}
}

// dial opens a UDP socket towards raddr ("host:port") and an SCTP
// association over it (active side).
func dial(ctx context.Context, raddr string, cfg Config) (*transport, error) {
	cfg = cfg.withDefaults()
	ua, err := net.ResolveUDPAddr("udp", raddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	var la *net.UDPAddr
	if cfg.LocalAddr != "" {
		if la, err = net.ResolveUDPAddr("udp", net.JoinHostPort(cfg.LocalAddr, "0")); err != nil {
			return nil, fmt.Errorf("sctpllp: local address: %w", err)
		}
	}
	uc, err := net.DialUDP("udp", la, ua)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	sockbuf.SetSocketBuffers(uc, cfg.SocketBuffer)
	return newTransport(ctx, uc, true, cfg)
}

// Start implements backend.Transport.
func (t *transport) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	if !t.started.CompareAndSwap(false, true) {
		panic("sctpllp: transport.Start called twice")
	}
	t.fn, t.doneFn = fn, done
	t.readers.Add(2)
	go t.acceptLoop()
	go t.sentinelLoop()
	if t.live != nil {
		t.readers.Add(1)
		go t.deadPeerLoop()
	}
	go func() {
		t.readers.Wait()
		var err error
		if p := t.cause.Load(); p != nil {
			err = *p
		}
		t.doneFn(err)
		close(t.finished)
	}()
}

func (t *transport) setCause(err error) {
	// A peer's ABORT is checked first: it ends pion at once, the failing
	// writes can make the adaptation close the association (all sessions
	// erroneous, RFC 5040 §7) before this runs, and that local Close must
	// not turn the peer's ABORT into a graceful end.
	werr := t.wconn.failed()
	if errors.Is(err, sctp.ErrChunk) && !t.aborting.Load() {
		err = fmt.Errorf("%w: peer sent SCTP ABORT: %w", llp.ErrAborted, err)
	} else if t.aborting.Load() {
		err = fmt.Errorf("%w: local abort", llp.ErrAborted)
	} else if werr != nil && (t.closing.Load() || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)) {
		// pion's write loop closes the conn when a write fails (for
		// example ECONNREFUSED after an ICMP port unreachable: the peer
		// process is gone), and its read loop then reports only the
		// closed conn. That is a failure, not a graceful end, also when
		// the adaptation's Close (its sessions failing on those writes)
		// came first.
		if errors.Is(werr, syscall.ECONNREFUSED) {
			err = fmt.Errorf("%w: peer port unreachable (ICMP): %w", llp.ErrAborted, werr)
		} else {
			err = fmt.Errorf("%w: %w", llp.ErrAborted, werr)
		}
	} else if t.closing.Load() {
		err = nil
	} else if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = nil // graceful SHUTDOWN by the peer
	} else if errors.Is(err, syscall.ECONNREFUSED) {
		err = fmt.Errorf("%w: peer port unreachable (ICMP): %w", llp.ErrAborted, err)
	} else if err != nil {
		err = fmt.Errorf("%w: %w", llp.ErrAborted, err)
	}
	t.cause.CompareAndSwap(nil, &err)
}

func (t *transport) sentinelLoop() {
	defer t.readers.Done()
	for {
		_, _, err := t.sentinel.ReadSCTP(nil)
		if err != nil && !errors.Is(err, io.ErrShortBuffer) {
			t.setCause(err)
			t.teardown()
			return
		}
		if err != nil {
			// A peer wrote on the sentinel id: drain and drop.
			bp := bufpool.Get(65536)
			_, _, _ = t.sentinel.ReadSCTP(*bp)
			bufpool.Put(bp)
		}
	}
}

func (t *transport) acceptLoop() {
	defer t.readers.Done()
	defer func() {
		// pion's streams are all closed: no reader starts any more, so
		// that readers' count only falls from here (sync.WaitGroup).
		t.mu.Lock()
		t.noReaders = true
		t.mu.Unlock()
	}()
	defer close(t.ended) // pion's association closed, or was aborted here
	for {
		s, err := t.assoc.AcceptStream()
		if err != nil {
			return
		}
		if int(s.StreamIdentifier()) >= t.numStreams {
			if t.refuseStream(s) {
				return
			}
			continue
		}
		t.register(s)
	}
}

// maxRefusedStreams is how many stream identifiers beyond Config.Streams
// a peer may use before the association is aborted.
const maxRefusedStreams = 64

// refuseStream answers a stream the peer started beyond Streams: pion
// advertises 65535 streams in INIT whatever the local limit, so the limit
// is enforced here. The stream is reset (RFC 6525, pion's Close) and gets
// no reader, so it costs no goroutine (RFC 9260 §6.5 drops DATA on an
// invalid stream; RFC 5043 §8 bounds the streams). After
// maxRefusedStreams such streams the peer is taken for hostile: the
// association is aborted with an error wrapping ErrStreamRange. It
// reports whether it aborted.
func (t *transport) refuseStream(s *sctp.Stream) bool {
	n := t.refused.Add(1)
	_ = s.Close()
	if n <= maxRefusedStreams {
		return false
	}
	t.setCause(fmt.Errorf("%w: the peer used %d stream identifiers at or above %d (Config.Streams)", backend.ErrStreamRange, n, t.numStreams))
	t.assoc.Abort("stream identifiers beyond the negotiated count")
	t.teardown()
	return true
}

// RefusedStreams returns how many streams the peer started beyond
// Config.Streams (each was reset without being read).
func (t *transport) refusedCount() uint64 { return t.refused.Load() }

// register adopts a pion stream and starts its reader, once per stream.
func (t *transport) register(s *sctp.Stream) *pionStream {
	sid := s.StreamIdentifier()
	t.mu.Lock()
	if ps, ok := t.streams[sid]; ok && ps.s == s {
		t.mu.Unlock()
		return ps
	}
	ps := &pionStream{s: s, low: make(chan struct{}, 1), reset: make(chan struct{})}
	s.SetReliabilityParams(true, sctp.ReliabilityTypeReliable, 0) // U=1, RFC 5043 §10
	s.SetBufferedAmountLowThreshold(uint64(t.cfg.StreamSendBuffer / 2))
	s.OnBufferedAmountLow(func() {
		select {
		case ps.low <- struct{}{}:
		default:
		}
		t.mu.Lock()
		close(t.lowAny)
		t.lowAny = make(chan struct{})
		t.mu.Unlock()
	})
	t.streams[sid] = ps
	ps.sid = sid
	ps.running.Store(true)
	started := t.addReaderLocked()
	t.mu.Unlock()
	if started {
		go t.readLoop(ps)
	}
	return ps
}

// forgetIfDone drops a stream whose both directions are reset, so that a
// later session can use its identifier (pion reuses an id only after both
// sides reset it).
func (t *transport) forgetIfDone(sid uint16, ps *pionStream) {
	if !ps.eof.Load() || !ps.outClosed.Load() {
		return
	}
	t.mu.Lock()
	if t.streams[sid] == ps {
		delete(t.streams, sid)
	}
	t.mu.Unlock()
}

func (t *transport) stream(sid uint16) (*pionStream, error) {
	t.mu.RLock()
	ps, ok := t.streams[sid]
	t.mu.RUnlock()
	if ok && !ps.outClosed.Load() {
		return ps, nil
	}
	s, err := t.assoc.OpenStream(sid, sctp.PayloadProtocolIdentifier(backend.PPIDSegment))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", backend.ErrAssociationClosed, err)
	}
	if s.State() != sctp.StreamStateOpen {
		// Our reset of the previous session's stream is still waiting for
		// the peer's (RFC 6525): the identifier is not free yet.
		return nil, fmt.Errorf("%w: stream %d reset in progress", backend.ErrStreamInUse, sid)
	}
	return t.register(s), nil
}

// WriteMsg implements backend.Transport.
func (t *transport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	select {
	case <-t.closed:
		return backend.ErrAssociationClosed
	default:
	}
	if int(sid) >= t.numStreams {
		return fmt.Errorf("%w: %d of %d", backend.ErrStreamRange, sid, t.numStreams)
	}
	ps, err := t.stream(sid)
	if err != nil {
		return err
	}
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total == 0 {
		return backend.ErrEmptyMessage
	}
	// The hard limit is what pion was set up for; under path MTU tracking
	// the adaptation enforces the current path (with ShrinkGrace), and
	// dplpmtud.Conn sends a message built before a drop with DF clear.
	if m := t.maxMsg; total > m {
		return fmt.Errorf("%w: %d octets, largest unfragmented message %d", llp.ErrSegmentTooLarge, total, m)
	}
	if ppid != backend.PPIDControl {
		if err := t.waitWritable(ps, total); err != nil {
			return err
		}
	}
	bp := bufpool.Get(total)
	b := (*bp)[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	_, err = ps.s.WriteSCTP(b, sctp.PayloadProtocolIdentifier(ppid))
	bufpool.Put(bp)
	if err != nil {
		if errors.Is(err, sctp.ErrStreamClosed) {
			return fmt.Errorf("%w: stream %d: %w", llp.ErrClosed, sid, err)
		}
		return fmt.Errorf("%w: %w", backend.ErrAssociationClosed, err)
	}
	ps.sinceZero.Add(1)
	return nil
}

// waitWritable blocks until the stream and the association accept total
// more octets and the stream has fewer than contract.MaxOutstandingSegments chunks
// outstanding. A chunk counts as outstanding until pion's buffered amount
// for the stream has been seen at zero after it was written: conservative,
// since the count is reset only when every chunk was acknowledged.
func (t *transport) waitWritable(ps *pionStream, total int) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	lowered := false
	defer func() {
		if lowered {
			ps.s.SetBufferedAmountLowThreshold(uint64(t.cfg.StreamSendBuffer / 2))
		}
	}()
	for {
		sb := ps.s.BufferedAmount()
		if sb == 0 {
			ps.sinceZero.Store(0)
		}
		countOK := ps.sinceZero.Load() < contract.MaxOutstandingSegments
		streamOK := countOK && (sb == 0 || sb+uint64(total) <= uint64(t.cfg.StreamSendBuffer))
		ab := t.assoc.BufferedAmount()
		assocOK := ab == 0 || ab+total <= t.cfg.SendBuffer
		if streamOK && assocOK {
			return nil
		}
		if !countOK && !lowered {
			// Wake when every chunk of the stream is acknowledged.
			lowered = true
			ps.s.SetBufferedAmountLowThreshold(0)
			continue
		}
		t.mu.RLock()
		any := t.lowAny
		t.mu.RUnlock()
		var tick <-chan time.Time
		if !assocOK {
			// The association-wide amount has no callback of its own: any
			// stream draining wakes us, with a short poll as a backstop
			// for streams that stay below their own threshold.
			if timer == nil {
				timer = time.NewTimer(5 * time.Millisecond)
			} else {
				timer.Reset(5 * time.Millisecond)
			}
			tick = timer.C
		}
		select {
		case <-ps.low:
		case <-any:
		case <-tick:
		case <-ps.reset:
			return fmt.Errorf("%w: stream reset while waiting to send", llp.ErrClosed)
		case <-t.closed:
			return backend.ErrAssociationClosed
		}
	}
}

// NumStreams implements backend.Transport.
func (t *transport) NumStreams() int { return t.numStreams }

// MaxMessage implements backend.Transport: floor4(packet − 12 − 16), the largest
// message pion sends in one DATA chunk, where packet is the path MTU less
// the IP and UDP headers (pion's MTU setting counts the SCTP packet only).
// With path MTU tracking (dialPMTU) it follows the tracked path MTU.
func (t *transport) MaxMessage() int {
	if t.pmtu != nil {
		return t.pmtuMaxMessage()
	}
	return t.maxMsg
}

// Buffered returns the octets pion holds queued or unacknowledged on the
// association: what the send buffer limits (Config.SendBuffer).
func (t *transport) Buffered() int { return int(t.assoc.BufferedAmount()) }

// PacketSize returns the SCTP packet budget given to pion (WithMTU).
func (t *transport) packetLimit() int { return t.packet }

// ResetStream implements backend.Transport: it resets the outgoing stream
// (RFC 6525); pion frees the identifier when the peer has reset its
// direction too. A writer waiting for flow control on sid returns
// llp.ErrClosed.
func (t *transport) ResetStream(sid uint16) error {
	if int(sid) >= t.numStreams {
		return fmt.Errorf("%w: %d of %d", backend.ErrStreamRange, sid, t.numStreams)
	}
	select {
	case <-t.closed:
		return fmt.Errorf("sctpllp: reset stream %d: %w", sid, backend.ErrAssociationClosed)
	default:
	}
	t.mu.RLock()
	ps, ok := t.streams[sid]
	t.mu.RUnlock()
	if !ok {
		return nil
	}
	ps.resetOnce.Do(func() { close(ps.reset) })
	if !ps.outClosed.CompareAndSwap(false, true) {
		return nil
	}
	err := ps.s.Close()
	t.forgetIfDone(sid, ps)
	if err != nil {
		select {
		case <-t.closed:
			return nil
		default:
		}
		return fmt.Errorf("sctpllp: reset stream %d: %w", sid, err)
	}
	return nil
}

// StreamFree reports whether sid carries no pion stream any more: both
// directions were reset, or it was never used. The adaptation waits for it
// before reusing an identifier (RFC 5043 §6.6).
func (t *transport) StreamFree(sid uint16) bool {
	t.mu.RLock()
	_, ok := t.streams[sid]
	t.mu.RUnlock()
	return !ok
}

// PeerAdaptation implements backend.Transport: the indication of the peer's INIT
// or INIT ACK, read below pion (pion_ali.go).
func (t *transport) PeerAdaptation() (uint32, bool) { return t.wconn.ali.peerIndication() }

// TransportStats reports pion's smoothed RTT and the retransmitted DATA
// chunks counted below pion (pion keeps no such counter).
func (t *transport) TransportStats() backend.Stats {
	st := backend.Stats{Retransmissions: t.wconn.rtx.count(), HasRetransmissions: true}
	if ms := t.assoc.SRTT(); ms > 0 {
		st.SRTT, st.HasSRTT = time.Duration(ms*float64(time.Millisecond)), true
	}
	return st
}

// Kind implements backend.Transport.
func (t *transport) Kind() string { return "sctp-pion" }

// AcceptBacklog implements contract.AcceptBacklogger: pion queues 16 new
// incoming streams (its acceptChSize, v1.12.1) and discards the first DATA
// chunk of a 17th unacknowledged ("sender will retry on T3-rtx timeout"),
// however quickly acceptLoop takes them: one packet may bundle the first
// chunks of more streams than that.
func (t *transport) AcceptBacklog() int { return pionAcceptBacklog }

// pionAcceptBacklog is pion's accept channel depth (see AcceptBacklog).
const pionAcceptBacklog = 16

// LocalAddr implements backend.Transport.
func (t *transport) LocalAddr() net.Addr { return t.conn.LocalAddr() }

// RemoteAddr implements backend.Transport.
func (t *transport) RemoteAddr() net.Addr { return t.conn.RemoteAddr() }

// SocketBuffers reports the UDP socket buffer sizes the kernel granted, or
// zeros when the transport does not own a UDP socket.
func (t *transport) SocketBuffers() (rcv, snd int) {
	if t.udp == nil {
		return 0, 0
	}
	return sockbuf.SocketBuffers(t.udp)
}

// teardown closes pion and the conn once.
func (t *transport) teardown() {
	t.once.Do(func() {
		close(t.closed)
		_ = t.assoc.Close()
		_ = t.conn.Close()
	})
}

// Close implements backend.Transport: SCTP SHUTDOWN once every queued message is
// acknowledged (bounded by HandshakeTimeout), then release. It waits until
// done has been called. It must not be called from the Start callbacks.
func (t *transport) Close() error {
	if t.closing.CompareAndSwap(false, true) {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.HandshakeTimeout)
		err := t.assoc.Shutdown(ctx)
		if errors.Is(err, sctp.ErrShutdownNonEstablished) && t.started.Load() {
			// The peer's SHUTDOWN came first (both ends close when their
			// last stream ends, RFC 5040 §7): pion answers it, and tearing
			// down now could drop the SHUTDOWN ACK the peer waits for
			// (RFC 9260 §9.2), leaving it retransmitting SHUTDOWN until
			// its own bound. Wait for the handshake within the same bound.
			select {
			case <-t.ended:
			case <-ctx.Done():
			}
		}
		cancel()
		t.teardown()
	}
	t.wait()
	return nil
}

// Abort implements backend.Transport: SCTP ABORT, then release. It waits until
// done has been called. It must not be called from the Start callbacks.
func (t *transport) Abort() error {
	t.aborting.Store(true)
	if t.closing.CompareAndSwap(false, true) {
		t.assoc.Abort("DDP adaptation abort")
		t.teardown()
	}
	t.wait()
	return nil
}

func (t *transport) wait() {
	if t.started.Load() {
		<-t.finished
		return
	}
	t.teardown()
}

// listener accepts SCTP associations over one UDP socket (passive side).
type listener struct {
	mux     *udpMux
	cfg     Config
	ready   chan *transport
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending map[*muxConn]struct{}
	// wrap, when set (listenPMTU, pmtu_pion.go), puts path MTU
	// tracking between pion and each association's conn.
	wrap    func(c *muxConn) (*dplpmtud.Conn, error)
	onClose func()
}

// listen listens for SCTP-over-UDP associations on laddr ("host:port").
func listen(laddr string, cfg Config) (*listener, error) {
	return listenPion(laddr, cfg, nil)
}

// listenPion is listen; setup, if not nil, prepares the listener
// before it accepts anything.
func listenPion(laddr string, cfg Config, setup func(l *listener, uc *net.UDPConn) error) (*listener, error) {
	cfg = cfg.withDefaults()
	ua, err := net.ResolveUDPAddr("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	sockbuf.SetSocketBuffers(uc, cfg.SocketBuffer)
	l := &listener{
		mux:     newUDPMux(uc, 64, cfg),
		cfg:     cfg,
		ready:   make(chan *transport, 16),
		done:    make(chan struct{}),
		pending: make(map[*muxConn]struct{}),
	}
	if setup != nil {
		if err := setup(l, uc); err != nil {
			l.mux.stopAccepting()
			return nil, err
		}
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Peers returns the number of peer addresses for which the listener holds
// state: one per association that completed the stateless handshake and
// has not ended. An unauthenticated INIT adds none (RFC 9260 §5.1.3).
func (l *listener) Peers() int {
	l.mux.mu.Lock()
	defer l.mux.mu.Unlock()
	return len(l.mux.conns)
}

// HandshakeStats returns the counters of the listener's stateless
// handshake and of the packets it dropped or answered unauthenticated.
func (l *listener) HandshakeStats() handshakeStats {
	if l.mux.hs == nil {
		return handshakeStats{}
	}
	return l.mux.hs.Stats()
}

// Addr returns the UDP address listened on.
func (l *listener) Addr() net.Addr { return l.mux.pc.LocalAddr() }

// SocketBuffers reports the UDP socket buffer sizes the kernel granted.
func (l *listener) socketBuffers() (rcv, snd int) { return sockbuf.SocketBuffers(l.mux.pc) }

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		select {
		case c := <-l.mux.acceptCh:
			l.mu.Lock()
			l.pending[c] = struct{}{}
			l.mu.Unlock()
			l.wg.Add(1)
			go l.handshake(c)
		case <-l.done:
			return
		}
	}
}

func (l *listener) handshake(c *muxConn) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.HandshakeTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	cfg := l.cfg
	cfg.snap = c.snap
	var conn net.Conn = c
	var pc *dplpmtud.Conn
	if l.wrap != nil {
		var err error
		if pc, err = l.wrap(c); err != nil {
			_ = c.Close()
			l.mu.Lock()
			delete(l.pending, c)
			l.mu.Unlock()
			return
		}
		conn = pc
	}
	t, err := newTransport(ctx, conn, false, cfg)
	if err == nil {
		t.pmtu = pc
	}
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if err != nil {
		return // the conn was closed by newTransport
	}
	select {
	case l.ready <- t:
	case <-l.done:
		_ = t.Abort()
	}
}

// Accept implements backend.Listener.
func (l *listener) Accept(ctx context.Context) (backend.Transport, error) {
	t, err := l.accept(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// accept waits for the next established association.
func (l *listener) accept(ctx context.Context) (*transport, error) {
	select {
	case t := <-l.ready:
		return t, nil
	case <-l.done:
		return nil, errListenerClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Close stops accepting: associations in set-up or not yet accepted are
// aborted; accepted ones continue (the socket closes with the last one).
func (l *listener) Close() error {
	l.once.Do(func() {
		if l.onClose != nil {
			defer l.onClose()
		}
		close(l.done)
		l.mux.stopAccepting()
		l.wg.Wait()
		for {
			select {
			case t := <-l.ready:
				_ = t.Abort()
				continue
			default:
			}
			break
		}
		// Conns created but never handed to a handshake.
		for {
			select {
			case c := <-l.mux.acceptCh:
				_ = c.Close()
				continue
			default:
			}
			break
		}
	})
	return nil
}
