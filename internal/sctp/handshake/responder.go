package handshake

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The passive side of an association start keeps no state before the peer
// proves it can receive (RFC 9260 §5.1.3): a Responder answers a valid
// INIT with an INIT ACK whose State Cookie, signed by a CookieSigner,
// carries everything the association needs, and hands back the verified
// Cookie of a valid COOKIE ECHO. An INIT flood from any number of
// (spoofed) addresses costs one INIT ACK each, rate-limited, and no
// memory. Both the project's own stack (Listener) and the pion backend of
// sctpllp run their listeners' unauthenticated traffic through it.

// Defaults of ResponderConfig.
const (
	// DefaultInitAckRate is the INIT ACKs and out-of-the-blue answers a
	// Responder sends per second at most.
	DefaultInitAckRate = 10000
	// initAckBurst is the token bucket's depth.
	initAckBurst = 1000
)

// ResponderConfig sets up a Responder.
type ResponderConfig struct {
	// ARwnd is the a_rwnd of our INIT ACK; at least wire.MinARwnd.
	ARwnd uint32
	// OutboundStreams and InboundStreams are the OS and MIS of our INIT
	// ACK; zero means 65535.
	OutboundStreams, InboundStreams uint16
	// Extensions lists the chunk types of our Supported Extensions
	// parameter (RFC 5061 §4.2.7); ForwardTSN adds the Forward-TSN-Supported
	// parameter (RFC 3758).
	Extensions []byte
	ForwardTSN bool
	// Adaptation is the Adaptation Layer Indication of our INIT ACK (RFC
	// 5061 §4.2.6); RFC 5043 §5.1 uses wire.AdaptationDDP.
	Adaptation uint32
	// NoAdaptation sends no Adaptation Layer Indication at all.
	NoAdaptation bool
	// ZeroChecksum announces Zero Checksum Acceptable for SCTP over DTLS
	// in the INIT ACK (RFC 9653 §4, wire.EDMIDDTLS): only where the
	// packets travel inside DTLS records.
	ZeroChecksum bool
	// AllowMissingAdaptation accepts an INIT without the DDP indication;
	// otherwise such an INIT gets an ABORT (RFC 5043 §5.1, §11.1).
	AllowMissingAdaptation bool
	// InitAckRate bounds the answers to unauthenticated packets per
	// second; zero means DefaultInitAckRate.
	InitAckRate int
	// CookieLifespan is Valid.Cookie.Life; zero means
	// DefaultCookieLifespan.
	CookieLifespan time.Duration
	// Addrs are the addresses our INIT ACK lists (RFC 9260 §5.1.2), at
	// most wire.MaxInitAddrs; none by default (RFC 6951 §5.5).
	Addrs []netip.Addr
}

// handshakeCounters count what a Responder and its listener did.
type handshakeCounters struct {
	initAcks, rateLimited, badPackets, badInits, refusedALI atomic.Uint64
	cookiesOK, cookiesBad, backlogFull, foreignTag, ootb    atomic.Uint64
	staleCookies                                            atomic.Uint64
	refusedFull                                             atomic.Uint64
}

// Stats are a listener's counters of unauthenticated traffic.
type Stats struct {
	// InitAcks counts the INIT ACKs sent (each a State Cookie, no state).
	InitAcks uint64
	// RateLimited counts INITs and out-of-the-blue packets left
	// unanswered because the answer rate was exceeded.
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
	// the listener holds its maximum of associations, in all or from the
	// peer's address.
	RefusedFull uint64
	// ForeignTag counts packets dropped because their Verification Tag is
	// not the association's (RFC 9260 §8.5); OutOfTheBlue packets from
	// unknown addresses that are neither INIT nor COOKIE ECHO (§8.4).
	ForeignTag, OutOfTheBlue uint64
	// StaleCookies counts the Stale Cookie ERRORs sent (RFC 9260 §5.1.5
	// step 3; those COOKIE ECHOs count in CookiesBad too).
	StaleCookies uint64
}

// TokenBucket limits the answers to unauthenticated packets.
type TokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewTokenBucket allows rate answers a second, initAckBurst at once.
func NewTokenBucket(rate int) *TokenBucket { return NewTokenBucketDepth(rate, initAckBurst) }

// NewTokenBucketDepth allows rate answers a second, depth at once.
func NewTokenBucketDepth(rate, depth int) *TokenBucket {
	return &TokenBucket{rate: float64(rate), burst: float64(depth), tokens: float64(depth)}
}

