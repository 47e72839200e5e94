//go:build linux

package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ishidawataru/sctp"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/internal/goid"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// The kernel backend: one-to-one (SOCK_STREAM) Linux SCTP sockets.
//
// github.com/ishidawataru/sctp supplies the address handling (SCTPAddr,
// sctp_bindx, sctp_connectx), the option numbers and structures; its
// connection type is not used because its I/O is blocking and outside Go's
// network poller, it allocates per message, has no MSG_EOR check and its
// SCTP_EOF flag is wrong for Linux. Here the socket is non-blocking and
// registered with the poller through os.NewFile, so a blocked reader or
// writer is parked like any net.Conn and is woken by Close/Abort or a
// deadline, and the data path (sendmsg/recvmsg) allocates nothing.

// kernelRecvInitial is the initial receive buffer; it grows up to
// Config.MaxReceiveMessage when a longer message arrives.
const kernelRecvInitial = 64 << 10

// kernelMaxMessageTTL is how long a MaxMessage answer is reused before the
// association's fragmentation point is read again (it follows the path MTU).
const kernelMaxMessageTTL = 100 * time.Millisecond

// kernelPastDeadline is a deadline in the past, to wake a parked reader or writer.
var kernelPastDeadline = time.Unix(1, 0)

// kernelWatchContext arranges for ctx's end to wake a call parked in the
// poller by setting a deadline in the past with set; release undoes it and
// must be called before the file is used without ctx.
func kernelWatchContext(ctx context.Context, set func(time.Time) error) (release func()) {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		set(kernelPastDeadline)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
			set(time.Time{})
		}
	}
}

// kernelSocket opens a non-blocking one-to-one SCTP socket.
func kernelSocket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if err != nil {
		switch {
		case errors.Is(err, unix.EPROTONOSUPPORT), errors.Is(err, unix.ESOCKTNOSUPPORT),
			errors.Is(err, unix.EAFNOSUPPORT), errors.Is(err, unix.EPFNOSUPPORT):
			return -1, fmt.Errorf("%w: socket(SOCK_STREAM, IPPROTO_SCTP): %w", ErrUnavailable, err)
		}
		return -1, os.NewSyscallError("socket", err)
	}
	return fd, nil
}

// available opens and closes one SCTP socket.
func available() error {
	fd, err := kernelSocket(unix.AF_INET)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// kernelFamily chooses AF_INET or AF_INET6 for a set of addresses.
func kernelFamily(addrs ...*sctp.SCTPAddr) int {
	for _, a := range addrs {
		if a == nil {
			continue
		}
		for _, ip := range a.IPAddrs {
			if ip.IP.To4() == nil {
				return unix.AF_INET6
			}
		}
	}
	return unix.AF_INET
}

func kernelSetsockopt(fd int, opt int, p unsafe.Pointer, l uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), sctp.SOL_SCTP, uintptr(opt), uintptr(p), l, 0)
	if e != 0 {
		return e
	}
	return nil
}

func kernelGetsockopt(fd int, opt int, p unsafe.Pointer, l *uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), sctp.SOL_SCTP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func kernelSetAssocValue(fd, opt int, v uint32) error {
	var b [kernelAssocValueLen]byte // assoc_id 0: SCTP_FUTURE_ASSOC / the one association
	binary.NativeEndian.PutUint32(b[4:], v)
	return kernelSetsockopt(fd, opt, unsafe.Pointer(&b[0]), uintptr(len(b)))
}

// kernelConfigure sets the endpoint options that must be in place before
// the association starts (INIT/INIT-ACK). Accepted sockets inherit them
// from the listener.
func kernelConfigure(fd int, cfg *Config) error {
	type step struct {
		name string
		err  error
	}
	// RFC 5043 §8: equal inbound and outbound stream counts.
	init := sctp.InitMsg{NumOstreams: uint16(cfg.Streams), MaxInstreams: uint16(cfg.Streams)}
	// RFC 5043 §5.1, §11.1: the Adaptation Layer Indication in INIT and
	// INIT-ACK (struct sctp_setadaptation, host order; 0 sends none).
	aind := cfg.adaptationIndication()
	// Notifications: data I/O (stream and PPID with every message),
	// association changes, peer errors, shutdown, partial delivery,
	// adaptation indication and stream reset.
	// Sender-dry events wake writers held by the RFC 5043 §10 chunk window.
	ev := kernelEventSubscribe{DataIO: 1, Association: 1, PeerError: 1, Shutdown: 1,
		PartialDelivery: 1, AdaptationLayer: 1, SenderDry: 1, StreamReset: 1}
	nodelay := uint32(1) // RFC 5043 §11.2: untagged messages are not delayed for bundling
	steps := []step{
		{"SCTP_INITMSG", kernelSetsockopt(fd, sctp.SCTP_INITMSG, unsafe.Pointer(&init), unsafe.Sizeof(init))},
		{"SCTP_ADAPTATION_LAYER", kernelSetsockopt(fd, sctp.SCTP_ADAPTATION_LAYER, unsafe.Pointer(&aind), 4)},
		{"SCTP_EVENTS", kernelSetsockopt(fd, sctp.SCTP_EVENTS, unsafe.Pointer(&ev), unsafe.Sizeof(ev))},
		{"SCTP_NODELAY", kernelSetsockopt(fd, sctp.SCTP_NODELAY, unsafe.Pointer(&nodelay), 4)},
		// RFC 6525 stream reset, for ResetStream.
		{"SCTP_RECONFIG_SUPPORTED", kernelSetAssocValue(fd, kernelOptReconfigSupported, 1)},
		{"SCTP_ENABLE_STREAM_RESET", kernelSetAssocValue(fd, kernelOptEnableStreamReset, kernelEnableResetStreamReq)},
	}
	for _, s := range steps {
		if s.err != nil {
			return os.NewSyscallError("setsockopt "+s.name, s.err)
		}
	}
	if err := kernelSetBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SendBuffer); err != nil {
		return err
	}
	if err := kernelSetBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.ReceiveBuffer); err != nil {
		return err
	}
	if cfg.PathMTU != 0 || cfg.PathMaxRetrans != 0 || cfg.HeartbeatInterval != 0 {
		// spp_assoc_id 0, spp_address zero: the endpoint default, which
		// every association and path of the socket starts from. A zero
		// field or flag leaves the kernel's value.
		var p [kernelPaddrParamsLen]byte
		var flags uint32
		if cfg.PathMTU != 0 {
			binary.NativeEndian.PutUint32(p[kernelPaddrMTUAt:], uint32(cfg.PathMTU))
			flags |= kernelSppPMTUDDisable
		}
		if cfg.HeartbeatInterval != 0 {
			binary.NativeEndian.PutUint32(p[kernelPaddrHBIntervalAt:], uint32(cfg.HeartbeatInterval/time.Millisecond))
			flags |= kernelSppHBEnable
		}
		binary.NativeEndian.PutUint16(p[kernelPaddrPathMaxRxtAt:], uint16(cfg.PathMaxRetrans))
		binary.NativeEndian.PutUint32(p[kernelPaddrFlagsAt:], flags)
		if err := kernelSetsockopt(fd, sctp.SCTP_PEER_ADDR_PARAMS, unsafe.Pointer(&p[0]), uintptr(len(p))); err != nil {
			return os.NewSyscallError("setsockopt SCTP_PEER_ADDR_PARAMS", err)
		}
	}
	if cfg.RTOInitial != 0 || cfg.RTOMin != 0 || cfg.RTOMax != 0 {
		// struct sctp_rtoinfo: assoc id 0 (the endpoint), initial, max,
		// min in ms; zero leaves the kernel's.
		var r [kernelRTOInfoLen]byte
		binary.NativeEndian.PutUint32(r[4:], uint32(cfg.RTOInitial/time.Millisecond))
		binary.NativeEndian.PutUint32(r[8:], uint32(cfg.RTOMax/time.Millisecond))
		binary.NativeEndian.PutUint32(r[12:], uint32(cfg.RTOMin/time.Millisecond))
		if err := kernelSetsockopt(fd, sctp.SCTP_RTOINFO, unsafe.Pointer(&r[0]), uintptr(len(r))); err != nil {
			return os.NewSyscallError("setsockopt SCTP_RTOINFO", err)
		}
	}
	if cfg.AssocMaxRetrans != 0 {
		// struct sctp_assocparams: assoc id 0, sasoc_asocmaxrxt; the rest
		// zero leaves the kernel's.
		var a [kernelAssocParamsLen]byte
		binary.NativeEndian.PutUint16(a[4:], uint16(cfg.AssocMaxRetrans))
		if err := kernelSetsockopt(fd, sctp.SCTP_ASSOCINFO, unsafe.Pointer(&a[0]), uintptr(len(a))); err != nil {
			return os.NewSyscallError("setsockopt SCTP_ASSOCINFO", err)
		}
	}
	if cfg.RemoteUDPEncapsPort != 0 {
		var u [kernelUDPEncapsLen]byte // sue_assoc_id 0, sue_address zero: the endpoint default
		binary.BigEndian.PutUint16(u[kernelUDPEncapsPortAt:], cfg.RemoteUDPEncapsPort)
		if err := kernelSetsockopt(fd, kernelOptRemoteUDPEncapsPort, unsafe.Pointer(&u[0]), uintptr(len(u))); err != nil {
			return os.NewSyscallError("setsockopt SCTP_REMOTE_UDP_ENCAPS_PORT", err)
		}
	}
	return nil
}

