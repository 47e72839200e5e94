package sctpllp

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctp/wire"
)

// The passive side of SCTP over UDP answers INITs without keeping any
// state (RFC 9260 §5.1.3): the UDP demultiplexer (udpmux.go) validates
// the packet (CRC32c, an INIT alone, RFC 9260 §3.3.2 field rules, the
// DDP Adaptation Layer Indication of RFC 5043 §5.1) and sends an INIT ACK
// whose State Cookie, signed with an HMAC by sctp.CookieSigner, carries
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
	// DefaultMaxAssociations and DefaultMaxAssociationsPerAddress are
	// PionConfig.MaxAssociations' and MaxAssociationsPerAddress' defaults.
	DefaultMaxAssociations           = 1024
	DefaultMaxAssociationsPerAddress = 64
	// DefaultInitAckRate is the INIT ACKs and out-of-the-blue answers a
	// listener sends per second at most (PionConfig.InitAckRate).
	DefaultInitAckRate = 10000
	// initAckBurst is the token bucket's depth.
	initAckBurst = 1000
)

// handshakeStats count what the stateless handshake did.
type handshakeStats struct {
	initAcks, rateLimited, badPackets, badInits, refusedALI atomic.Uint64
	cookiesOK, cookiesBad, backlogFull, foreignTag, ootb    atomic.Uint64
	refusedFull                                             atomic.Uint64
}

// HandshakeStats are a listener's counters of unauthenticated traffic.
type HandshakeStats struct {
	// InitAcks counts the INIT ACKs sent (each a State Cookie, no state).
	InitAcks uint64
	// RateLimited counts INITs and out-of-the-blue packets left
	// unanswered because PionConfig.InitAckRate was exceeded.
	RateLimited uint64
	// BadPackets counts datagrams from unknown addresses that are not SCTP
	// packets with a good CRC32c; BadInits INITs that break RFC 9260
	// §3.3.2 (bundled, a nonzero tag, zero streams, a small window);
	// RefusedALI INITs without the DDP Adaptation Layer Indication
	// (answered with an ABORT, RFC 5043 §5.1).
	BadPackets, BadInits, RefusedALI uint64
	// CookiesOK counts valid COOKIE ECHOs (associations made); CookiesBad
	// those whose cookie did not verify (MAC, age, address, tags, ports);
	// BacklogFull valid ones dropped because the accept backlog was full
	// (the peer retransmits).
	CookiesOK, CookiesBad, BacklogFull uint64
	// RefusedFull counts valid COOKIE ECHOs answered with an ABORT because
	// the listener holds PionConfig.MaxAssociations, or the peer's address
	// MaxAssociationsPerAddress.
	RefusedFull uint64
	// ForeignTag counts packets dropped because their Verification Tag is
	// not the association's (RFC 9260 §8.5); OutOfTheBlue packets from
	// unknown addresses that are neither INIT nor COOKIE ECHO (§8.4).
	ForeignTag, OutOfTheBlue uint64
}

func (s *handshakeStats) snapshot() HandshakeStats {
	return HandshakeStats{InitAcks: s.initAcks.Load(), RateLimited: s.rateLimited.Load(),
		BadPackets: s.badPackets.Load(), BadInits: s.badInits.Load(), RefusedALI: s.refusedALI.Load(),
		CookiesOK: s.cookiesOK.Load(), CookiesBad: s.cookiesBad.Load(), BacklogFull: s.backlogFull.Load(),
		ForeignTag: s.foreignTag.Load(), OutOfTheBlue: s.ootb.Load(), RefusedFull: s.refusedFull.Load()}
}

// tokenBucket limits the answers to unauthenticated packets.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate int) *tokenBucket {
	return &tokenBucket{rate: float64(rate), burst: initAckBurst, tokens: initAckBurst}
}

func (b *tokenBucket) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// snapInit is what a valid COOKIE ECHO established: the two INIT chunks
// pion's SNAP option takes, and what the demultiplexer needs to check and
// rewrite the association's packets.
type snapInit struct {
	cookie        sctp.Cookie
	local, remote []byte // INIT chunks: ours (from the INIT ACK) and the peer's
}

// handshaker answers a listener's unauthenticated packets; it runs on the
// demultiplexer's read goroutine only (its scratch buffers are unshared).
type handshaker struct {
	signer       *sctp.CookieSigner
	limit        *tokenBucket
	arwnd        uint32
	adaptation   uint32
	allowMissing bool
	maxAssocs    int
	maxPerIP     int
	stats        handshakeStats
	out          []byte
	ck           []byte
}

