package mpa

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// Defaults of Config.
const (
	// defaultHandshakeTimeout bounds the startup phase when the context has
	// no earlier deadline (RFC 5044 §7.1.2 rules 8 and 10).
	defaultHandshakeTimeout = 30 * time.Second
	// defaultCloseTimeout bounds how long the receive side waits for the
	// peer's FIN after Close.
	defaultCloseTimeout = 10 * time.Second
	// fallbackMSS is the EMSS assumed when the TCP MSS cannot be read
	// (RFC 5044 §5.1: use a likely value from the MTU).
	fallbackMSS = 1460
)

// Config configures one end of an MPA connection. The zero value is an
// RFC 6581 revision-2 endpoint that requests CRCs, no Markers, and sends
// an unenhanced Request when it initiates.
type Config struct {
	// Revision is the highest MPA revision spoken: 1 (RFC 5044) or 2
	// (RFC 6581). 0 means 2. A revision-2 Responder accepts revision-1
	// Requests (RFC 6581 §6).
	Revision uint8
	// Enhanced makes an Initiator send an enhanced Request (S = 1, IRD/ORD
	// data, RFC 6581 §6, §9). It needs Revision 2. A revision-2 Responder
	// always answers an enhanced Request enhanced (RFC 6581 §10).
	Enhanced bool
	// Markers declares that this end requires Markers in the FPDUs the peer
	// sends to it: the M flag of its frame (RFC 5044 §7.1.1).
	Markers bool
	// NoCRC declares this end's preference not to use CRCs (C = 0). CRCs are
	// still used if the peer asks for them (RFC 5044 §4.4, §7.1.1). The
	// default, CRCs on, is what RFC 5044 §4.4 (2a) requires; set NoCRC only
	// when the path is protected at least as strongly as CRC32c.
	NoCRC bool
	// PrivateData is the ULP private data of this end's Request or Reply
	// (after the IRD/ORD data when enhanced): at most 512 octets in all
	// (RFC 5044 §7.1.1). A Responder's Accept callback can replace it.
	PrivateData []byte
	// IRD and ORD are this end's Inbound and Outbound RDMA Read Queue
	// Depths offered in enhanced frames (RFC 6581 §9.1); 14 bits, with
	// iwarp.NoNegotiation (0x3FFF) meaning the ULP negotiates them itself.
	IRD, ORD uint16
	// PeerToPeer requests the peer-to-peer connection model with an explicit
	// RTR indication (Control Flag A, RFC 6581 §9.2). Initiator only.
	PeerToPeer bool
	// RTR is the set of RTR indications this end's RDMAP layer can send
	// (Initiator) or accept (Responder) (RFC 6581 §9.2). 0 means iwarp.RTRAll.
	RTR iwarp.RTR
	// MaxPrivateData is the largest Private Data field this end accepts in
	// the peer's frame, at most 512 (RFC 5044 §7.1.1, §7.1.2 rule 9). 0
	// means 512. (Linux siw accepts at most 256.)
	MaxPrivateData int
	// MaxRecvULPDU is the largest ULPDU Length accepted on receive. 0 means
	// iwarpwire.MPAMaxULPDU (RFC 5044 §3).
	MaxRecvULPDU int
	// MaxMULPDU caps the MULPDU reported to DDP below the value derived from
	// the TCP MSS. 0 means no cap. Values under 128 are raised to 128.
	MaxMULPDU int
	// HandshakeTimeout bounds the startup phase in addition to the context
	// (RFC 5044 §7.1.2 rule 10). 0 means DefaultHandshakeTimeout; negative
	// means no bound beyond the context.
	HandshakeTimeout time.Duration
	// CloseTimeout bounds how long the receive side keeps waiting for the
	// peer's FIN after Close. 0 means DefaultCloseTimeout; negative means
	// wait indefinitely.
	CloseTimeout time.Duration
	// ReaderIdle is how long the receive goroutine waits at an FPDU
	// boundary before it parks: it ends, its buffer is returned, and the
	// process's idle poller starts it again when the socket is readable
	// (Linux, plain TCP; park.go). 0 means DefaultReaderIdle (100 ms);
	// negative means never park.
	ReaderIdle time.Duration
	// Accept, for a Responder, examines the validated MPA Request (RFC 5044
	// §7.1.2 rule 2, §7.1.4.2: "the Consumer examines Private Data") and
	// decides the Reply. A non-nil error closes the TCP connection without
	// a Reply. nil accepts every Request with PrivateData.
	Accept func(req *Frame) (Decision, error)
}