// kernelSetBuffer sets a socket buffer size, past the sysctl maximum when the
// process has CAP_NET_ADMIN.
func kernelSetBuffer(fd, force, plain, size int) error {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) == nil {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size); err != nil {
		return os.NewSyscallError("setsockopt SO_SNDBUF/SO_RCVBUF", err)
	}
	return nil
}

// dial establishes an SCTP association with raddr ("host:port", or
// "ip1/ip2:port" for a multi-homed peer) over a kernel one-to-one socket,
// configured for RFC 5043: equal stream counts, the DDP Adaptation Layer
// Indication, data I/O events, SCTP_NODELAY and large buffers. It returns
// when the association is established (COMM_UP) or fails; ctx bounds the
// set-up. It fails with ErrUnavailable where the kernel has no
// SCTP.
func dial(ctx context.Context, raddr string, cfg Config) (backend.Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ra, err := sctp.ResolveSCTPAddr("sctp", raddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: resolving %q: %w", raddr, err)
	}
	var la *sctp.SCTPAddr
	if cfg.LocalAddr != "" {
		if la, err = sctp.ResolveSCTPAddr("sctp", cfg.LocalAddr); err != nil {
			return nil, fmt.Errorf("sctpllp: resolving %q: %w", cfg.LocalAddr, err)
		}
	}
	fd, err := kernelSocket(kernelFamily(la, ra))
	if err != nil {
		return nil, err
	}
	if err := kernelConfigure(fd, &cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if la != nil {
		if err := kernelBind(fd, la); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	f := os.NewFile(uintptr(fd), "sctp")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		// sctp_connectx (RFC 6458 §9.9): every address of a multi-homed peer.
		buf := ra.ToRawSockAddrBuf()
		cerr = kernelSetsockopt(int(fd), kernelOptConnectx, unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	}); err != nil {
		cerr = err
	}
	if cerr != nil && !errors.Is(cerr, unix.EINPROGRESS) {
		f.Close()
		return nil, fmt.Errorf("sctpllp: connecting to %s: %w", raddr, os.NewSyscallError("sctp_connectx", cerr))
	}
	t, err := newKernelTransport(ctx, f, rc, cfg)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: association with %s: %w", raddr, err)
	}
	t.dialer = true
	return t, nil
}

// listener accepts SCTP associations on a kernel one-to-one listening
// socket. Its methods are safe for concurrent use.
type listener struct {
	mu     sync.Mutex // one Accept at a time: the context is bound to the fd's deadline
	closed atomic.Bool
	f      *os.File
	rc     syscall.RawConn
	cfg    Config
	addr   net.Addr
	// refused counts associations accepted by the kernel but refused in
	// set-up (failed establishment or adaptation check); lastRefusal is
	// why the last one was.
	refused     atomic.Uint64
	lastRefusal atomic.Pointer[error]
}

// Refused reports how many incoming associations failed set-up or the
// adaptation check (and were aborted, RFC 5043 §7.1) and why the last
// one did.
func (l *listener) refusedCount() (uint64, error) {
	var err error
	if p := l.lastRefusal.Load(); p != nil {
		err = *p
	}
	return l.refused.Load(), err
}

// listen opens a kernel SCTP listening socket on laddr ("ip:port",
// ":port", or "ip1/ip2:port"; port 0 picks one) configured like dial's.
// It fails with ErrUnavailable where the kernel has no SCTP.
func listen(laddr string, cfg Config) (*listener, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	la, err := sctp.ResolveSCTPAddr("sctp", laddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: resolving %q: %w", laddr, err)
	}
	family := kernelFamily(la)
	if len(la.IPAddrs) == 0 {
		la.IPAddrs = []net.IPAddr{{IP: net.IPv4zero}}
	}
	fd, err := kernelSocket(family)
	if err != nil {
		return nil, err
	}
	if err := kernelConfigure(fd, &cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := kernelBind(fd, la); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sctpllp: binding %s: %w", laddr, err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("listen", err)
	}
	l := &listener{cfg: cfg, addr: kernelLocalAddr(fd)}
	l.f = os.NewFile(uintptr(fd), "sctp-listener")
	if l.rc, err = l.f.SyscallConn(); err != nil {
		l.f.Close()
		return nil, err
	}
	return l, nil
}

// Addr returns the listening address (*sctp.SCTPAddr).
func (l *listener) Addr() net.Addr { return l.addr }

// Close stops listening; a blocked Accept returns an error wrapping
// llp.ErrClosed.
func (l *listener) Close() error {
	l.closed.Store(true)
	return l.f.Close()
}

