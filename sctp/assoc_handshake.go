package sctp

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctp/wire"
)

// handshakeError: the association start failed.
type handshakeError struct {
	what    string
	retries int
	reason  string
}

func (e *handshakeError) Error() string {
	if e.reason != "" {
		return "sctp: association setup failed: " + e.reason
	}
	return fmt.Sprintf("sctp: association setup failed: %s unanswered after %d retransmissions (RFC 9260 §5.1.6)", e.what, e.retries)
}

func (e *handshakeError) Unwrap() error { return ErrHandshake }

// ourInit returns our INIT or INIT ACK fixed fields and parameters: equal
// stream counts (RFC 5043 §8), the DDP Adaptation Layer Indication (§5.1),
// RE-CONFIG among the supported extensions (answered, RFC 6525), no
// addresses (RFC 6951 §5.5).
func (a *Association) ourInit(ack bool) wire.Init {
	in := wire.Init{Ack: ack, InitiateTag: a.localTag, ARwnd: uint32(a.cfg.ReceiveBuffer),
		OutboundStreams: uint16(a.cfg.Streams), InboundStreams: uint16(a.cfg.Streams), InitialTSN: a.localInitialTSN}
	in.Params.Extensions = ourExtensions
	if !a.cfg.NoAdaptation {
		in.Params.Adaptation, in.Params.HasAdaptation = a.cfg.Adaptation, true
	}
	return in
}

// ourExtensions: RE-CONFIG (RFC 6525).
var ourExtensions = []byte{byte(wire.ChunkReconfig)}

// sendInit sends our INIT (RFC 9260 §5.1 step A) and starts T1-init.
func (a *Association) sendInit(now time.Time) {
	if a.initChunk == nil {
		in := a.ourInit(false)
		a.initChunk = in.Append(nil)
	}
	p := wire.AppendHeader(a.pkt[:0], wire.Header{SrcPort: a.localPort, DstPort: a.peerPort})
	p = append(p, a.initChunk...)
	wire.SetChecksum(p)
	a.sendPacket(p)
	a.pkt = p[:wire.HeaderLen]
	a.state = StateCookieWait
	a.timers.SetAfter(TimerT1Init, now, a.rto.RTO())
	a.arm(now)
}

// handleInitAck takes the INIT ACK in COOKIE-WAIT (RFC 9260 §5.1 step
// C); in any other state it is discarded (§5.2.3).
func (a *Association) handleInitAck(c wire.Chunk, now time.Time) {
	if a.state != StateCookieWait {
		return
	}
	in, err := wire.ParseInit(c)
	if err != nil || len(in.Params.StateCookie) == 0 {
		// §5.1: an INIT ACK without a cookie, or malformed, is an error
		// of the peer: the start fails.
		reason := "malformed INIT ACK"
		if err != nil {
			reason += ": " + err.Error()
		}
		a.peerTag = in.InitiateTag
		a.setHeader()
		a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte(reason)),
			&handshakeError{reason: reason})
		return
	}
	a.adoptPeer(in.InitiateTag, in.InitialTSN, in.ARwnd, int(in.OutboundStreams), int(in.InboundStreams),
		in.Params.Adaptation, in.Params.HasAdaptation, in.Params.HasExtension(wire.ChunkReconfig))
	a.cookie = append(a.cookie[:0], in.Params.StateCookie...)
	a.timers.Stop(TimerT1Init)
	a.initRetries = 0
	a.state = StateCookieEchoed
	a.sendCookieEcho(now)
}

// adoptPeer records the peer's INIT or INIT ACK and builds the TCB.
func (a *Association) adoptPeer(tag, initialTSN, arwnd uint32, peerOS, peerMIS int, adaptation uint32, hasAdaptation, reconfig bool) {
	a.peerTag = tag
	a.peerAdaptation, a.hasPeerAdaptation = adaptation, hasAdaptation
	a.peerReconfig = reconfig
	a.initTCB(initialTSN, arwnd, min(a.cfg.Streams, peerMIS), min(a.cfg.Streams, peerOS))
}