func newHandshaker(cfg PionConfig) *handshaker {
	ad := AdaptationIndicationDDP
	if cfg.adaptation != nil {
		ad = *cfg.adaptation
	}
	rate := cfg.InitAckRate
	if rate <= 0 {
		rate = DefaultInitAckRate
	}
	maxA, maxIP := cfg.MaxAssociations, cfg.MaxAssociationsPerAddress
	if maxA <= 0 {
		maxA = DefaultMaxAssociations
	}
	if maxIP <= 0 {
		maxIP = DefaultMaxAssociationsPerAddress
	}
	return &handshaker{signer: sctp.NewCookieSigner(0, nil), limit: newTokenBucket(rate), maxAssocs: maxA, maxPerIP: maxIP,
		arwnd: max(cfg.ReceiveBuffer, wire.MinARwnd), adaptation: ad, allowMissing: cfg.AllowMissingAdaptation,
		out: make([]byte, 0, 512), ck: make([]byte, 0, sctp.CookieLen)}
}

func randNonzero() uint32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		if v := binary.BigEndian.Uint32(b[:]); v != 0 {
			return v
		}
	}
}

// unknown handles a packet from an address with no conn. It returns the
// association a valid COOKIE ECHO establishes, and the chunks bundled
// after the COOKIE ECHO (RFC 9260 §5.1 allows DATA there), or nil.
func (h *handshaker) unknown(b []byte, from netip.AddrPort, send func([]byte)) (*snapInit, []byte) {
	pkt, err := wire.ParsePacket(b)
	if err != nil {
		h.stats.badPackets.Add(1)
		return nil, nil
	}
	it := pkt.Chunks()
	c, ok := it.Next()
	if !ok {
		h.stats.badPackets.Add(1)
		return nil, nil
	}
	switch c.Type {
	case wire.ChunkInit:
		h.init(pkt.Header, c, len(it.Rest()) == 0, from, send)
		return nil, nil
	case wire.ChunkCookieEcho:
		return h.cookieEcho(pkt.Header, c, from, send), it.Rest()
	}
	h.stats.ootb.Add(1)
	h.outOfTheBlue(pkt.Header, c, send)
	return nil, nil
}

// init answers a valid INIT with an INIT ACK and its State Cookie (RFC
// 9260 §5.1, §5.1.3).
func (h *handshaker) init(hdr wire.Header, c wire.Chunk, alone bool, from netip.AddrPort, send func([]byte)) {
	in, err := wire.ParseInit(c)
	if err != nil || !alone || hdr.VerificationTag != 0 {
		// §3.3.2: bundled, or a nonzero tag, zero tag, streams or window:
		// discarded (an ABORT "SHOULD" follow for the last two; a flood
		// of them gets none).
		h.stats.badInits.Add(1)
		return
	}
	now := time.Now()
	if !h.allowMissing && (!in.Params.HasAdaptation || in.Params.Adaptation != AdaptationIndicationDDP) {
		h.stats.refusedALI.Add(1)
		if h.limit.allow(now) {
			// RFC 5043 §5.1, §11.1: not a DDP peer. The ABORT carries the
			// INIT's tag (RFC 9260 §8.4 rule 3 does not apply: we answer).
			h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: hdr.DstPort, DstPort: hdr.SrcPort, VerificationTag: in.InitiateTag})
			h.out = (&wire.Abort{}).Append(h.out)
			wire.SetChecksum(h.out)
			send(h.out)
		}
		return
	}
	if !h.limit.allow(now) {
		h.stats.rateLimited.Add(1)
		return
	}
	ck := sctp.Cookie{
		LocalVerificationTag: randNonzero(), LocalInitialTSN: randNonzero(),
		PeerVerificationTag: in.InitiateTag, PeerInitialTSN: in.InitialTSN, PeerARwnd: in.ARwnd,
		OutboundStreams: in.InboundStreams, InboundStreams: in.OutboundStreams,
		LocalPort: hdr.DstPort, PeerPort: hdr.SrcPort, PeerAddr: from,
		PeerAdaptation: in.Params.Adaptation, HasPeerAdaptation: in.Params.HasAdaptation,
		PeerReconfig: in.Params.HasExtension(wire.ChunkReconfig),
	}
	h.ck = h.signer.Sign(h.ck[:0], &ck)
	ack := wire.Init{Ack: true, InitiateTag: ck.LocalVerificationTag, ARwnd: h.arwnd,
		OutboundStreams: 0xFFFF, InboundStreams: 0xFFFF, InitialTSN: ck.LocalInitialTSN}
	ack.Params.StateCookie = h.ck
	ack.Params.Extensions = pionExtensions
	ack.Params.ForwardTSN = true
	ack.Params.Adaptation, ack.Params.HasAdaptation = h.adaptation, true
	if in.Params.Report {
		ack.Params.EchoUnrecognized = in.Params.Raw
	}
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: hdr.DstPort, DstPort: hdr.SrcPort, VerificationTag: in.InitiateTag})
	h.out = ack.Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
	h.stats.initAcks.Add(1)
}