// Accept waits for the next established association and returns it as a
// Transport. Unless Config.AllowMissingAdaptation is set, associations
// whose peer did not indicate DDP are aborted and not returned (RFC 5043
// §5.1, §7.1, §11.1). ctx
// cancels the wait.
func (l *listener) Accept(ctx context.Context) (backend.Transport, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	release := kernelWatchContext(ctx, l.f.SetReadDeadline)
	defer release()
	for {
		var nfd int
		var aerr error
		err := l.rc.Read(func(fd uintptr) bool {
			for {
				nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
				switch aerr {
				case unix.EINTR, unix.ECONNABORTED:
					continue
				case unix.EAGAIN:
					return false
				}
				return true
			}
		})
		if err == nil {
			err = aerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if l.closed.Load() {
				return nil, fmt.Errorf("sctpllp: accept: %w", llp.ErrClosed)
			}
			return nil, os.NewSyscallError("accept4", err)
		}
		f := os.NewFile(uintptr(nfd), "sctp")
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return nil, err
		}
		t, err := newKernelTransport(ctx, f, rc, l.cfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// A peer that failed set-up or the adaptation check does not
			// end the listener: RFC 5043 §7.1 refuses that association only.
			l.refused.Add(1)
			l.lastRefusal.Store(&err)
			continue
		}
		return t, nil
	}
}

// kernelBind binds fd to every address of a (sctp_bindx, RFC 6458 §9.1).
func kernelBind(fd int, a *sctp.SCTPAddr) error {
	buf := a.ToRawSockAddrBuf()
	if err := kernelSetsockopt(fd, kernelOptBindxAdd, unsafe.Pointer(&buf[0]), uintptr(len(buf))); err != nil {
		return os.NewSyscallError("sctp_bindx", err)
	}
	return nil
}

// kernelAddrs reads the local or peer addresses (sctp_getladdrs,
// sctp_getpaddrs, RFC 6458 §9.3, §9.4) of the socket's association or, on a
// listener, of the endpoint.
func kernelAddrs(fd, opt int) (*sctp.SCTPAddr, error) {
	buf := make([]byte, 4096)
	l := uint32(len(buf))
	if err := kernelGetsockopt(fd, opt, unsafe.Pointer(&buf[0]), &l); err != nil {
		return nil, err
	}
	// The kernel returns in optlen the octets of addresses only, without
	// the header (a historical quirk it keeps for compatibility).
	if int(l) > len(buf)-kernelGetAddrsHdr {
		return nil, fmt.Errorf("sctpllp: address list of %d octets", l)
	}
	return parseKernelAddrs(buf[kernelGetAddrsHdr:kernelGetAddrsHdr+int(l)], binary.NativeEndian.Uint32(buf[4:]))
}

func kernelLocalAddr(fd int) net.Addr {
	if a, err := kernelAddrs(fd, kernelOptGetLocalAddrs); err == nil {
		return a
	}
	return &sctp.SCTPAddr{}
}

func kernelRemoteAddr(fd int) net.Addr {
	if a, err := kernelAddrs(fd, kernelOptGetPeerAddrs); err == nil {
		return a
	}
	return &sctp.SCTPAddr{}
}

// Transport states.
const (
	kernelOpen    = iota
	kernelClosing // Close: SHUTDOWN under way, reader draining
	kernelAborted // Abort: socket closed with SO_LINGER 0
	kernelEnded   // association over, socket closed
)

// kernelTransport is a Transport on a kernel one-to-one SCTP socket.
type kernelTransport struct {
	cfg           Config
	rec           *capture.SCTPRecorder // nil unless cfg.Capture
	f             *os.File
	rc            syscall.RawConn
	local, remote net.Addr
	streams       int
	peerAdapt     uint32
	peerAdaptOK   bool

	maxMsg   atomic.Int64
	maxMsgAt atomic.Int64 // unix nanoseconds of the last refresh
	maxMu    sync.Mutex
	maxFn    func(fd uintptr)
	maxErr   error

	// Sending: one sendmsg at a time, with a pre-built closure and header
	// so that WriteMsg allocates nothing.
	wmu  sync.Mutex
	wIov []unix.Iovec
	wOOB []byte
	wMsg unix.Msghdr
	wN   int
	wErr error
	wFn  func(fd uintptr) bool

	// RFC 5043 §10 window (guarded by wmu except signal): DDP Segment
	// chunks per stream since the socket was last seen with no data queued
	// or unacknowledged (SO_MEMINFO wmem_queued 0, see idle).
	window  *chunkWindow
	idleFn  func() (bool, error)
	memFn   func(fd uintptr)
	memInfo [unix.SK_MEMINFO_VARS]uint32
	memErr  error

	// Receiving: only the reader goroutine touches these.
	rBuf   []byte
	rOff   int
	rOOB   [256]byte
	rMsg   unix.Msghdr
	rIov   unix.Iovec
	rN     int
	rFlags int
	rOOBN  int
	rErr   error
	rFn    func(fd uintptr) bool
	rPeek  bool // recvOnce peeks (MSG_PEEK|MSG_DONTWAIT) instead of reading
	rInfo  kernelRcvInfo
	rNotif bool // the message being assembled is a notification

	mu         sync.Mutex
	state      int
	started    bool   // Start was called
	reading    bool   // the reader goroutine was launched (by Start or Close)
	inFn       bool   // the reader is in fn
	readerGID  uint64 // the reader goroutine's id: inFn && readerGID is the caller means "called from fn"
	fn         func(sid uint16, ppid uint32, b []byte)
	done       func(err error)
	cause      error // first fatal cause seen by the reader
	closeErr   error // outcome of Close
	readerDone chan struct{}

	// ResetStream: one at a time; the reader reports events to resetCh.
	resetMu sync.Mutex
	resetCh chan kernelResetEvent // buffered; nil when no reset is waiting
	resetID uint16
	// resetSeen (under mu) records, per stream, the directions the kernel
	// reported reset (kernelResetIncomingSSN, kernelResetOutgoingSSN)
	// before or while ResetStream waits: the peer may reset first.
	resetSeen map[uint16]uint16
	resetWG   sync.WaitGroup // background resets started from fn
	// dialer is set on the side that dialed the association: it requests
	// both directions' reset at once; the accepting side first gives the
	// peer's request time to arrive, since two requests crossing each other
	// are both answered "in progress" by Linux (RFC 6525 §5.2.1).
	dialer bool

	orderedRecv atomic.Uint64 // messages received without SCTP_UNORDERED (RFC 5043 §10 says none)
}

// kernelResetEvent is a stream reset outcome for ResetStream.
type kernelResetEvent struct{ flags uint16 }