// Decision is a Responder ULP's answer to an MPA Request.
type Decision struct {
	// Reject sends the Reply with R = 1 (RFC 5044 §7.1.1) and exits MPA,
	// leaving the TCP connection open for the caller.
	Reject bool
	// PrivateData is the ULP private data of the Reply; nil means
	// Config.PrivateData.
	PrivateData []byte
	// iwarp.IRDORD, if non-nil, replaces the IRD and ORD this package computes for
	// an enhanced Reply (RFC 6581 §9.1), for example to name the ORD the ULP
	// requires in a Reject. Its flags are ignored.
	IRDORD *iwarp.IRDORD
}

func (c *Config) revision() uint8 {
	if c.Revision == 0 {
		return iwarpwire.MPARev2
	}
	return c.Revision
}

func (c *Config) rtr() iwarp.RTR {
	if c.RTR&iwarp.RTRAll == 0 {
		return iwarp.RTRAll
	}
	return c.RTR & iwarp.RTRAll
}

func (c *Config) maxPrivateData() int {
	if c.MaxPrivateData <= 0 || c.MaxPrivateData > maxPrivateData {
		return maxPrivateData
	}
	return c.MaxPrivateData
}

func (c *Config) maxRecvULPDU() int {
	if c.MaxRecvULPDU <= 0 || c.MaxRecvULPDU > 0xFFFF {
		return iwarpwire.MPAMaxULPDU
	}
	return c.MaxRecvULPDU
}

func (c *Config) validate(initiator bool) error {
	switch {
	case c.Revision > iwarpwire.MPARev2:
		return fmt.Errorf("%w: revision %d (1 or 2)", errInvalidConfig, c.Revision)
	case initiator && c.Enhanced && c.revision() < iwarpwire.MPARev2:
		return fmt.Errorf("%w: enhanced connection establishment needs revision 2 (RFC 6581 §6)", errInvalidConfig)
	case initiator && c.PeerToPeer && !c.Enhanced:
		return fmt.Errorf("%w: peer-to-peer needs enhanced connection establishment (RFC 6581 §9.2)", errInvalidConfig)
	case c.IRD > iwarp.NoNegotiation || c.ORD > iwarp.NoNegotiation:
		return fmt.Errorf("%w: IRD/ORD are 14-bit values (RFC 6581 §9)", errInvalidConfig)
	case len(c.PrivateData) > maxPrivateData,
		initiator && c.Enhanced && len(c.PrivateData) > maxPrivateData-iwarpwire.IRDORDLen:
		return fmt.Errorf("%w: %d octets of private data", errPrivateDataLength, len(c.PrivateData))
	}
	return nil
}

// Params are the parameters negotiated in the startup phase.
type Params struct {
	// Initiator is true on the end that sent the MPA Request.
	Initiator bool
	// Revision is the revision of the MPA Reply Frame, which both ends use.
	Revision uint8
	// Enhanced is true when the frames carried RFC 6581 IRD/ORD data.
	Enhanced bool
	// CRC is true when CRCs are generated and checked in both directions
	// (either frame had C, RFC 5044 §7.1.1).
	CRC bool
	// MarkersTx is true when this end inserts Markers (the peer's frame had
	// M); MarkersRx when the peer does (this end's frame had M).
	MarkersTx, MarkersRx bool
	// PrivateData is the ULP private data this end sent; PeerPrivateData the
	// ULP private data the peer sent (after the IRD/ORD data).
	PrivateData, PeerPrivateData []byte
	// IRD and ORD are this end's values after the negotiation of RFC 6581
	// §9.1 (Config values when not enhanced).
	IRD, ORD uint16
	// PeerIRD and PeerORD are the values the peer sent (enhanced only),
	// which RFC 6581 §9.1 requires be passed to the ULP.
	PeerIRD, PeerORD uint16
	// PeerToPeer is the negotiated Control Flag A (RFC 6581 §9.2).
	PeerToPeer bool
	// RTR, for PeerToPeer: on the Initiator, the RTR indications both ends
	// support, one of which the Initiator's RDMAP layer MUST send as its
	// first message (the Initiator picks one); on the Responder, the set it
	// advertised and must accept as the first message.
	RTR iwarp.RTR
}

// Depths returns the negotiated IRD and ORD (RFC 6581 §9.1) for
// internal/rdmapconf.Apply; without enhanced connection
// establishment both are iwarp.NoNegotiation (nothing was negotiated).
func (p Params) Depths() iwarp.Depths {
	if !p.Enhanced {
		return iwarp.Depths{IRD: iwarp.NoNegotiation, ORD: iwarp.NoNegotiation}
	}
	return iwarp.Depths{IRD: int(p.IRD), ORD: int(p.ORD)}
}

