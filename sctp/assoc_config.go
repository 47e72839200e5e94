package sctp

import (
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// Defaults of Config.
const (
	// defaultStreams is the number of streams offered in each direction.
	defaultStreams = 4096
	// defaultPort is the SCTP port of both ends when none is configured
	// (the SCTP ports of an association over UDP are carried but mean
	// nothing to the UDP demultiplexing, RFC 6951 §5.2; pion uses 5000).
	defaultPort = 5000
	// defaultBuffer is the default receive buffer (the a_rwnd budget) and
	// send buffer of an association.
	defaultBuffer = 4 << 20
	// defaultMaxRetrans is Association.Max.Retrans (RFC 9260 §16).
	defaultMaxRetrans = 10
	// defaultMaxInitRetrans is Max.Init.Retransmits (RFC 9260 §16).
	defaultMaxInitRetrans = 8
	// defaultMaxBurst is Max.Burst (RFC 9260 §16).
	defaultMaxBurst = 4
	// defaultHeartbeatInterval is HB.interval (RFC 9260 §16).
	defaultHeartbeatInterval = 30 * time.Second
	// multihomedHeartbeatInterval is a multihomed association's HB.interval
	// when none is configured: a failed path is probed once per interval
	// (§8.3), so this is about how soon it rejoins once it works again.
	multihomedHeartbeatInterval = 5 * time.Second
	// defaultBacklog is a Listener's accept queue.
	defaultBacklog = 128
	// defaultMaxAssociations and defaultMaxAssociationsPerAddress bound a
	// Listener's associations in all and per peer IP address.
	defaultMaxAssociations           = 1024
	defaultMaxAssociationsPerAddress = 64
	// loopbackMTU is the path MTU assumed to a loopback address: Linux's
	// loopback MTU, so that a 64 KiB DDP segment travels in one datagram.
	loopbackMTU = 65536
	// maxUDPPayload is the largest UDP payload over IPv4 (65535 less the
	// IPv4 and UDP headers).
	maxUDPPayload = 65535 - 20 - 8
	// udpOverhead is the UDP header of the encapsulation (RFC 6951).
	udpOverhead = 8
)

// Config sets up an association, or every association of a Listener. The
// zero value is usable: every zero field takes its default.
type Config struct {
	// Streams is the number of outbound streams offered (OS) and of
	// inbound streams accepted (MIS); at most 65535. The association uses
	// the smaller of each and the peer's (RFC 9260 §5.1.1).
	Streams int
	// MTU is the path MTU in octets, IP header included, fixed for the
	// association (no probing); zero means the route's MTU toward the
	// peer as the ceiling of RFC 8899 probing (65536 on loopback,
	// 1500 where the kernel does not say). The largest packet is
	// the MTU less the IP and UDP headers.
	MTU int
	// NoPLPMTUD turns RFC 8899 probing off: packets keep the route's MTU
	// (IP_MTU toward the peer) for the whole association. Without it an
	// association over UDP with MTU unset, loopback included, starts at
	// BASE_PLPMTU and probes up to the route's MTU (assoc_plpmtud.go).
	NoPLPMTUD bool
	// pathProbe, set by Dial for its own UDP socket, turns PLPMTUD on.
	pathProbe *pathProbe
	// MaxPacket caps the SCTP packet below what the MTU allows; zero: no
	// cap. Over DTLS (RFC 8261) a packet must fit one DTLS record, 16384
	// octets of plaintext (RFC 6347 §4.1), and the record's own header and
	// tag come out of the MTU too.
	MaxPacket int
	// LocalPort and PeerPort are the SCTP ports (5000 if zero). A
	// Listener answers INITs to any port.
	LocalPort, PeerPort uint16
	// RTO holds RTO.Initial, RTO.Min and RTO.Max (RFC 9260 §16).
	RTO RTOConfig
	// ReceiveBuffer bounds the user data held for the local user, the
	// a_rwnd advertised (RFC 9260 §6.2); SendBuffer the user data a
	// writer may queue before WriteMsg blocks (counted in pool buffers);
	// zero: 4 MiB each.
	ReceiveBuffer, SendBuffer int
	// MaxMessageFragments and MaxHeldFragments bound reassembly (RFC
	// 9260 §6.9): the fragments of one user message, and the fragments
	// and waiting ordered messages held at once (zero:
	// 8192, 16384). A peer beyond
	// either, or sending fragments that can never complete, is aborted
	// with a Protocol Violation cause (errReassemblyLimit,
	// errFragmentSequence).
	MaxMessageFragments, MaxHeldFragments int
	// memBudget, if not nil, is the budget the association's receive
	// memory is charged to instead of the process-wide one (tests).
	memBudget *membudget.Budget
	// Tracer, if not nil, receives the association's SACK, T3-rtx and
	// end events with its window and RTO (trace.go; package trace writes
	// them as JSON lines). nil: nothing is traced, at no cost.
	Tracer tracing.Tracer
	// MaxRetrans is Association.Max.Retrans: consecutive T3-rtx, T2 or
	// HEARTBEAT failures after which the peer is unreachable (§8.1).
	MaxRetrans int
	// MaxInitRetrans is Max.Init.Retransmits (§5.1.6).
	MaxInitRetrans int
	// HeartbeatInterval is HB.interval (§8.3); negative disables
	// HEARTBEATs (and with them the detection of a silent idle peer).
	// Zero: 30 s, or 5 s on a multihomed association, whose failed paths
	// rejoin at their next HEARTBEAT.
	HeartbeatInterval time.Duration
	// SACKDelay is the delayed-acknowledgement bound (§6.2).
	SACKDelay time.Duration
	// MaxBurst is Max.Burst (§6.1 D, §16): the packets one transmission
	// may send beyond what left the flight since the last one (with
	// nothing in flight, for one round trip); zero means 4, negative no
	// limit.
	MaxBurst int
	// Adaptation is the Adaptation Layer Indication sent in INIT and INIT
	// ACK; zero means wire.AdaptationDDP (RFC 5043 §5.1). NoAdaptation
	// sends none (tests of the peer's check).
	Adaptation   uint32
	NoAdaptation bool
	// AllowMissingAdaptation lets a Listener accept an INIT without the
	// DDP indication; otherwise it is refused with an ABORT (RFC 5043
	// §5.1, §11.1). The active side reports the peer's indication
	// (Stats.PeerAdaptation) and leaves the decision to its caller.
	AllowMissingAdaptation bool
	// ZeroChecksum is for an association inside a DTLS connection
	// (DialConn, AcceptConn; RFC 8261): it announces Zero Checksum
	// Acceptable (RFC 9653 §4, EDMID 1), takes packets with a zero
	// checksum, and sends a zero checksum to a peer that announced the
	// same, except on packets with an INIT or COOKIE ECHO (§5.2). The
	// records' integrity check stands in for the CRC32c. Never set it
	// over plain UDP: nothing would check the packets.
	ZeroChecksum bool

	// CongestionControl is the window's algorithm in congestion
	// avoidance and on loss: "rfc9260" (the default: slow start,
	// congestion avoidance by one PMDCS per window, ssthresh cwnd/2 on
	// loss, RFC 9260 §7.2) or "cubic" (RFC 9260's slow start, Fast
	// Recovery and T3-rtx rules with CUBIC's window, RFC 9438).
	CongestionControl string
	// SlowStart is the initial slow start: "rfc9260" (the default, §7.2.1)
	// or "hystart++" (RFC 9406: it ends when the round trip grows, before
	// the bottleneck's queue overflows; later slow starts are RFC 9260's).
	SlowStart string
	// UnorderedOnly treats ordered DATA (U bit clear) as a protocol
	// violation: the association is aborted with a Protocol Violation
	// cause. RFC 5043 §10 has every DDP segment and session control
	// message sent unordered, so a DDP peer never sends ordered DATA.
	UnorderedOnly bool
	// NoOffload sends and receives every packet with its own system call.
	// Without it, on Linux, a UDP socket sends each run of equal-size
	// packets of one transmission with one sendmsg (UDP_SEGMENT) and
	// receives what the kernel coalesced (UDP_GRO) with one read,
	// whenever the kernel supports them (udpoffload_linux.go), runs
	// being sent only to peers that are not on this host (localDestination).
	// A path that refuses offload falls back by itself.
	NoOffload bool
	// offloadLocal sends runs of packets to local destinations too
	// (localDestination; tests over loopback).
	offloadLocal bool

	// LocalAddr, for Dial, is the local address: "host:port", or
	// several hosts of one port, "10.0.1.2/10.0.2.2:0". With more than
	// one host the association is multihomed (RFC 9260 §6.4): its socket
	// is bound to the wildcard address and that port, and its INIT lists
	// the hosts. Empty: any address, as today.
	LocalAddr string

	// Tap, if not nil, sees every packet the association sends (sent
	// true) and every packet it receives, with the association's local
	// and peer UDP addresses (for a packet capture: capture.Writer's
	// SCTPOverUDPTap). pkt is valid only during the call.
	Tap func(sent bool, local, remote netip.AddrPort, pkt []byte)

	// Listener settings.

	// Backlog is the accept queue (zero: 128); MaxAssociations and
	// MaxAssociationsPerAddress bound the associations a Listener holds.
	Backlog, MaxAssociations, MaxAssociationsPerAddress int
	// InitAckRate bounds the answers to unauthenticated packets per
	// second (DefaultInitAckRate).
	InitAckRate int
	// CookieLifespan is Valid.Cookie.Life (60 s).
	CookieLifespan time.Duration
	// StallTimeout ends a Listener's association that waits for its peer
	// without progress this long: DATA outstanding and no new TSN
	// acknowledged (a closed window too), a shutdown unfinished, a
	// HEARTBEAT unanswered. Zero means 30 s, negative
	// never (then only Association.Max.Retrans and T5 end them).
	StallTimeout time.Duration
}

// overUDP checks a configuration for an association over plain UDP
// (Dial, Listen): no zero checksum there, where nothing else checks the
// packets (RFC 9653 §5.1).
func overUDP(c *Config) error {
	if c != nil && c.ZeroChecksum {
		return fmt.Errorf("%w: ZeroChecksum over plain UDP (it is for DialConn and AcceptConn inside DTLS, RFC 9653)", ErrConfig)
	}
	return nil
}

// validate reports a setting out of range (wrapping ErrConfig).
func (c *Config) validate() error {
	switch c.CongestionControl {
	case "", ccname.CongestionRFC9260, ccname.CongestionCUBIC:
	default:
		return fmt.Errorf("%w: CongestionControl %q (want %q or %q)", ErrConfig, c.CongestionControl, ccname.CongestionRFC9260, ccname.CongestionCUBIC)
	}
	switch c.SlowStart {
	case "", ccname.SlowStartRFC9260, ccname.SlowStartHyStart:
	default:
		return fmt.Errorf("%w: SlowStart %q (want %q or %q)", ErrConfig, c.SlowStart, ccname.SlowStartRFC9260, ccname.SlowStartHyStart)
	}
	return nil
}

func (c Config) normalized() Config {
	if c.Streams <= 0 || c.Streams > 0xFFFF {
		c.Streams = defaultStreams
	}
	if c.LocalPort == 0 {
		c.LocalPort = defaultPort
	}
	if c.PeerPort == 0 {
		c.PeerPort = defaultPort
	}
	if c.ReceiveBuffer <= 0 {
		c.ReceiveBuffer = defaultBuffer
	}
	c.ReceiveBuffer = max(c.ReceiveBuffer, wire.MinARwnd)
	if c.SendBuffer <= 0 {
		c.SendBuffer = defaultBuffer
	}
	if c.MaxRetrans <= 0 {
		c.MaxRetrans = defaultMaxRetrans
	}
	if c.MaxInitRetrans <= 0 {
		c.MaxInitRetrans = defaultMaxInitRetrans
	}
	if c.MaxBurst == 0 {
		c.MaxBurst = defaultMaxBurst
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = defaultHeartbeatInterval
	}
	if c.Adaptation == 0 {
		c.Adaptation = wire.AdaptationDDP
	}
	if c.Backlog <= 0 {
		c.Backlog = defaultBacklog
	}
	if c.MaxAssociations <= 0 {
		c.MaxAssociations = defaultMaxAssociations
	}
	if c.MaxAssociationsPerAddress <= 0 {
		c.MaxAssociationsPerAddress = defaultMaxAssociationsPerAddress
	}
	if c.RTO.AckDelay == 0 {
		// The peer's SACK delay: 200 ms in Linux, usrsctp, pion and here.
		c.RTO.AckDelay = defaultSACKDelay
	}
	c.RTO = c.RTO.normalized()
	return c
}

// ipUDPOverhead is the IP and UDP header octets toward addr.
func ipUDPOverhead(addr netip.Addr) int {
	if addr.Is6() && !addr.Is4In6() {
		return 40 + udpOverhead
	}
	return 20 + udpOverhead
}

// maxPacketFor returns the largest SCTP packet to a peer at addr.
func (c *Config) maxPacketFor(addr netip.Addr) int {
	mtu := c.MTU
	if mtu <= 0 {
		mtu = defaultMTU
		if addr.IsLoopback() {
			mtu = loopbackMTU
		}
	}
	ip := 20
	if addr.Is6() && !addr.Is4In6() {
		ip = 40
	}
	n := max(min(mtu-ip-udpOverhead, maxUDPPayload), 512)
	if c.MaxPacket > 0 {
		n = max(min(n, c.MaxPacket), 512)
	}
	return n
}

// Errors of an association. Each error an Association returns wraps one of
// them (test with errors.Is).
var (
	// ErrClosed: the association has ended (Close, Abort, or failure) or
	// is shutting down, and takes no more user messages.
	ErrClosed = errors.New("sctp: association closed")
	// ErrConfig: a Config value is out of range.
	ErrConfig = errors.New("sctp: invalid configuration")
	// ErrAborted: the association ended with an ABORT, sent or received
	// (*AbortError says which).
	ErrAborted = errors.New("sctp: association aborted")
	// ErrPeerUnresponsive: Association.Max.Retrans consecutive
	// retransmissions or HEARTBEATs went unanswered (RFC 9260 §8.1).
	ErrPeerUnresponsive = errors.New("sctp: peer unresponsive")
	// ErrHandshake: the association could not be set up: INIT or COOKIE
	// ECHO unanswered after Max.Init.Retransmits (§5.1.6), or refused.
	ErrHandshake = errors.New("sctp: association setup failed")
	// ErrStreamRange: a stream identifier beyond the outbound streams.
	ErrStreamRange = errors.New("sctp: stream identifier out of range")
	// ErrEmptyMessage: a user message of no octets (RFC 9260 §6.2 forbids
	// DATA without user data).
	ErrEmptyMessage = errors.New("sctp: empty user message")
	// ErrMessageTooLarge: a user message beyond the send buffer.
	ErrMessageTooLarge = errors.New("sctp: user message larger than the send buffer")
	// ErrProtocolViolation: the peer broke RFC 9260 (the association was
	// aborted with a Protocol Violation cause).
	ErrProtocolViolation = errors.New("sctp: protocol violation by the peer")
	// ErrPeerRestarted: the peer restarted the association (RFC 9260
	// §5.2.4 case A: a COOKIE ECHO whose cookie carries this
	// association's tags as Tie-Tags). The association ends; a listener
	// accepts the peer's new one from the same COOKIE ECHO.
	ErrPeerRestarted = errors.New("sctp: the peer restarted the association")
)

// AbortError describes an association that ended with an ABORT. It wraps
// ErrAborted, and ErrPeerUnresponsive or ErrProtocolViolation when that
// was the reason.
type AbortError struct {
	// Local is true if this end sent the ABORT.
	Local bool
	// Reason is the local reason, or the error causes the peer sent,
	// decoded.
	Reason string
	// Cause is ErrPeerUnresponsive, ErrProtocolViolation,
	// ErrPeerRestarted or nil.
	Cause error
}

func (e *AbortError) Error() string {
	who := "peer"
	if e.Local {
		who = "local"
	}
	if e.Reason == "" {
		return fmt.Sprintf("sctp: association aborted (%s)", who)
	}
	return fmt.Sprintf("sctp: association aborted (%s): %s", who, e.Reason)
}

// Unwrap returns ErrAborted and the cause.
func (e *AbortError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrAborted, e.Cause}
	}
	return []error{ErrAborted}
}