// newKernelTransport waits for the association on f to come up, reads its
// parameters and the peer's Adaptation Layer Indication, and returns the
// Transport. On error f is closed (with an ABORT if the association exists).
func newKernelTransport(ctx context.Context, f *os.File, rc syscall.RawConn, cfg Config) (*kernelTransport, error) {
	t := &kernelTransport{cfg: cfg, f: f, rc: rc, readerDone: make(chan struct{})}
	t.rBuf = make([]byte, min(kernelRecvInitial, cfg.MaxReceiveMessage))
	t.rFn = t.recvOnce
	t.wFn = t.sendOnce
	t.maxFn = t.readMaxMessage
	t.wIov = make([]unix.Iovec, 0, 4)
	t.wOOB = make([]byte, 0, unix.CmsgSpace(kernelSndInfoLen))

	if err := t.establish(ctx); err != nil {
		t.abortSocket()
		return nil, err
	}
	if !cfg.AllowMissingAdaptation && (!t.peerAdaptOK || t.peerAdapt != backend.AdaptationIndicationDDP) {
		t.abortSocket()
		if t.peerAdaptOK {
			return nil, fmt.Errorf("%w (peer sent %#08x)", backend.ErrAdaptationMismatch, t.peerAdapt)
		}
		return nil, fmt.Errorf("%w (peer sent none)", backend.ErrAdaptationMismatch)
	}
	var st sctp.Status
	var serr error
	rc.Control(func(fd uintptr) {
		l := uint32(unsafe.Sizeof(st))
		serr = kernelGetsockopt(int(fd), sctp.SCTP_STATUS, unsafe.Pointer(&st), &l)
		t.local = kernelLocalAddr(int(fd))
		t.remote = kernelRemoteAddr(int(fd))
	})
	if cfg.Capture != nil {
		t.rec = cfg.Capture.SCTP(kernelAddrPort(t.local), kernelAddrPort(t.remote))
	}
	if serr != nil {
		t.abortSocket()
		if errors.Is(serr, unix.EINVAL) {
			// No association any more: the peer aborted right after COMM_UP.
			return nil, fmt.Errorf("sctpllp: association ended during set-up: %w", llp.ErrAborted)
		}
		return nil, os.NewSyscallError("getsockopt SCTP_STATUS", serr)
	}
	// RFC 5043 §8: DDP streams pair the inbound and outbound SCTP streams
	// with the same identifier, so only the smaller count is usable.
	t.streams = int(min(st.Instreams, st.Ostreams))
	t.window = newChunkWindow(t.streams, cfg.outstandingLimit())
	t.idleFn = t.idle
	t.memFn = t.readMemInfo
	t.maxMsg.Store(int64(st.FragmentationPoint))
	t.maxMsgAt.Store(time.Now().UnixNano())
	return t, nil
}

// establish reads notifications until SCTP_COMM_UP (or a failure), then
// consumes the Adaptation Layer Indication that the kernel queues right
// behind it when the peer sent one. ctx bounds the wait.
func (t *kernelTransport) establish(ctx context.Context) error {
	release := kernelWatchContext(ctx, t.f.SetReadDeadline)
	defer release()
	up := false
	for {
		if up {
			// Only what is already queued: peek at the next message's
			// header, and consume it only if it is the indication.
			t.rPeek = true
			err := t.rc.Read(t.rFn)
			t.rPeek = false
			if err == nil {
				err = t.rErr
			}
			if errors.Is(err, unix.EAGAIN) {
				return nil // nothing queued: the peer sent no indication
			}
			if err != nil {
				return err
			}
			if t.rFlags&kernelMsgNotification == 0 || t.rN < 2 ||
				binary.NativeEndian.Uint16(t.rBuf[0:]) != kernelSNAdaptation {
				return nil // data or another event: no indication was sent
			}
		}
		msg, notif, err := t.readMessage()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if serr := t.socketError(); serr != nil {
				// The poller saw the socket's error (EPOLLERR: the wait
				// returns "not pollable") before the failure's
				// notification was read: the socket says why.
				return fmt.Errorf("sctpllp: association set-up failed: %w", os.NewSyscallError("connect", serr))
			}
			return err
		}
		if !notif {
			return errors.New("sctpllp: data before SCTP_COMM_UP")
		}
		n, err := parseKernelNotification(msg)
		if err != nil {
			return err
		}
		switch {
		case n.Type == kernelSNAssocChange && n.State == kernelCommUp:
			up = true
		case n.Type == kernelSNAssocChange:
			err := fmt.Errorf("sctpllp: association set-up failed (sac_state %d, sac_error %d)", n.State, n.Error)
			if n.State == kernelCantStrAssoc {
				// The socket's error says why: ECONNREFUSED for the ABORT
				// of a port where nothing listens, ETIMEDOUT when the
				// INITs went unanswered.
				if serr := t.socketError(); serr != nil {
					return fmt.Errorf("%w: %w", err, os.NewSyscallError("connect", serr))
				}
			}
			return err
		case n.Type == kernelSNAdaptation && up:
			t.peerAdapt, t.peerAdaptOK = n.Adaptation, true
			return nil
		}
	}
}

// socketError returns the socket's pending error (SO_ERROR), or nil.
func (t *kernelTransport) socketError() error {
	var serr error
	_ = t.rc.Control(func(fd uintptr) {
		if v, e := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR); e == nil && v != 0 {
			serr = unix.Errno(v)
		}
	})
	return serr
}

// recvOnce is the rc.Read callback: one recvmsg into rBuf[rOff:].
func (t *kernelTransport) recvOnce(fd uintptr) bool {
	buf := t.rBuf[t.rOff:]
	flags := uintptr(unix.MSG_DONTWAIT)
	if t.rPeek {
		// Peek at the next message's first octets only.
		buf = t.rBuf[:kernelSNHeaderLen]
		flags |= unix.MSG_PEEK
	}
	t.rIov.Base = &buf[0]
	t.rIov.SetLen(len(buf))
	t.rMsg = unix.Msghdr{Iov: &t.rIov, Iovlen: 1, Control: &t.rOOB[0]}
	t.rMsg.SetControllen(len(t.rOOB))
	for {
		n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&t.rMsg)), flags)
		switch e {
		case 0:
			t.rN, t.rFlags, t.rOOBN, t.rErr = int(n), int(t.rMsg.Flags), int(t.rMsg.Controllen), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if t.rPeek {
				t.rN, t.rFlags, t.rErr = 0, 0, e
				return true
			}
			return false
		default:
			t.rN, t.rFlags, t.rOOBN, t.rErr = 0, 0, 0, e
			return true
		}
	}
}

// errKernelEOF marks the end of the receive side (recvmsg returned 0).
var errKernelEOF = errors.New("sctpllp: end of association")