// Conn is an MPA connection in Full Operation Phase: an llp.Stream whose
// segments travel as FPDUs over TCP (RFC 5044 §4–§6).
type Conn struct {
	nc     net.Conn
	cfg    Config
	params Params

	// startup → full operation hand-off
	rx rxState

	// transmit side, guarded by txMu
	txMu      sync.Mutex
	txPos     uint64 // octets sent since the start of Full Operation
	txBuf     []byte // FPDU image: marked, or unmarked under gatherThreshold
	txCap     int    // txBuf's capacity, made on first use
	lenWord   [iwarpwire.MPAFPDUHeaderLen]byte
	trailer   [3 + iwarpwire.MPACRCLen]byte
	iov       [4][]byte
	bufs      net.Buffers
	batch     txBatch // FPDUs held by SendSegmentMore
	joined    []byte  // pieces joined for a connection without writev (TLS)
	txClosed  bool
	sendCount uint64
	raw       syscall.RawConn
	mssFn     func(fd uintptr)
	mssVal    int
	mulpdu    atomic.Int64

	// RFC 5044 §7.1.2 rule 4: a Responder sends nothing before it has
	// received and validated one FPDU.
	firstRx     chan struct{}
	firstRxOnce sync.Once

	// receive goroutine: the handler and whether it refused a segment
	// (kept across parking, park.go)
	rxH      llp.Handler
	rxBroken bool

	// teardown
	mu      sync.Mutex
	started bool
	closed  bool // Close called
	aborted bool // Abort called
	// sockErr is the first socket error a send drew (a peer's RST,
	// TCP_USER_TIMEOUT's ETIMEDOUT, an ICMP-reported failure): the kernel
	// reports it once, to whichever call comes first, and the reader then
	// sees only end of file.
	sockErr   error
	rxEnded   bool // receive goroutine no longer reads
	ncClosed  bool
	done      chan struct{} // closed by Close or Abort
	rxDone    chan struct{} // closed when the receive goroutine returns
	closeOnce sync.Once
	// parking of the receive goroutine (park.go), under mu
	parked    bool
	parkTok   uint64
	idleArmed bool
	idleMark  uint64
	closeBy   time.Time
	parks     atomic.Uint64

	sentSegs, sentBytes atomic.Uint64
	recvSegs, recvBytes atomic.Uint64
}

var (
	_ llp.Stream  = (*Conn)(nil)
	_ llp.Batcher = (*Conn)(nil)
)

func newConn(nc net.Conn, cfg *Config, initiator bool) *Conn {
	c := &Conn{
		nc:      nc,
		cfg:     *cfg,
		firstRx: make(chan struct{}),
		done:    make(chan struct{}),
		rxDone:  make(chan struct{}),
	}
	c.params.Initiator = initiator
	c.rx.init(iwarpwire.MPAFrameHeaderLen + c.cfg.maxPrivateData())
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	c.mssFn = c.readMSS
	if initiator {
		// Only a Responder waits for the first FPDU (RFC 5044 §7.1.2 rule 4).
		c.firstRxOnce.Do(func() { close(c.firstRx) })
	}
	return c
}

// enterFullOperation prepares the transmit side once the startup frames
// are exchanged.
func (c *Conn) enterFullOperation() {
	c.rx.grow()
	// The FPDU image buffer is made by the first send that needs it
	// (SendSegment): an idle stream holds none.
	if c.params.MarkersTx {
		c.txCap = maxWireLen
	} else {
		c.txCap = wireLen(0, gatherThreshold, false)
	}
	if c.params.MarkersRx {
		c.rx.scratch = make([]byte, 0, iwarpwire.MPAFPDUHeaderLen+0xFFFF+3+iwarpwire.MPACRCLen)
	}
	c.refreshMULPDU()
}

// Params returns the parameters negotiated in the startup phase.
func (c *Conn) Params() Params { return c.params }

// NetConn returns the underlying TCP connection, for diagnostics and
// socket options. Reading or writing it breaks the MPA stream.
func (c *Conn) NetConn() net.Conn { return c.nc }

// LocalAddr returns the local TCP address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr returns the remote TCP address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// MULPDU implements llp.Stream: the largest ULPDU (DDP segment) that fits
// an FPDU in one TCP segment of the current EMSS, with the worst-case
// Markers when this end sends them (RFC 5044 §4.5, §5.1), within
// [128, 64768] and under Config.MaxMULPDU.
func (c *Conn) MULPDU() int { return int(c.mulpdu.Load()) }

// refreshMULPDU re-reads the TCP MSS. Called with txMu held or before the
// Conn is shared.
func (c *Conn) refreshMULPDU() {
	emss := fallbackMSS
	if c.raw != nil {
		c.mssVal = 0
		if c.raw.Control(c.mssFn) == nil && c.mssVal > 0 {
			emss = c.mssVal
		}
	}
	m := iwarpwire.MPAMULPDU(emss, c.params.MarkersTx)
	if c.cfg.MaxMULPDU > 0 {
		m = max(min(m, c.cfg.MaxMULPDU), iwarpwire.MPAMinMULPDU)
	}
	c.mulpdu.Store(int64(m))
}