// errCookieTags: a verified cookie whose packet carries other tags or
// ports than the cookie (RFC 9260 §5.1.5 step 3).
var errCookieTags = errors.New("sctpllp: COOKIE ECHO tags or ports do not match its cookie")

// verifyCookie checks a COOKIE ECHO chunk and its packet's header.
func (h *handshaker) verifyCookie(hdr wire.Header, c wire.Chunk, from netip.AddrPort) (sctp.Cookie, error) {
	ce, err := wire.ParseCookieEcho(c)
	if err != nil {
		return sctp.Cookie{}, err
	}
	ck, err := h.signer.VerifyFrom(ce.Cookie, time.Now(), from)
	if err != nil {
		return ck, err
	}
	if hdr.VerificationTag != ck.LocalVerificationTag || hdr.SrcPort != ck.PeerPort || hdr.DstPort != ck.LocalPort {
		return ck, errCookieTags
	}
	return ck, nil
}

// cookieEcho turns a valid COOKIE ECHO into the association's two INITs
// and answers it with a COOKIE ACK (RFC 9260 §5.1.5, §5.1.6).
func (h *handshaker) cookieEcho(hdr wire.Header, c wire.Chunk, from netip.AddrPort, send func([]byte)) *snapInit {
	ck, err := h.verifyCookie(hdr, c, from)
	if err != nil {
		h.stats.cookiesBad.Add(1)
		return nil
	}
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
func (h *handshaker) refuseAssociation(s *snapInit, send func([]byte)) {
	h.stats.refusedFull.Add(1)
	if !h.limit.allow(time.Now()) {
		h.stats.rateLimited.Add(1)
		return
	}
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: s.cookie.LocalPort, DstPort: s.cookie.PeerPort,
		VerificationTag: s.cookie.PeerVerificationTag})
	h.out = (&wire.Abort{}).Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// sendCookieAck answers a COOKIE ECHO of the association s.
func (h *handshaker) sendCookieAck(s *snapInit, send func([]byte)) {
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: s.cookie.LocalPort, DstPort: s.cookie.PeerPort,
		VerificationTag: s.cookie.PeerVerificationTag})
	h.out = wire.CookieAck{}.Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// outOfTheBlue answers a packet for no association (RFC 9260 §8.4),
// rate-limited: an ABORT, COOKIE ACK, SHUTDOWN COMPLETE or ERROR is
// dropped (rules 2, 6, 7); a SHUTDOWN ACK gets a SHUTDOWN COMPLETE with
// the T bit (rule 5); anything else an ABORT with the T bit (rule 8).
func (h *handshaker) outOfTheBlue(hdr wire.Header, c wire.Chunk, send func([]byte)) {
	switch c.Type {
	case wire.ChunkAbort, wire.ChunkCookieAck, wire.ChunkShutdownComplete, wire.ChunkError:
		return
	}
	if !h.limit.allow(time.Now()) {
		h.stats.rateLimited.Add(1)
		return
	}
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: hdr.DstPort, DstPort: hdr.SrcPort, VerificationTag: hdr.VerificationTag})
	if c.Type == wire.ChunkShutdownAck {
		h.out = wire.ShutdownComplete{T: true}.Append(h.out)
	} else {
		h.out = (&wire.Abort{T: true}).Append(h.out)
	}
	wire.SetChecksum(h.out)
	send(h.out)
}

// tagOK reports whether a packet of the association s carries its
// Verification Tag (RFC 9260 §8.5), or is one of the §8.5.1 exceptions: an
// ABORT or SHUTDOWN COMPLETE with the T bit carries the peer's tag.
func tagOK(b []byte, s *snapInit) bool {
	if len(b) < wire.HeaderLen+4 {
		return false
	}
	tag := binary.BigEndian.Uint32(b[4:8])
	if tag == s.cookie.LocalVerificationTag {
		return true
	}
	typ, flags := wire.ChunkType(b[wire.HeaderLen]), b[wire.HeaderLen+1]
	return (typ == wire.ChunkAbort || typ == wire.ChunkShutdownComplete) && flags&wire.FlagT != 0 &&
		tag == s.cookie.PeerVerificationTag
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
