package kernel

import (
	"errors"
	"time"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// Errors of the kernel SCTP backend. They are wrapped with detail; test with
// errors.Is.
var (
	// ErrUnavailable reports that the running kernel offers no SCTP
	// sockets (built without CONFIG_IP_SCTP, module not loaded) or that the
	// platform is not Linux. Dial and Listen check it first.
	ErrUnavailable = errors.New("sctpllp: kernel SCTP unavailable")

	// errMessageTooLarge reports a received user message longer than
	// Config.MaxReceiveMessage. The message is not delivered in part:
	// the association is aborted.
	errMessageTooLarge = errors.New("sctpllp: received SCTP message exceeds the receive limit")

	// ErrShutdownTimeout reports a graceful shutdown (Close) that the
	// peer did not complete within Config.CloseTimeout: the
	// association was aborted instead. It also wraps llp.ErrAborted.
	ErrShutdownTimeout = errors.New("sctpllp: graceful shutdown not complete")
)

// Config configures a kernel SCTP association (Dial,
// Listen). The zero value is usable: every zero field takes the
// default documented beside it.
type Config struct {
	// Streams is the number of SCTP streams requested in each direction
	// (equal inbound and outbound counts, RFC 5043 §8). Default 64, at most
	// 65535.
	Streams int

	// LocalAddr, for Dial, binds the socket to "ip:port" before
	// connecting (empty: the kernel chooses). "ip1/ip2:port", here, in
	// Listen's address or in Dial's peer address, makes the endpoint or the
	// peer multi-homed (RFC 9260 §6.4, RFC 5043 §7.2; sctp_connectx): the
	// kernel sends on the primary path and moves to another after
	// PathMaxRetrans consecutive timeouts on it (RFC 9260 §8.2).
	LocalAddr string

	// PathMaxRetrans is Path.Max.Retrans (RFC 9260 §8.2, §16: default 5):
	// the consecutive timeouts after which a path is inactive, the speed
	// of failover. 0 keeps the kernel's (net.sctp.path_max_retrans).
	PathMaxRetrans int

	// RTOInitial, RTOMin and RTOMax are RTO.Initial, RTO.Min and RTO.Max
	// (RFC 9260 §6.3.1, §16: 1 s, 1 s, 60 s; SCTP_RTOINFO, millisecond
	// resolution). Zero keeps the kernel's (net.sctp.rto_*: Linux uses 3 s,
	// 1 s, 60 s). A failover takes about PathMaxRetrans+1 RTOs, which back
	// off up to RTOMax.
	RTOInitial, RTOMin, RTOMax time.Duration

	// HeartbeatInterval is HB.interval (RFC 9260 §8.3, §16: 30 s): how
	// often an idle path, and so a failed path that came back, is probed
	// (SCTP_PEER_ADDR_PARAMS spp_hbinterval). Zero keeps the kernel's.
	HeartbeatInterval time.Duration

	// AssocMaxRetrans is Association.Max.Retrans (RFC 9260 §8.1, §16:
	// default 10): consecutive retransmissions over all paths before the
	// peer is declared unreachable. On a multi-homed association it should
	// exceed the sum of the paths' PathMaxRetrans, or the association ends
	// before every path was tried. 0 keeps the kernel's.
	AssocMaxRetrans int

	// SendBuffer and ReceiveBuffer are SO_SNDBUF/SO_RCVBUF in octets
	// (default 4 MiB each; forced past net.core.[wr]mem_max when the process
	// may): kernel SCTP with its small default buffers is far slower
	// (docs/kernel-sctp.md).
	SendBuffer, ReceiveBuffer int

	// MaxReceiveMessage is the largest user message the receiver accepts, in
	// octets (default 4 MiB). A longer message is never delivered in part:
	// the association is aborted with errMessageTooLarge. The receive
	// buffer starts at 64 KiB and grows up to this limit on demand.
	MaxReceiveMessage int

	// Capture, if not nil, records the association's user messages as
	// the socket API sees them, each as an IP/SCTP packet with one DATA
	// chunk (capture.Writer.SCTP: no handshake, SACK or retransmission).
	Capture *capture.Writer

	// AllowMissingAdaptation accepts a peer that sends no DDP Adaptation
	// Layer Indication (RFC 5043 §5.1, §11.1; §7.1 "SHOULD terminate"). By
	// default the indication is sent and required: Dial fails and Accept
	// refuses (aborts) such an association with ErrAdaptationMismatch.
	AllowMissingAdaptation bool

	// CloseTimeout bounds the graceful shutdown performed by Close (default
	// 5 s); when it expires the association is aborted.
	CloseTimeout time.Duration

	// ResetTimeout bounds ResetStream's wait for the peer's RE-CONFIG
	// responses, retries included (default 5 s).
	ResetTimeout time.Duration

	// RemoteUDPEncapsPort, when not zero, sends this association's packets
	// SCTP-over-UDP to that remote UDP port (RFC 6951; 9899 is the
	// registered port). The kernel must have a local encapsulation port
	// (sysctl net.sctp.udp_port) set before the socket is created. Needed
	// by a dialer whose peer runs SCTP over UDP (pion/sctp); a listener
	// learns the port from the peer's INIT.
	RemoteUDPEncapsPort uint16

	// PathMTU, when not zero, disables path-MTU discovery and fixes the
	// path MTU in octets (SCTP_PEER_ADDR_PARAMS). pion/sctp reads datagrams
	// into a fixed 8192-octet buffer, so a kernel peer of pion must not send
	// larger packets: use 1200 or so there.
	PathMTU int

	// adaptation overrides the indication sent (tests only); nil means
	// AdaptationIndicationDDP, a pointer to 0 sends none.
	adaptation *uint32

	// maxOutstanding overrides the RFC 5043 §10 window of DDP Segment
	// chunks per stream (tests only); 0 means contract.MaxOutstandingSegments.
	maxOutstanding uint16
}

const (
	kernelDefaultStreams      = 64
	kernelDefaultBuffer       = 4 << 20
	kernelDefaultMaxReceive   = 4 << 20
	kernelDefaultCloseTimeout = 5 * time.Second
	kernelDefaultResetTimeout = 5 * time.Second
	kernelKind                = "sctp-kernel"
)

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() (Config, error) {
	if c.Streams == 0 {
		c.Streams = kernelDefaultStreams
	}
	if c.Streams < 1 || c.Streams > 65535 {
		return c, errors.New("sctpllp: Config.Streams must be 1..65535")
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = kernelDefaultBuffer
	}
	if c.ReceiveBuffer == 0 {
		c.ReceiveBuffer = kernelDefaultBuffer
	}
	if c.MaxReceiveMessage == 0 {
		c.MaxReceiveMessage = kernelDefaultMaxReceive
	}
	if c.SendBuffer < 0 || c.ReceiveBuffer < 0 || c.MaxReceiveMessage < 0 || c.PathMTU < 0 {
		return c, errors.New("sctpllp: negative size in Config")
	}
	if c.PathMTU != 0 && c.PathMTU < 576 {
		return c, errors.New("sctpllp: Config.PathMTU below 576")
	}
	if c.PathMaxRetrans < 0 || c.PathMaxRetrans > 0xFFFF || c.AssocMaxRetrans < 0 || c.AssocMaxRetrans > 0xFFFF {
		return c, errors.New("sctpllp: Config.PathMaxRetrans and AssocMaxRetrans must be 0..65535")
	}
	for _, d := range []time.Duration{c.RTOInitial, c.RTOMin, c.RTOMax, c.HeartbeatInterval} {
		if d < 0 || (d > 0 && d < time.Millisecond) || d > 1<<31*time.Millisecond {
			return c, errors.New("sctpllp: Config RTO and heartbeat times must be 0 or 1 ms..24 days")
		}
	}
	if c.RTOMin != 0 && c.RTOMax != 0 && c.RTOMin > c.RTOMax {
		return c, errors.New("sctpllp: Config.RTOMin above RTOMax")
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = kernelDefaultCloseTimeout
	}
	if c.ResetTimeout == 0 {
		c.ResetTimeout = kernelDefaultResetTimeout
	}
	return c, nil
}

// outstandingLimit is the RFC 5043 §10 window per stream.
func (c Config) outstandingLimit() uint16 {
	if c.maxOutstanding != 0 {
		return c.maxOutstanding
	}
	return contract.MaxOutstandingSegments
}

// adaptationIndication is the Adaptation Layer Indication to send.
func (c Config) adaptationIndication() uint32 {
	if c.adaptation != nil {
		return *c.adaptation
	}
	return backend.AdaptationIndicationDDP
}