// Info implements llp.Stream.
func (c *Conn) Info() llp.Info {
	return llp.Info{
		Kind:             "mpa",
		LocalAddr:        c.nc.LocalAddr().String(),
		RemoteAddr:       c.nc.RemoteAddr().String(),
		SegmentsSent:     c.sentSegs.Load(),
		SegmentsReceived: c.recvSegs.Load(),
		BytesSent:        c.sentBytes.Load(),
		BytesReceived:    c.recvBytes.Load(),
	}
}

// Close implements llp.Stream: it waits for a SendSegment in progress,
// then sends a TCP FIN (RFC 5044 §7.2: each half connection ends when DDP
// closes the TCP half connection). The receive side keeps delivering until
// the peer's FIN, for at most Config.CloseTimeout; the socket is released
// when both directions have ended.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed || c.aborted {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.closeOnce.Do(func() { close(c.done) })

	c.txMu.Lock()
	var err error
	if !c.txClosed && c.batch.segs > 0 {
		err = c.flushBatch() // llp.Stream.Close: what was passed goes first
	}
	c.txClosed = true
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		if cerr := cw.CloseWrite(); err == nil {
			err = cerr
		}
	}
	c.txMu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.ncClosed && errors.Is(err, net.ErrClosed) {
		// The receive goroutine ended (peer's FIN after an error) and
		// closed the socket between c.closed and CloseWrite: the close
		// this call asked for has happened.
		err = nil
	}
	if !c.started || c.rxEnded {
		c.closeSocketLocked()
		return err
	}
	c.idleArmed = false
	if t := c.cfg.CloseTimeout; t >= 0 {
		if t == 0 {
			t = defaultCloseTimeout
		}
		c.closeBy = time.Now().Add(t)
		_ = c.nc.SetReadDeadline(c.closeBy)
	} else {
		c.closeBy = time.Now().Add(1 << 62) // never: an idle deadline that fires is not the close timeout
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	c.wakeLocked() // a parked reader reads again, until the peer's FIN
	return err
}

// Abort implements llp.Stream: the TCP connection is reset at once (SO_LINGER
// 0, RFC 5041 §6.2.2), discarding what is queued. The receive side reports
// an error wrapping llp.ErrAborted.
func (c *Conn) Abort() error {
	c.mu.Lock()
	if c.aborted {
		c.mu.Unlock()
		return nil
	}
	c.aborted = true
	c.mu.Unlock()
	c.closeOnce.Do(func() { close(c.done) })
	if tc, ok := c.nc.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0) // a *net.TCPConn, or a recorder of one
	}
	c.mu.Lock()
	c.closeSocketLocked()
	c.wakeLocked() // a parked reader observes the closed socket and ends
	c.mu.Unlock()
	// What SendSegmentMore held is discarded (a sender blocked in a write
	// holds txMu until the closed socket fails it, and empties the batch).
	if c.txMu.TryLock() {
		c.dropBatch()
		c.txMu.Unlock()
	}
	return nil
}

func (c *Conn) closeSocketLocked() {
	if !c.ncClosed {
		c.ncClosed = true
		_ = c.nc.Close()
	}
}

// Done is closed when the receive goroutine started by Start has returned
// (after Handler.HandleClosed, and after any draining that follows an MPA
// error). It is never closed if Start is not called.
func (c *Conn) Done() <-chan struct{} { return c.rxDone }

// stateErr returns the error for a send attempted after teardown.
func (c *Conn) stateErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		return fmt.Errorf("mpa: send: %w", llp.ErrAborted)
	}
	return fmt.Errorf("mpa: send: %w", llp.ErrClosed)
}

// ioError classifies a TCP read or write error (RFC 5044 §8 code 1).
func (c *Conn) ioError(op string, err error) error {
	c.mu.Lock()
	aborted := c.aborted
	c.mu.Unlock()
	if aborted {
		return fmt.Errorf("mpa: %s: %w", op, llp.ErrAborted)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		c.mu.Lock()
		if c.sockErr == nil {
			c.sockErr = err
		}
		c.mu.Unlock()
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return newError(iwarp.Term.MPAConnectionLost, fmt.Errorf("%w: %s: %w: %w", ErrConnectionLost, op, llp.ErrAborted, err))
	}
	return newError(iwarp.Term.MPAConnectionLost, fmt.Errorf("%w: %s: %w", ErrConnectionLost, op, err))
}