// describeCauses renders the error causes of an ABORT or ERROR chunk.
func describeCauses(b []byte) string {
	it := wire.NewCauseIter(b)
	s := ""
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		if s != "" {
			s += "; "
		}
		s += c.Code.String()
		if c.Code == wire.CauseUserInitiatedAbort || c.Code == wire.CauseProtocolViolation {
			if len(c.Info) > 0 {
				s += ": " + string(c.Info[:min(len(c.Info), 128)])
			}
		}
	}
	return s
}

// State is the state of an association (RFC 9260 §4).
type State uint8

// The states of RFC 9260 §4. They are the package's: a user reads a
// state's name (String), and learns of the end from Done.
const (
	stateClosed State = iota
	stateCookieWait
	stateCookieEchoed
	stateEstablished
	stateShutdownPending
	stateShutdownSent
	stateShutdownReceived
	stateShutdownAckSent
)

var stateNames = [...]string{"CLOSED", "COOKIE-WAIT", "COOKIE-ECHOED", "ESTABLISHED",
	"SHUTDOWN-PENDING", "SHUTDOWN-SENT", "SHUTDOWN-RECEIVED", "SHUTDOWN-ACK-SENT"}

// String returns the RFC name of the state.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State?"
}

// HandshakeStats counts a listener's unauthenticated packets and how each
// was answered (Listener.HandshakeStats).
type HandshakeStats = handshake.Stats