func (b *TokenBucket) Allow(now time.Time) bool {
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

// Responder answers a listener's packets from unknown addresses without
// keeping state (RFC 9260 §5.1.3, §8.4). Its methods are meant for one
// goroutine, the listener's read loop (their scratch buffers are
// unshared); Stats and the Count methods are safe for concurrent use.
type Responder struct {
	cfg    ResponderConfig
	signer *CookieSigner
	limit  *TokenBucket
	stats  handshakeCounters
	out    []byte
	ck     []byte
}

// NewResponder returns a Responder with a new CookieSigner.
func NewResponder(cfg ResponderConfig) *Responder {
	if cfg.InitAckRate <= 0 {
		cfg.InitAckRate = DefaultInitAckRate
	}
	cfg.ARwnd = max(cfg.ARwnd, wire.MinARwnd)
	if cfg.OutboundStreams == 0 {
		cfg.OutboundStreams = 0xFFFF
	}
	if cfg.InboundStreams == 0 {
		cfg.InboundStreams = 0xFFFF
	}
	return &Responder{cfg: cfg, signer: NewCookieSigner(0, nil), limit: NewTokenBucket(cfg.InitAckRate),
		out: make([]byte, 0, 512), ck: make([]byte, 0, MaxCookieLen)}
}

// Stats returns the counters.
func (h *Responder) Stats() Stats {
	s := &h.stats
	return Stats{InitAcks: s.initAcks.Load(), RateLimited: s.rateLimited.Load(),
		BadPackets: s.badPackets.Load(), BadInits: s.badInits.Load(), RefusedALI: s.refusedALI.Load(),
		CookiesOK: s.cookiesOK.Load(), CookiesBad: s.cookiesBad.Load(), BacklogFull: s.backlogFull.Load(),
		ForeignTag: s.foreignTag.Load(), OutOfTheBlue: s.ootb.Load(), RefusedFull: s.refusedFull.Load(),
		StaleCookies: s.staleCookies.Load()}
}

// CountCookieOK, CountBacklogFull and CountForeignTag count what the
// listener did with a verified cookie or a packet of a known association.
func (h *Responder) CountCookieOK() { h.stats.cookiesOK.Add(1) }

// CountBacklogFull counts a valid COOKIE ECHO dropped for a full backlog.
func (h *Responder) CountBacklogFull() { h.stats.backlogFull.Add(1) }

// CountForeignTag counts a packet dropped for its Verification Tag.
func (h *Responder) CountForeignTag() { h.stats.foreignTag.Add(1) }

// RandomTag returns a random nonzero 32-bit value, for Initiate Tags and
// Initial TSNs (RFC 9260 §5.3.1).
func RandomTag() uint32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		if v := binary.BigEndian.Uint32(b[:]); v != 0 {
			return v
		}
	}
}

// Unknown handles a packet from an address with no association. An INIT
// is answered (Init), a COOKIE ECHO verified: its Cookie is returned with
// ok true, with the chunks bundled after it (RFC 9260 §5.1 allows DATA
// there); anything else gets the answer of §8.4. send transmits a packet
// to the sender of b; the slice is reused after it returns.
func (h *Responder) Unknown(b []byte, from netip.AddrPort, send func([]byte)) (ck Cookie, rest []byte, ok bool) {
	pkt, err := wire.ParsePacket(b)
	if err != nil {
		h.stats.badPackets.Add(1)
		return Cookie{}, nil, false
	}
	it := pkt.Chunks()
	c, more := it.Next()
	if !more {
		h.stats.badPackets.Add(1)
		return Cookie{}, nil, false
	}
	switch c.Type {
	case wire.ChunkInit:
		h.init(pkt.Header, c, len(it.Rest()) == 0, from, send)
		return Cookie{}, nil, false
	case wire.ChunkCookieEcho:
		ck, err := h.VerifyCookieEcho(pkt.Header, c, from)
		if err != nil {
			h.stats.cookiesBad.Add(1)
			var stale *staleCookieError
			if errors.As(err, &stale) && pkt.Header.VerificationTag == ck.LocalVerificationTag {
				h.staleCookie(&ck, stale, send)
			}
			return Cookie{}, nil, false
		}
		return ck, it.Rest(), true
	}
	h.stats.ootb.Add(1)
	h.OutOfTheBlue(pkt.Header, c, send)
	return Cookie{}, nil, false
}