// readMessage returns the next complete message (data or notification).
// The slice is valid until the next call. A message is delivered only if it
// ends with MSG_EOR: pieces are assembled, and a message longer than
// MaxReceiveMessage fails with errMessageTooLarge.
func (t *kernelTransport) readMessage() (msg []byte, notif bool, err error) {
	t.rOff = 0
	for {
		if err := t.rc.Read(t.rFn); err != nil {
			return nil, false, err
		}
		if t.rErr != nil {
			return nil, false, t.rErr
		}
		if t.rN == 0 && t.rOOBN == 0 && t.rFlags&(kernelMsgEOR|kernelMsgNotification) == 0 {
			if t.rOff > 0 {
				return nil, false, fmt.Errorf("sctpllp: association ended inside a message (%d octets read): %w", t.rOff, llp.ErrAborted)
			}
			return nil, false, errKernelEOF
		}
		isNotif := t.rFlags&kernelMsgNotification != 0
		if t.rOff == 0 {
			t.rNotif = isNotif
			if !isNotif {
				info, ok := parseKernelRcvInfo(t.rOOB[:t.rOOBN])
				if !ok {
					return nil, false, errors.New("sctpllp: received message without SCTP_SNDRCV information")
				}
				t.rInfo = info
			}
		} else if isNotif != t.rNotif {
			return nil, false, errors.New("sctpllp: notification interleaved with a partial message")
		}
		if t.rFlags&unix.MSG_TRUNC != 0 {
			return nil, false, fmt.Errorf("%w: MSG_TRUNC", errMessageTooLarge)
		}
		t.rOff += t.rN
		if t.rFlags&kernelMsgEOR != 0 {
			return t.rBuf[:t.rOff], isNotif, nil
		}
		// No MSG_EOR: more of the same message follows.
		if t.rOff == len(t.rBuf) {
			if len(t.rBuf) >= t.cfg.MaxReceiveMessage {
				return nil, false, fmt.Errorf("%w: more than %d octets on stream %d", errMessageTooLarge, t.cfg.MaxReceiveMessage, t.rInfo.Stream)
			}
			nb := make([]byte, min(2*len(t.rBuf), t.cfg.MaxReceiveMessage))
			copy(nb, t.rBuf[:t.rOff])
			t.rBuf = nb
		}
	}
}

// Start implements Transport.
func (t *kernelTransport) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	t.mu.Lock()
	if t.started {
		t.mu.Unlock()
		return
	}
	t.started = true
	if t.state != kernelOpen {
		// Closed before Start: the reader (if any) ran without callbacks.
		t.mu.Unlock()
		if done != nil {
			done(fmt.Errorf("sctpllp: start after close: %w", llp.ErrClosed))
		}
		return
	}
	t.fn, t.done = fn, done
	t.reading = true
	t.mu.Unlock()
	go t.readLoop()
}

// readLoop delivers messages to fn and handles notifications until the
// association ends, then closes the socket and calls done.
func (t *kernelTransport) readLoop() {
	defer close(t.readerDone)
	t.mu.Lock()
	t.readerGID = goid.ID()
	t.mu.Unlock()
	cause := t.receive()

	t.mu.Lock()
	state := t.state
	if t.cause != nil {
		cause = t.cause
	}
	t.mu.Unlock()
	switch {
	case state == kernelAborted:
		cause = fmt.Errorf("sctpllp: aborted locally: %w", llp.ErrAborted)
	case errors.Is(cause, errKernelEOF) || (state == kernelClosing && cause == nil):
		cause = nil // graceful: the peer's SHUTDOWN or our own completed
	case state == kernelClosing && errors.Is(cause, os.ErrDeadlineExceeded):
		cause = fmt.Errorf("%w after %v, aborted: %w", ErrShutdownTimeout, t.cfg.CloseTimeout, llp.ErrAborted)
		t.closeErr = cause
		t.abortSocket()
	case state == kernelOpen && cause != nil && !errors.Is(cause, llp.ErrAborted):
		// A local failure (message too large, malformed notification):
		// the association cannot continue, tell the peer.
		t.abortSocket()
	}
	t.f.Close()
	t.window.signal() // writers waiting for the chunk window see the end

	t.mu.Lock()
	t.state = kernelEnded
	done := t.done
	t.fn, t.done = nil, nil
	if ch := t.resetCh; ch != nil {
		select {
		case ch <- kernelResetEvent{flags: kernelResetFailed}:
		default:
		}
	}
	t.mu.Unlock()
	t.resetWG.Wait() // background resets see the end (kernelResetFailed or state)
	if done != nil {
		done(cause)
	}
}

// receive runs the receive loop; it returns why it stopped.
func (t *kernelTransport) receive() error {
	for {
		msg, notif, err := t.readMessage()
		if err != nil {
			return t.classify(err)
		}
		if notif {
			if err := t.notification(msg); err != nil {
				return err
			}
			continue
		}
		if t.rInfo.Flags&sctp.SCTP_UNORDERED == 0 {
			t.orderedRecv.Add(1)
		}
		t.mu.Lock()
		if t.state != kernelOpen || t.fn == nil {
			t.mu.Unlock()
			continue // closing: drain without delivering
		}
		fn := t.fn
		t.inFn = true
		t.mu.Unlock()
		if t.rec != nil {
			t.rec.Record(false, t.rInfo.Stream, t.rInfo.PPID, t.rInfo.Flags&sctp.SCTP_UNORDERED != 0, msg)
		}
		fn(t.rInfo.Stream, t.rInfo.PPID, msg)
		t.mu.Lock()
		t.inFn = false
		t.mu.Unlock()
	}
}

// classify maps a receive error onto the causes reported by done.
func (t *kernelTransport) classify(err error) error {
	switch {
	case errors.Is(err, errKernelEOF), errors.Is(err, os.ErrDeadlineExceeded):
		return err
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("sctpllp: %w", llp.ErrClosed)
	case errors.Is(err, unix.ECONNRESET), errors.Is(err, unix.ETIMEDOUT), errors.Is(err, unix.EPIPE),
		errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.ENOTCONN):
		return fmt.Errorf("sctpllp: association lost: %w: %w", llp.ErrAborted, os.NewSyscallError("recvmsg", err))
	}
	return err
}

// notification acts on one notification; a non-nil return ends the
// association.
func (t *kernelTransport) notification(b []byte) error {
	n, err := parseKernelNotification(b)
	if err != nil {
		return err
	}
	switch n.Type {
	case kernelSNAssocChange:
		switch n.State {
		case kernelCommLost:
			err := fmt.Errorf("sctpllp: association lost (peer abort or retransmission limit, error cause %d): %w", n.Error, llp.ErrAborted)
			t.setCause(err)
			return err
		case kernelRestart:
			// The peer restarted: every DDP stream's state is gone.
			err := fmt.Errorf("sctpllp: peer restarted the association: %w", llp.ErrAborted)
			t.setCause(err)
			return err
		case kernelShutdownComp:
			// Our SHUTDOWN (Close) completed: the association is closed.
			return errKernelEOF
		}
	case kernelSNShutdown:
		// The peer sent SHUTDOWN: recvmsg returns 0 once the queue is
		// drained, which ends the association gracefully.
	case kernelSNPartialDeliver:
		if n.PDIndication == kernelPDAborted {
			t.setCause(fmt.Errorf("sctpllp: partial delivery aborted: %w", llp.ErrAborted))
		}
	case kernelSNRemoteError:
		if n.Cause == kernelCauseInvalidStream {
			// The peer dropped one of our messages (RFC 4960 §3.3.10.1):
			// data was lost, the association cannot be trusted.
			err := fmt.Errorf("sctpllp: peer reported an invalid stream identifier and dropped data: %w", backend.ErrStreamRange)
			t.setCause(err)
			return err
		}
	case kernelSNAdaptation:
		// Already read during set-up; a second one changes nothing.
	case kernelSNSenderDry:
		// Nothing queued or unacknowledged: writers held by the RFC 5043
		// §10 window probe again (the probe, not this event, decides).
		t.window.signal()
	case kernelSNStreamReset:
		t.mu.Lock()
		ch, id := t.resetCh, t.resetID
		ok := n.Flags&(kernelResetDenied|kernelResetFailed) == 0
		for i := 0; i < n.ResetStreams(); i++ {
			sid := n.ResetStream(i)
			if ok {
				if t.resetSeen == nil {
					t.resetSeen = make(map[uint16]uint16)
				}
				t.resetSeen[sid] |= n.Flags & (kernelResetIncomingSSN | kernelResetOutgoingSSN)
			}
			if ch != nil && sid == id {
				select {
				case ch <- kernelResetEvent{flags: n.Flags}:
				default:
				}
			}
		}
		t.mu.Unlock()
	}
	return nil
}

