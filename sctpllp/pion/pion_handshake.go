package pion

import (
	"encoding/binary"
	"net/netip"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// The passive side of SCTP over UDP answers INITs without keeping any
// state (RFC 9260 §5.1.3): the UDP demultiplexer (udpmux.go) validates
// the packet (CRC32c, an INIT alone, RFC 9260 §3.3.2 field rules, the
// DDP Adaptation Layer Indication of RFC 5043 §5.1) and sends an INIT ACK
// whose State Cookie, signed with an HMAC by handshake.CookieSigner, carries
// both ends' tags, TSNs, windows and ports. Nothing is allocated for the
// peer until it returns a valid COOKIE ECHO from the address the cookie
// names: only then is a conn made and a pion association started, from
// the two INITs the cookie describes (pion's SNAP option, which starts an
// association from out-of-band INIT chunks), and the demultiplexer sends
// the COOKIE ACK itself. An INIT flood from any number of (spoofed)
// addresses costs one INIT ACK each, rate-limited, and no memory.
//
// pion v1.11.3 checks no Verification Tag; the demultiplexer drops every
// packet of such an association that does not carry its tag (RFC 9260
// §8.5, with the T-bit exceptions of §8.5.1), and answers out-of-the-blue
// packets as §8.4 says, rate-limited. pion's SNAP association uses SCTP
// ports 5000/5000; when the peer's INIT used others, the conn rewrites the
// ports (and the CRC32c) of every packet in both directions.

// pionSNAPPort is the SCTP port pion uses on both ends of a SNAP
// association.
const pionSNAPPort = 5000

// pionExtensions are the chunk types pion supports, listed in our INIT ACK
// (RFC 5061 §4.2.7): RE-CONFIG (RFC 6525, stream reset) and FORWARD TSN
// (RFC 3758).
var pionExtensions = []byte{byte(wire.ChunkReconfig), byte(wire.ChunkForwardTSN)}

// Handshake defaults of the passive side.
const (
	// defaultMaxAssociations and defaultMaxAssociationsPerAddress are
	// Config.MaxAssociations' and MaxAssociationsPerAddress' defaults.
	defaultMaxAssociations           = 1024
	defaultMaxAssociationsPerAddress = 64
	// defaultInitAckRate is the INIT ACKs and out-of-the-blue answers a
	// listener sends per second at most (Config.InitAckRate).
	defaultInitAckRate = handshake.DefaultInitAckRate
)

// handshakeStats are a listener's counters of unauthenticated traffic
// (see handshake.Stats).
type handshakeStats = handshake.Stats

// snapInit is what a valid COOKIE ECHO established: the two INIT chunks
// pion's SNAP option takes, and what the demultiplexer needs to check and
// rewrite the association's packets.
type snapInit struct {
	cookie        handshake.Cookie
	local, remote []byte // INIT chunks: ours (from the INIT ACK) and the peer's
}

// handshaker answers a listener's unauthenticated packets (handshake.Responder)
// and turns a verified cookie into pion's SNAP INITs; it runs on the
// demultiplexer's read goroutine only.
type handshaker struct {
	*handshake.Responder
	arwnd     uint32
	maxAssocs int
	maxPerIP  int
}

func newHandshaker(cfg Config) *handshaker {
	ad := backend.AdaptationIndicationDDP
	if cfg.adaptation != nil {
		ad = *cfg.adaptation
	}
	maxA, maxIP := cfg.MaxAssociations, cfg.MaxAssociationsPerAddress
	if maxA <= 0 {
		maxA = defaultMaxAssociations
	}
	if maxIP <= 0 {
		maxIP = defaultMaxAssociationsPerAddress
	}
	arwnd := max(cfg.ReceiveBuffer, wire.MinARwnd)
	r := handshake.NewResponder(handshake.ResponderConfig{ARwnd: arwnd, Extensions: pionExtensions, ForwardTSN: true,
		Adaptation: ad, AllowMissingAdaptation: cfg.AllowMissingAdaptation, InitAckRate: cfg.InitAckRate})
	return &handshaker{Responder: r, arwnd: arwnd, maxAssocs: maxA, maxPerIP: maxIP}
}

// unknown handles a packet from an address with no conn. It returns the
// association a valid COOKIE ECHO establishes, and the chunks bundled
// after the COOKIE ECHO (RFC 9260 §5.1 allows DATA there), or nil.
func (h *handshaker) unknown(b []byte, from netip.AddrPort, send func([]byte)) (*snapInit, []byte) {
	ck, rest, ok := h.Unknown(b, from, send)
	if !ok {
		return nil, nil
	}
	return h.snap(ck), rest
}

// snap turns a verified cookie into the association's two INITs (RFC
// 9260 §5.1.5), for pion's SNAP option.
func (h *handshaker) snap(ck handshake.Cookie) *snapInit {
	local := wire.Init{InitiateTag: ck.LocalVerificationTag, ARwnd: h.arwnd, OutboundStreams: 0xFFFF,
		InboundStreams: 0xFFFF, InitialTSN: ck.LocalInitialTSN}
	local.Params.Extensions = pionExtensions
	local.Params.ForwardTSN = true
	remote := wire.Init{InitiateTag: ck.PeerVerificationTag, ARwnd: max(ck.PeerARwnd, wire.MinARwnd),
		OutboundStreams: max(ck.InboundStreams, 1), InboundStreams: max(ck.OutboundStreams, 1), InitialTSN: ck.PeerInitialTSN}
	if ck.PeerReconfig {
		remote.Params.Extensions = []byte{byte(wire.ChunkReconfig)}
	}
	return &snapInit{cookie: ck, local: local.Append(nil), remote: remote.Append(nil)}
}

// refuseAssociation answers a valid COOKIE ECHO the listener has no room
// for with an ABORT (rate-limited).
func (h *handshaker) refuseAssociation(s *snapInit, send func([]byte)) { h.Refuse(&s.cookie, send) }

// sendCookieAck answers a COOKIE ECHO of the association s.
func (h *handshaker) sendCookieAck(s *snapInit, send func([]byte)) { h.SendCookieAck(&s.cookie, send) }

// tagOK reports whether a packet of the association s carries its
// Verification Tag (RFC 9260 §8.5, §8.5.1).
func tagOK(b []byte, s *snapInit) bool {
	return handshake.TagOK(b, s.cookie.LocalVerificationTag, s.cookie.PeerVerificationTag)
}

// rewritePorts sets the SCTP ports of pkt and its CRC32c, when they differ.
func rewritePorts(pkt []byte, src, dst uint16) {
	if len(pkt) < wire.HeaderLen || (binary.BigEndian.Uint16(pkt) == src && binary.BigEndian.Uint16(pkt[2:]) == dst) {
		return
	}
	binary.BigEndian.PutUint16(pkt, src)
	binary.BigEndian.PutUint16(pkt[2:], dst)
	wire.SetChecksum(pkt)
}