// sendCookieEcho sends the COOKIE ECHO (§5.1 step C) and starts T1-cookie.
func (a *Association) sendCookieEcho(now time.Time) {
	a.ctrl = (&wire.CookieEcho{Cookie: a.cookie}).Append(a.ctrl)
	a.timers.SetAfter(TimerT1Cookie, now, a.rto.RTO())
}

// handleCookieEcho takes a COOKIE ECHO on an existing association (RFC
// 9260 §5.2.4): one whose cookie verifies and names this association's
// tags is answered with a COOKIE ACK (case D: our COOKIE ACK was lost),
// and in COOKIE-WAIT or COOKIE-ECHOED (an INIT collision, case B or D) it
// establishes the association. Anything else is discarded.
func (a *Association) handleCookieEcho(c wire.Chunk, now time.Time) {
	if a.verifyCookie == nil {
		return
	}
	ck, err := a.verifyCookie(wire.Header{SrcPort: a.peerPort, DstPort: a.localPort, VerificationTag: a.localTag}, c, a.peerAddr)
	if err != nil || ck.LocalVerificationTag != a.localTag {
		return
	}
	switch a.state {
	case StateCookieWait, StateCookieEchoed:
		if a.oq == nil {
			a.adoptPeer(ck.PeerVerificationTag, ck.PeerInitialTSN, ck.PeerARwnd, int(ck.InboundStreams), int(ck.OutboundStreams),
				ck.PeerAdaptation, ck.HasPeerAdaptation, ck.PeerReconfig)
		} else if ck.PeerVerificationTag != a.peerTag {
			return
		}
		a.timers.Stop(TimerT1Init)
		a.timers.Stop(TimerT1Cookie)
		a.ctrl = wire.CookieAck{}.Append(a.ctrl)
		a.establish(now)
	default:
		if ck.PeerVerificationTag == a.peerTag {
			a.ctrl = wire.CookieAck{}.Append(a.ctrl)
		}
	}
}

// collisionInitAck answers an INIT received in COOKIE-WAIT or
// COOKIE-ECHOED (RFC 9260 §5.2.1): an INIT ACK with our own Initiate Tag
// and Initial TSN and a State Cookie of our own signing, so that either
// handshake completes the one association.
func (a *Association) collisionInitAck(in *wire.Init, now time.Time) {
	if a.signer == nil {
		a.signer = NewCookieSigner(0, nil)
		signer := a.signer
		a.verifyCookie = func(hdr wire.Header, c wire.Chunk, from netip.AddrPort) (Cookie, error) {
			ce, err := wire.ParseCookieEcho(c)
			if err != nil {
				return Cookie{}, err
			}
			return signer.Verify(ce.Cookie, time.Now())
		}
	}
	ck := Cookie{LocalVerificationTag: a.localTag, LocalInitialTSN: a.localInitialTSN,
		PeerVerificationTag: in.InitiateTag, PeerInitialTSN: in.InitialTSN, PeerARwnd: in.ARwnd,
		OutboundStreams: min(in.InboundStreams, uint16(a.cfg.Streams)), InboundStreams: min(in.OutboundStreams, uint16(a.cfg.Streams)),
		LocalPort: a.localPort, PeerPort: a.peerPort,
		PeerAdaptation: in.Params.Adaptation, HasPeerAdaptation: in.Params.HasAdaptation,
		PeerReconfig: in.Params.HasExtension(wire.ChunkReconfig)}
	ack := a.ourInit(true)
	ack.Params.StateCookie = a.signer.Sign(nil, &ck)
	p := wire.AppendHeader(a.pkt[:0], wire.Header{SrcPort: a.localPort, DstPort: a.peerPort, VerificationTag: in.InitiateTag})
	p = ack.Append(p)
	wire.SetChecksum(p)
	a.sendPacket(p)
	a.pkt = append(p[:0], a.hdr[:]...)
}