func (t *kernelTransport) setCause(err error) {
	t.mu.Lock()
	if t.cause == nil {
		t.cause = err
	}
	t.mu.Unlock()
}

// WriteMsg implements Transport: one sendmsg with SCTP_SNDINFO carrying the
// stream, the PPID in network order and SCTP_UNORDERED (RFC 5043 §10).
func (t *kernelTransport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	// RFC 5043 §10: Linux accepts any number of unordered chunks for a stream
	// before assigning TSNs, so the sender itself refrains from having more
	// than 32767 DDP Segment chunks of one stream unacknowledged. The kernel
	// reports no per-chunk acknowledgements to a one-to-one socket; it does
	// account every DATA chunk it holds (queued or sent and unacknowledged) in
	// the socket's wmem_queued until the chunk is acknowledged and freed. A
	// segment is therefore admitted while its stream has sent fewer than
	// contract.MaxOutstandingSegments segments since wmem_queued was last read as 0 (every
	// chunk handed over before acknowledged); past that the writer waits for
	// SCTP_SENDER_DRY_EVENT (or a 10 ms re-probe) and reads wmem_queued again.
	// Session control messages (PPID 17) are never held back; two chunks of the
	// window are kept for them.

	if int(sid) >= t.streams {
		return fmt.Errorf("%w: %d (association has %d streams)", backend.ErrStreamRange, sid, t.streams)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if ppid != backend.PPIDControl {
		if err := t.admitLocked(sid); err != nil {
			return err
		}
	}
	t.wIov = t.wIov[:0]
	total := 0
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		var iov unix.Iovec
		iov.Base = &p[0]
		iov.SetLen(len(p))
		t.wIov = append(t.wIov, iov)
		total += len(p)
	}
	if total == 0 {
		return backend.ErrEmptyMessage
	}
	t.wOOB = appendKernelSndInfo(t.wOOB[:0], sid, ppid, sctp.SCTP_UNORDERED)
	t.wMsg = unix.Msghdr{Iov: &t.wIov[0], Control: &t.wOOB[0]}
	t.wMsg.SetIovlen(len(t.wIov))
	t.wMsg.SetControllen(len(t.wOOB))
	err := t.rc.Write(t.wFn)
	for i := range t.wIov {
		t.wIov[i] = unix.Iovec{} // do not keep the caller's buffers reachable
	}
	if err == nil {
		err = t.wErr
	}
	if err != nil {
		return t.writeError(err)
	}
	if t.wN != total {
		return fmt.Errorf("sctpllp: sendmsg sent %d of %d octets: %w", t.wN, total, llp.ErrAborted)
	}
	if ppid != backend.PPIDControl {
		t.window.sent(sid)
	}
	if t.rec != nil {
		t.rec.Record(true, sid, ppid, true, parts...)
	}
	return nil
}

// kernelAddrPort is the primary address of a, for the capture.
func kernelAddrPort(a net.Addr) netip.AddrPort {
	sa, ok := a.(*sctp.SCTPAddr)
	if !ok || len(sa.IPAddrs) == 0 {
		return netip.AddrPort{}
	}
	ip, _ := netip.AddrFromSlice(sa.IPAddrs[0].IP)
	return netip.AddrPortFrom(ip.Unmap(), uint16(sa.Port))
}

// kernelWindowPoll re-probes a full RFC 5043 §10 window in case no
// SCTP_SENDER_DRY_EVENT arrives (the reader is not started yet, or the
// event was consumed before the writer began to wait).
const kernelWindowPoll = 10 * time.Millisecond

// admitLocked waits, with wmu held on entry and on return, until the RFC
// 5043 §10 window admits one more segment on sid.
func (t *kernelTransport) admitLocked(sid uint16) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ok, err := t.window.admit(sid, t.idleFn)
		if err != nil {
			return t.writeError(err)
		}
		if ok {
			return nil
		}
		t.mu.Lock()
		state := t.state
		t.mu.Unlock()
		if state != kernelOpen {
			return t.writeError(os.ErrClosed)
		}
		wake := t.window.waitCh()
		if timer == nil {
			timer = time.NewTimer(kernelWindowPoll)
		} else {
			timer.Reset(kernelWindowPoll)
		}
		t.wmu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
		case <-t.readerDone:
		}
		t.wmu.Lock()
	}
}

// idle reports whether the socket holds no DATA chunk, queued or
// unacknowledged: SO_MEMINFO's SK_MEMINFO_WMEM_QUEUED, which Linux SCTP
// charges for every DATA chunk from sendmsg until the chunk is acknowledged
// and freed (sctp_set_owner_w, sctp_wfree).
func (t *kernelTransport) idle() (bool, error) {
	if err := t.rc.Control(t.memFn); err != nil {
		return false, err
	}
	if t.memErr != nil {
		return false, os.NewSyscallError("getsockopt SO_MEMINFO", t.memErr)
	}
	return t.memInfo[unix.SK_MEMINFO_WMEM_QUEUED] == 0, nil
}

// readMemInfo is the rc.Control callback of idle.
func (t *kernelTransport) readMemInfo(fd uintptr) {
	l := uint32(unsafe.Sizeof(t.memInfo))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&t.memInfo[0])), uintptr(unsafe.Pointer(&l)), 0)
	t.memErr = nil
	if e != 0 {
		t.memErr = e
	}
}

// sendOnce is the rc.Write callback: one sendmsg of wMsg.
func (t *kernelTransport) sendOnce(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&t.wMsg)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		switch e {
		case 0:
			t.wN, t.wErr = int(n), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false // send buffer full: wait for EPOLLOUT
		default:
			t.wN, t.wErr = 0, e
			return true
		}
	}
}