// init answers a valid INIT with an INIT ACK and its State Cookie (RFC
// 9260 §5.1, §5.1.3).
func (h *Responder) init(hdr wire.Header, c wire.Chunk, alone bool, from netip.AddrPort, send func([]byte)) {
	in, err := wire.ParseInit(c)
	if err != nil || !alone || hdr.VerificationTag != 0 {
		// §3.3.2: bundled, or a nonzero tag, zero tag, streams or window:
		// discarded (an ABORT "SHOULD" follow for the last two; a flood
		// of them gets none).
		h.stats.badInits.Add(1)
		return
	}
	now := time.Now()
	if in.Params.HostName != nil {
		// RFC 9260 §3.3.2.1: a Host Name Address is not resolved; the
		// INIT is refused with an Unresolvable Address cause naming it.
		h.stats.badInits.Add(1)
		h.abortInit(hdr, &in, wire.AppendCauseUnresolvableAddress(nil,
			wire.Param{Type: wire.ParamHostNameAddress, Value: in.Params.HostName}), now, send)
		return
	}
	if !h.cfg.AllowMissingAdaptation && (!in.Params.HasAdaptation || in.Params.Adaptation != wire.AdaptationDDP) {
		// RFC 5043 §5.1, §11.1: not a DDP peer. The ABORT says why
		// (RFC 9260 §3.3.10.12: the upper layer's reason).
		h.stats.refusedALI.Add(1)
		h.abortInit(hdr, &in, wire.AppendCause(nil, wire.CauseUserInitiatedAbort, []byte(noDDPIndication)), now, send)
		return
	}
	if !h.limit.Allow(now) {
		h.stats.rateLimited.Add(1)
		return
	}
	life := h.cfg.CookieLifespan
	if p := in.Params.CookiePreservative; p > 0 {
		// §5.2.6: a peer whose cookie went stale asks for more time; it
		// gets it, up to one more lifespan.
		life += min(time.Duration(p)*time.Millisecond, h.cfg.CookieLifespan)
	}
	ck := Cookie{
		Lifespan:             life,
		LocalVerificationTag: RandomTag(), LocalInitialTSN: RandomTag(),
		PeerVerificationTag: in.InitiateTag, PeerInitialTSN: in.InitialTSN, PeerARwnd: in.ARwnd,
		OutboundStreams: min(in.InboundStreams, h.cfg.OutboundStreams),
		InboundStreams:  min(in.OutboundStreams, h.cfg.InboundStreams),
		LocalPort:       hdr.DstPort, PeerPort: hdr.SrcPort, PeerAddr: from,
		PeerAdaptation: in.Params.Adaptation, HasPeerAdaptation: in.Params.HasAdaptation,
		PeerReconfig:     in.Params.HasExtension(wire.ChunkReconfig),
		PeerZeroChecksum: in.Params.ZeroChecksumEDMID == wire.EDMIDDTLS,
	}
	// §5.1.2, §5.4: the INIT's addresses travel in the cookie, to become
	// the association's unconfirmed paths.
	ck.NumPeerAddrs = copy(ck.PeerAddrs[:], in.Params.Addrs[:min(max(in.Params.NumAddrs, 0), wire.MaxInitAddrs)])
	h.ck = h.signer.Sign(h.ck[:0], &ck)
	ack := wire.Init{Ack: true, InitiateTag: ck.LocalVerificationTag, ARwnd: h.cfg.ARwnd,
		OutboundStreams: h.cfg.OutboundStreams, InboundStreams: h.cfg.InboundStreams, InitialTSN: ck.LocalInitialTSN}
	ack.Params.StateCookie = h.ck
	ack.Params.NumAddrs = copy(ack.Params.Addrs[:], h.cfg.Addrs)
	ack.Params.Extensions = h.cfg.Extensions
	ack.Params.ForwardTSN = h.cfg.ForwardTSN
	ack.Params.Adaptation, ack.Params.HasAdaptation = h.cfg.Adaptation, !h.cfg.NoAdaptation
	if h.cfg.ZeroChecksum {
		ack.Params.ZeroChecksumEDMID = wire.EDMIDDTLS
	}
	if in.Params.Report {
		ack.Params.EchoUnrecognized = in.Params.Raw
	}
	ack.Params.UnrecognizedForwardTSN = in.Params.ForwardTSN && !h.cfg.ForwardTSN
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: hdr.DstPort, DstPort: hdr.SrcPort, VerificationTag: in.InitiateTag})
	h.out = ack.Append(h.out)
	wire.SetChecksum(h.out)
	// Counted before it leaves, as every answer here is: a peer that has
	// the INIT ACK finds it counted.
	h.stats.initAcks.Add(1)
	send(h.out)
}

// noDDPIndication is the reason an INIT without the DDP Adaptation Layer
// Indication is refused with.
const noDDPIndication = "no DDP Adaptation Layer Indication (RFC 5043 §5.1)"

// abortInit refuses an INIT with an ABORT carrying causes and the INIT's
// Initiate Tag (we answer it: §8.4 rule 3 does not apply), rate-limited.
func (h *Responder) abortInit(hdr wire.Header, in *wire.Init, causes []byte, now time.Time, send func([]byte)) {
	if !h.limit.Allow(now) {
		h.stats.rateLimited.Add(1)
		return
	}
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: hdr.DstPort, DstPort: hdr.SrcPort, VerificationTag: in.InitiateTag})
	h.out = (&wire.Abort{Causes: causes}).Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// staleCookie answers a COOKIE ECHO whose cookie verified but expired