// writeError maps a sendmsg failure onto the llp sentinels.
func (t *kernelTransport) writeError(err error) error {
	t.mu.Lock()
	state, cause := t.state, t.cause
	t.mu.Unlock()
	switch {
	case errors.Is(err, os.ErrClosed), state != kernelOpen:
		if cause != nil {
			return fmt.Errorf("sctpllp: write: %w: %w", backend.ErrAssociationClosed, cause)
		}
		return fmt.Errorf("sctpllp: write: %w", backend.ErrAssociationClosed)
	case errors.Is(err, unix.ECONNRESET), errors.Is(err, unix.ETIMEDOUT), errors.Is(err, unix.ECONNREFUSED):
		return fmt.Errorf("sctpllp: write: %w: %w: %w", backend.ErrAssociationClosed, llp.ErrAborted, os.NewSyscallError("sendmsg", err))
	case errors.Is(err, unix.EPIPE), errors.Is(err, unix.ESHUTDOWN), errors.Is(err, unix.ENOTCONN):
		return fmt.Errorf("sctpllp: write: %w: %w", backend.ErrAssociationClosed, os.NewSyscallError("sendmsg", err))
	}
	return os.NewSyscallError("sendmsg", err)
}

// NumStreams implements Transport.
func (t *kernelTransport) NumStreams() int { return t.streams }

// MaxMessage implements Transport: the association's fragmentation point
// (SCTP_STATUS sstat_fragmentation_point), which the kernel derives from the
// path MTU less the IP, SCTP common and DATA chunk headers (and UDP when
// encapsulated). It is re-read at most every 100 ms.
func (t *kernelTransport) MaxMessage() int {
	now := time.Now().UnixNano()
	if now-t.maxMsgAt.Load() < int64(kernelMaxMessageTTL) {
		return int(t.maxMsg.Load())
	}
	t.maxMu.Lock()
	defer t.maxMu.Unlock()
	if now-t.maxMsgAt.Load() >= int64(kernelMaxMessageTTL) {
		if t.rc.Control(t.maxFn) == nil && t.maxErr == nil {
			t.maxMsgAt.Store(now)
		}
	}
	return int(t.maxMsg.Load())
}

// readMaxMessage is the rc.Control callback of MaxMessage.
func (t *kernelTransport) readMaxMessage(fd uintptr) {
	var st sctp.Status
	l := uint32(unsafe.Sizeof(st))
	t.maxErr = kernelGetsockopt(int(fd), sctp.SCTP_STATUS, unsafe.Pointer(&st), &l)
	if t.maxErr == nil && st.FragmentationPoint > 0 {
		t.maxMsg.Store(int64(st.FragmentationPoint))
	}
}

// SCTP_GET_ASSOC_STATS (include/uapi/linux/sctp.h struct sctp_assoc_stats):
// the association id, the sockaddr_storage of the observed max RTO (8-octet
// aligned), then __u64 counters; sas_rtxchunks is the sixth of them.
const (
	kernelRTOInfoLen         = 16
	kernelOptGetAssocStats   = 112
	kernelAssocStatsLen      = 8 + 128 + 16*8
	kernelAssocStatsRtxChunk = 8 + 128 + 5*8
)

// TransportStats reports the kernel's smoothed RTT of the primary path
// (SCTP_STATUS sstat_primary.spinfo_srtt, milliseconds) and its count of
// retransmitted chunks (SCTP_GET_ASSOC_STATS sas_rtxchunks).
func (t *kernelTransport) TransportStats() backend.Stats {
	// The kernel keeps the SRTT in jiffies and reports whole milliseconds, so a
	// path faster than a jiffy (loopback, a VM) reads 0 even after it was
	// measured. A measurement is recognised by the primary path's RTO having
	// left the association's initial RTO (SCTP_RTOINFO srto_initial): the
	// kernel sets RTO = SRTT + 4·RTTVAR, clamped to [RTO.Min, RTO.Max], on the
	// first measurement (RFC 9260 §6.3.1 C2/C3). SRTT is then reported as 0,
	// meaning "below the kernel's resolution".

	var st backend.Stats
	_ = t.rc.Control(func(fd uintptr) {
		var status sctp.Status
		l := uint32(unsafe.Sizeof(status))
		if kernelGetsockopt(int(fd), sctp.SCTP_STATUS, unsafe.Pointer(&status), &l) == nil {
			pa := status.PrimaryPeerAddr
			measured := pa.SRTT > 0
			if !measured && pa.RTO != 0 {
				var rto [kernelRTOInfoLen]byte // sctp_rtoinfo: assoc id, initial, max, min
				l = uint32(len(rto))
				measured = kernelGetsockopt(int(fd), sctp.SCTP_RTOINFO, unsafe.Pointer(&rto[0]), &l) == nil &&
					l >= kernelRTOInfoLen && pa.RTO != binary.NativeEndian.Uint32(rto[4:])
			}
			if measured {
				st.SRTT, st.HasSRTT = time.Duration(pa.SRTT)*time.Millisecond, true
			}
		}
		var b [kernelAssocStatsLen]byte
		l = uint32(len(b))
		if kernelGetsockopt(int(fd), kernelOptGetAssocStats, unsafe.Pointer(&b[0]), &l) == nil && l >= kernelAssocStatsRtxChunk+8 {
			st.Retransmissions, st.HasRetransmissions = binary.NativeEndian.Uint64(b[kernelAssocStatsRtxChunk:]), true
		}
	})
	return st
}

// kernelResetGrace is how long the accepting side waits for the peer's
// stream reset before it sends its own request.
const kernelResetGrace = time.Second

// ResetStream implements Transport with RFC 6525 (SCTP_RESET_STREAMS): it
// resets our outgoing stream sid (an Outgoing SSN Reset Request) and returns
// when the peer has performed it. The incoming direction is reset by the
// peer's own request: both ends of a DDP session call ResetStream when their
// final chunk is out (RFC 5043 §6.6), and pion, like this backend, resets
// only its outgoing direction (pion does not implement the Incoming SSN
// Reset Request at all).
func (t *kernelTransport) ResetStream(sid uint16) error {
	// Two requests crossing each other are answered "in progress" by Linux, so
	// the ends take turns: the dialer of the association asks at once; the
	// accepting side first waits (up to a second) for the peer's reset of the
	// other direction to arrive, then asks. A request that fails anyway is
	// repeated until ResetTimeout.
	//
	// It fails with an error wrapping errors.ErrUnsupported when the peer did
	// not negotiate RE-CONFIG. Start must have been called: the outcome arrives
	// as notifications. Called from fn, it starts the reset and returns nil: fn's
	// goroutine is the one that reads the notifications.

	if int(sid) >= t.streams {
		return fmt.Errorf("%w: %d (association has %d streams)", backend.ErrStreamRange, sid, t.streams)
	}
	t.mu.Lock()
	if t.calledFromFn() && t.state == kernelOpen {
		// Called from fn (the adaptation ends a session on a received
		// Terminate there): the outcome arrives as notifications that
		// only this goroutine can read, so the reset completes in the
		// background. readLoop waits for it before it reports done.
		t.resetWG.Add(1)
		t.mu.Unlock()
		go func() {
			defer t.resetWG.Done()
			_ = t.resetStream(sid)
		}()
		return nil
	}
	t.mu.Unlock()
	return t.resetStream(sid)
}

// resetStream is ResetStream's procedure; it blocks until the outcome.
func (t *kernelTransport) resetStream(sid uint16) error {
	t.resetMu.Lock()
	defer t.resetMu.Unlock()
	t.mu.Lock()
	if t.state != kernelOpen || !t.reading {
		reading := t.reading
		t.mu.Unlock()
		if !reading {
			return errors.New("sctpllp: ResetStream before Start")
		}
		return fmt.Errorf("sctpllp: reset stream %d: %w", sid, backend.ErrAssociationClosed)
	}
	ch := make(chan kernelResetEvent, 8)
	t.resetCh, t.resetID = ch, sid
	got := t.resetSeen[sid]
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.resetCh = nil
		delete(t.resetSeen, sid)
		t.mu.Unlock()
	}()
	const both = kernelResetIncomingSSN | kernelResetOutgoingSSN
	deadline := time.Now().Add(t.cfg.ResetTimeout)
	timer := time.NewTimer(t.cfg.ResetTimeout)
	defer timer.Stop()
	// wait collects events until want is reset, a request of ours was
	// refused or failed (its flags are returned) or until passes.
	wait := func(want uint16, until time.Time) (failed uint16) {
		timer.Reset(time.Until(until))
		for got&want != want {
			select {
			case ev := <-ch:
				if ev.flags&(kernelResetDenied|kernelResetFailed) != 0 {
					return ev.flags
				}
				got |= ev.flags & both
			case <-timer.C:
				return 0
			}
		}
		return 0
	}
	if !t.dialer && got&both == 0 {
		grace := time.Now().Add(kernelResetGrace)
		if grace.After(deadline) {
			grace = deadline
		}
		wait(kernelResetIncomingSSN, grace)
	}

	var req [kernelResetStreamsHdr + 2]byte
	binary.NativeEndian.PutUint16(req[4:], kernelStreamResetOutgoing)
	binary.NativeEndian.PutUint16(req[6:], 1)
	binary.NativeEndian.PutUint16(req[8:], sid)
	var lastErr error
	for backoff := time.Millisecond; got&kernelResetOutgoingSSN == 0; backoff = min(2*backoff, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			if lastErr != nil {
				return fmt.Errorf("sctpllp: reset stream %d: %w", sid, lastErr)
			}
			return fmt.Errorf("sctpllp: reset stream %d: no answer within %v", sid, t.cfg.ResetTimeout)
		}
		var serr error
		if err := t.rc.Control(func(fd uintptr) {
			serr = kernelSetsockopt(int(fd), kernelOptResetStreams, unsafe.Pointer(&req[0]), uintptr(len(req)))
		}); err != nil {
			return fmt.Errorf("sctpllp: reset stream %d: %w", sid, backend.ErrAssociationClosed)
		}
		switch {
		case serr == nil:
			flags := wait(kernelResetOutgoingSSN, deadline)
			if flags == 0 {
				continue // performed, or the deadline check above ends it
			}
			if flags&kernelResetDenied != 0 {
				return fmt.Errorf("sctpllp: reset stream %d: refused by the peer (flags %#x)", sid, flags)
			}
			// Failed (e.g. crossed by the peer's request): ask again.
			lastErr = fmt.Errorf("failed (flags %#x)", flags)
		case errors.Is(serr, unix.ENOPROTOOPT):
			return fmt.Errorf("sctpllp: reset stream %d: peer did not negotiate RE-CONFIG (RFC 6525): %w", sid, errors.ErrUnsupported)
		case errors.Is(serr, unix.EAGAIN), errors.Is(serr, unix.EINPROGRESS), errors.Is(serr, unix.EBUSY):
			// Data still queued on the stream, or a request outstanding.
			lastErr = os.NewSyscallError("setsockopt SCTP_RESET_STREAMS", serr)
		default:
			return fmt.Errorf("sctpllp: reset stream %d: %w", sid, os.NewSyscallError("setsockopt SCTP_RESET_STREAMS", serr))
		}
		select {
		case ev := <-ch:
			if ev.flags&(kernelResetDenied|kernelResetFailed) == 0 {
				got |= ev.flags & both
			}
		case <-time.After(backoff):
		}
	}
	return nil
}

// PeerAdaptation implements Transport: the indication from the peer's INIT
// or INIT-ACK, read from SCTP_ADAPTATION_INDICATION at set-up.
func (t *kernelTransport) PeerAdaptation() (uint32, bool) { return t.peerAdapt, t.peerAdaptOK }

// Kind implements Transport.
func (t *kernelTransport) Kind() string { return kernelKind }

// LocalAddr implements Transport (*sctp.SCTPAddr, every local address).
func (t *kernelTransport) LocalAddr() net.Addr { return t.local }

// RemoteAddr implements Transport (*sctp.SCTPAddr, every peer address).
func (t *kernelTransport) RemoteAddr() net.Addr { return t.remote }

// Close implements Transport: SHUTDOWN after every message already accepted
// by WriteMsg has been acknowledged (shutdown(SHUT_WR), RFC 4960 §9.2), then
// it waits, at most CloseTimeout, for the association to close while the
// receive side is drained (undelivered), and aborts if that times out.
// Calls after the first, and calls after the association ended, return nil.
// Called from fn or done it does not wait.
func (t *kernelTransport) Close() error {
	t.mu.Lock()
	if t.state != kernelOpen {
		t.mu.Unlock()
		return nil
	}
	t.state = kernelClosing
	reading, inFn := t.reading, t.calledFromFn()
	t.reading = true
	t.mu.Unlock()

	if reading && !inFn {
		// Let stream resets started from fn finish first (bounded by
		// ResetTimeout): a SHUTDOWN sent while our RE-CONFIG request is
		// outstanding was seen to stall the shutdown with a pion peer
		// (docs/kernel-sctp.md).
		t.resetWG.Wait()
	}
	t.rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
	t.f.SetReadDeadline(time.Now().Add(t.cfg.CloseTimeout))
	if !reading {
		go t.readLoop() // drain to the end of the association, no callbacks
	}
	if inFn {
		return nil
	}
	<-t.readerDone
	return t.closeErr
}

// Abort implements Transport: SO_LINGER 0 and close, which makes the kernel
// send ABORT (RFC 4960 §9.1) and discard what is queued. It returns when the
// reader has stopped (unless called from fn or done). Calls after the
// association ended return nil.
func (t *kernelTransport) Abort() error {
	t.mu.Lock()
	if t.state == kernelAborted || t.state == kernelEnded {
		t.mu.Unlock()
		return nil
	}
	t.state = kernelAborted
	reading, inFn := t.reading, t.calledFromFn()
	t.mu.Unlock()

	t.abortSocket()
	if !reading {
		return nil
	}
	if !inFn {
		<-t.readerDone
	}
	return nil
}

// calledFromFn reports whether the caller is the reader inside fn, not
// another goroutine that runs while fn does (that one must wait for fn).
// mu is held.
func (t *kernelTransport) calledFromFn() bool {
	return t.inFn && t.readerGID == goid.ID()
}

// abortSocket closes the socket with SO_LINGER 0: the kernel sends ABORT.
func (t *kernelTransport) abortSocket() {
	t.rc.Control(func(fd uintptr) {
		unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	})
	t.f.Close()
}