// with an ERROR carrying a Stale Cookie cause (RFC 9260 §5.1.5 step 3),
// to the address the cookie is bound to, with the peer's tag from the
// cookie; rate-limited as every answer here.
func (h *Responder) staleCookie(ck *Cookie, stale *staleCookieError, send func([]byte)) {
	if !h.limit.Allow(time.Now()) {
		h.stats.rateLimited.Add(1)
		return
	}
	h.stats.staleCookies.Add(1)
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: ck.LocalPort, DstPort: ck.PeerPort, VerificationTag: ck.PeerVerificationTag})
	h.out = (&wire.ErrorChunk{Causes: wire.AppendCauseStaleCookie(nil, stale.MeasureOfStaleness())}).Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// ErrCookieTags reports a verified cookie whose packet carries other tags
// or ports than the cookie (RFC 9260 §5.1.5 step 3).
var ErrCookieTags = errors.New("sctp: COOKIE ECHO tags or ports do not match its cookie")

// VerifyCookieEcho checks a COOKIE ECHO chunk and its packet's header
// against the cookie it carries (RFC 9260 §5.1.5).
func (h *Responder) VerifyCookieEcho(hdr wire.Header, c wire.Chunk, from netip.AddrPort) (Cookie, error) {
	return h.signer.VerifyCookieEcho(hdr, c, from)
}

// VerifyCookieEcho checks a COOKIE ECHO chunk received from address from,
// with its packet's common header hdr, against the cookie it carries
// (RFC 9260 §5.1.5): the signature, the lifetime (step 3, a
// staleCookieError), the address the cookie is bound to, and the packet's
// Verification Tag and ports against the cookie's (errCookieTags).
func (s *CookieSigner) VerifyCookieEcho(hdr wire.Header, c wire.Chunk, from netip.AddrPort) (Cookie, error) {
	ce, err := wire.ParseCookieEcho(c)
	if err != nil {
		return Cookie{}, err
	}
	ck, err := s.VerifyFrom(ce.Cookie, time.Now(), from)
	if err != nil {
		return ck, err
	}
	if hdr.VerificationTag != ck.LocalVerificationTag || hdr.SrcPort != ck.PeerPort || hdr.DstPort != ck.LocalPort {
		return ck, ErrCookieTags
	}
	return ck, nil
}

// Refuse answers a valid COOKIE ECHO the listener has no room for with an
// ABORT (rate-limited), and counts it.
func (h *Responder) Refuse(ck *Cookie, send func([]byte)) {
	h.stats.refusedFull.Add(1)
	if !h.limit.Allow(time.Now()) {
		h.stats.rateLimited.Add(1)
		return
	}
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: ck.LocalPort, DstPort: ck.PeerPort,
		VerificationTag: ck.PeerVerificationTag})
	h.out = (&wire.Abort{}).Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// SendCookieAck answers a COOKIE ECHO of the association ck describes
// (RFC 9260 §5.1 step D).
func (h *Responder) SendCookieAck(ck *Cookie, send func([]byte)) {
	h.out = wire.AppendHeader(h.out[:0], wire.Header{SrcPort: ck.LocalPort, DstPort: ck.PeerPort,
		VerificationTag: ck.PeerVerificationTag})
	h.out = wire.CookieAck{}.Append(h.out)
	wire.SetChecksum(h.out)
	send(h.out)
}

// OutOfTheBlue answers a packet for no association (RFC 9260 §8.4),
// rate-limited: an ABORT, COOKIE ACK, SHUTDOWN COMPLETE or ERROR is
// dropped (rules 2, 6, 7); a SHUTDOWN ACK gets a SHUTDOWN COMPLETE with
// the T bit (rule 5); anything else an ABORT with the T bit (rule 8).
func (h *Responder) OutOfTheBlue(hdr wire.Header, c wire.Chunk, send func([]byte)) {
	switch c.Type {
	case wire.ChunkAbort, wire.ChunkCookieAck, wire.ChunkShutdownComplete, wire.ChunkError:
		return
	}
	if !h.limit.Allow(time.Now()) {
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

// TagOK reports whether a packet of the association whose tags are local
// (ours, carried by the peer's packets) and peer carries the right
// Verification Tag (RFC 9260 §8.5), or is one of the §8.5.1 exceptions:
// an ABORT or SHUTDOWN COMPLETE with the T bit carries the peer's tag,
// and is discarded with any other.
func TagOK(b []byte, local, peer uint32) bool {
	if len(b) < wire.HeaderLen+4 {
		return false
	}
	tag := binary.BigEndian.Uint32(b[4:8])
	typ, flags := wire.ChunkType(b[wire.HeaderLen]), b[wire.HeaderLen+1]
	if (typ == wire.ChunkAbort || typ == wire.ChunkShutdownComplete) && flags&wire.FlagT != 0 {
		return tag == peer // §8.5.1 B, C: never our own tag with the T bit
	}
	return tag == local
}
