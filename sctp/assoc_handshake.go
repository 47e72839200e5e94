package sctp

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
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
	in := wire.Init{Ack: ack, InitiateTag: a.tcb.localTag, ARwnd: uint32(a.cfg.ReceiveBuffer),
		OutboundStreams: uint16(a.cfg.Streams), InboundStreams: uint16(a.cfg.Streams), InitialTSN: a.tcb.localInitialTSN}
	in.Params.Extensions = ourExtensions
	if !a.cfg.NoAdaptation {
		in.Params.Adaptation, in.Params.HasAdaptation = a.cfg.Adaptation, true
	}
	if a.cfg.ZeroChecksum {
		in.Params.ZeroChecksumEDMID = wire.EDMIDDTLS // RFC 9653 §4
	}
	if a.mh != nil && len(a.mh.locals) > 1 {
		in.Params.NumAddrs = copy(in.Params.Addrs[:], a.mh.locals) // §5.1.2, multihomed
	}
	return in
}

// ourExtensions: RE-CONFIG (RFC 6525).
var ourExtensions = []byte{byte(wire.ChunkReconfig)}

// sendInit sends our INIT (RFC 9260 §5.1 step A) and starts T1-init.
func (a *Association) sendInit(now time.Time) {
	if a.hs == nil {
		a.hs = &handshakeState{}
	}
	if a.hs.initChunk == nil {
		in := a.ourInit(false)
		a.hs.initChunk = in.Append(nil)
	}
	p := wire.AppendHeader(a.io.pkt[:0], wire.Header{SrcPort: a.tcb.localPort, DstPort: a.tcb.peerPort})
	p = append(p, a.hs.initChunk...)
	wire.SetChecksum(p)
	a.sendPacket(p)
	a.io.pkt = p[:wire.HeaderLen]
	a.state = stateCookieWait
	a.io.timers.SetAfter(timerT1Init, now, a.primaryPath().rto.RTO())
	a.arm(now)
}

// handleInitAck takes the INIT ACK in COOKIE-WAIT (RFC 9260 §5.1 step
// C); in any other state the state table discards it (§5.2.3).
func (a *Association) handleInitAck(c wire.Chunk, now time.Time) {
	in, err := wire.ParseInit(c)
	if err != nil || len(in.Params.StateCookie) == 0 {
		// §5.1: an INIT ACK without a cookie, or malformed, is an error
		// of the peer: the start fails.
		reason := "malformed INIT ACK"
		if err != nil {
			reason += ": " + err.Error()
		}
		a.tcb.peerTag = in.InitiateTag
		a.setHeader()
		a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte(reason)),
			&handshakeError{reason: reason})
		return
	}
	if in.Params.HostName != nil {
		// §3.3.2.1: a Host Name Address is not resolved: ABORT with an
		// Unresolvable Address cause.
		a.tcb.peerTag = in.InitiateTag
		a.setHeader()
		a.abortLocked(wire.AppendCauseUnresolvableAddress(nil, wire.Param{Type: wire.ParamHostNameAddress, Value: in.Params.HostName}),
			&handshakeError{reason: "the peer's INIT ACK names a Host Name Address (RFC 9260 §3.3.2.1)"})
		return
	}
	a.adoptPeer(in.InitiateTag, in.InitialTSN, in.ARwnd, int(in.OutboundStreams), int(in.InboundStreams),
		in.Params.Adaptation, in.Params.HasAdaptation, in.Params.HasExtension(wire.ChunkReconfig),
		in.Params.ZeroChecksumEDMID == wire.EDMIDDTLS)
	a.hs.cookie = append(a.hs.cookie[:0], in.Params.StateCookie...)
	if a.mh != nil {
		a.mhAddPeers(&in.Params, now)
	}
	a.io.timers.Stop(timerT1Init)
	a.hs.initRetries = 0
	a.state = stateCookieEchoed
	a.sendCookieEcho(now)
	if in.Params.Report {
		// §3.2.1: parameters we do not know whose type asks for a report
		// are reported in an ERROR bundled after the COOKIE ECHO (which
		// stays first in its packet).
		if causes := wire.AppendCauseUnrecognizedParams(nil, in.Params.Raw); len(causes) > 0 {
			a.ctrl = (&wire.ErrorChunk{Causes: causes}).Append(a.ctrl)
		}
	}
}

// adoptPeer records the peer's INIT or INIT ACK and builds the TCB;
// zero is whether the peer announced Zero Checksum Acceptable for DTLS.
func (a *Association) adoptPeer(tag, initialTSN, arwnd uint32, peerOS, peerMIS int, adaptation uint32, hasAdaptation, reconfig, zero bool) {
	a.tcb.peerTag = tag
	a.tcb.peerAdaptation, a.tcb.hasPeerAdaptation = adaptation, hasAdaptation
	a.tcb.peerReconfig = reconfig
	a.tcb.zeroTx = zero && a.cfg.ZeroChecksum
	a.initTCB(initialTSN, arwnd, min(a.cfg.Streams, peerMIS), min(a.cfg.Streams, peerOS))
}

// sendCookieEcho sends the COOKIE ECHO (§5.1 step C) and starts T1-cookie.
func (a *Association) sendCookieEcho(now time.Time) {
	a.ctrl = (&wire.CookieEcho{Cookie: a.hs.cookie}).Append(a.ctrl)
	a.io.timers.SetAfter(timerT1Cookie, now, a.primaryPath().rto.RTO())
}

// cookieEchoStarting takes a COOKIE ECHO in COOKIE-WAIT or COOKIE-ECHOED
// (RFC 9260 §5.2.4, an INIT collision): one whose cookie verifies and
// carries our tag establishes the association, answered with a COOKIE
// ACK: case D, or case B (another peer tag: the peer sent its INIT after
// answering ours), where the TCB is built again from the cookie (no DATA
// has gone yet: writable). Anything else is discarded.
func (a *Association) cookieEchoStarting(c wire.Chunk, now time.Time) {
	ck, ok := a.ownCookieEcho(c)
	if !ok {
		return
	}
	if a.oq == nil || ck.PeerVerificationTag != a.tcb.peerTag {
		a.adoptPeer(ck.PeerVerificationTag, ck.PeerInitialTSN, ck.PeerARwnd, int(ck.InboundStreams), int(ck.OutboundStreams),
			ck.PeerAdaptation, ck.HasPeerAdaptation, ck.PeerReconfig, ck.PeerZeroChecksum)
	}
	a.ctrl = wire.CookieAck{}.Append(a.ctrl)
	a.establish(now) // stops T1
}

// cookieEchoEstablished takes a COOKIE ECHO once established (RFC 9260
// §5.2.4 case D: our COOKIE ACK was lost): a verified cookie with this
// association's tags is answered with a COOKIE ACK again. Case B (our
// tag, another peer tag) is discarded here: the data in flight belongs
// to the TCB the cookie would replace, and a DDP session is replaced
// rather than re-tagged.
func (a *Association) cookieEchoEstablished(c wire.Chunk) {
	if ck, ok := a.ownCookieEcho(c); ok && ck.PeerVerificationTag == a.tcb.peerTag {
		a.ctrl = wire.CookieAck{}.Append(a.ctrl)
	}
}

// ownCookieEcho verifies a COOKIE ECHO against a cookie this association
// signed (after an INIT collision), carrying our tag.
func (a *Association) ownCookieEcho(c wire.Chunk) (handshake.Cookie, bool) {
	if a.verifyCookie == nil {
		return handshake.Cookie{}, false
	}
	ck, err := a.verifyCookie(wire.Header{SrcPort: a.tcb.peerPort, DstPort: a.tcb.localPort, VerificationTag: a.tcb.localTag}, c, a.primaryPath().addr)
	return ck, err == nil && ck.LocalVerificationTag == a.tcb.localTag
}

// collisionInitAck answers an INIT received in COOKIE-WAIT or
// COOKIE-ECHOED (RFC 9260 §5.2.1): an INIT ACK with our own Initiate Tag
// and Initial TSN and a State Cookie of our own signing, so that either
// handshake completes the one association.
func (a *Association) collisionInitAck(in *wire.Init, now time.Time) {
	if a.signer == nil {
		a.signer = handshake.NewCookieSigner(0, nil)
		a.verifyCookie = a.verifyOwnCookie
	}
	// The Tie-Tags are what this end knows of the association: our tag,
	// and in COOKIE-ECHOED the peer's tag from its INIT ACK (§5.2.1,
	// §5.2.2), so that the COOKIE ECHO can be told apart (§5.2.4).
	a.sendInitAck(in, a.tcb.localTag, a.tcb.localInitialTSN, a.tcb.localTag, a.tcb.peerTag)
}

// answerUnexpectedInit answers an INIT on an association past its start
// (RFC 9260 §5.2.2): an INIT ACK with a new random Initiate Tag and
// Initial TSN, the association's streams, and a State Cookie of our own
// signing, bound to the peer's address, that carries our current tags as
// Tie-Tags. Nothing of the association changes. The answers are
// rate-limited (an INIT ACK is larger than an INIT: a forged INIT must
// not make this end a reflector toward its peer).
func (a *Association) answerUnexpectedInit(in *wire.Init, now time.Time) {
	if a.initAcks == nil {
		a.initAcks = handshake.NewTokenBucketDepth(unexpectedInitRate, unexpectedInitRate)
	}
	if !a.initAcks.Allow(now) {
		a.stats.badChunks++
		return
	}
	if a.signer == nil {
		a.signer = handshake.NewCookieSigner(0, nil)
	}
	a.sendInitAck(in, handshake.RandomTag(), handshake.RandomTag(), a.tcb.localTag, a.tcb.peerTag)
}

// unexpectedInitRate bounds the INIT ACKs per second an association sends
// for unexpected INITs (§5.2.2).
const unexpectedInitRate = 10

// sendInitAck sends an INIT ACK for INIT in with Initiate Tag tag and
// Initial TSN tsn, and a cookie signed by the association's signer with
// the Tie-Tags given. mu is held.
func (a *Association) sendInitAck(in *wire.Init, tag, tsn, localTie, peerTie uint32) {
	ck := handshake.Cookie{LocalVerificationTag: tag, LocalInitialTSN: tsn,
		PeerVerificationTag: in.InitiateTag, PeerInitialTSN: in.InitialTSN, PeerARwnd: in.ARwnd,
		OutboundStreams: min(in.InboundStreams, uint16(a.cfg.Streams)), InboundStreams: min(in.OutboundStreams, uint16(a.cfg.Streams)),
		LocalPort: a.tcb.localPort, PeerPort: a.tcb.peerPort, PeerAddr: a.primaryPath().addr,
		PeerAdaptation: in.Params.Adaptation, HasPeerAdaptation: in.Params.HasAdaptation,
		PeerReconfig: in.Params.HasExtension(wire.ChunkReconfig), PeerZeroChecksum: in.Params.ZeroChecksumEDMID == wire.EDMIDDTLS,
		LocalTieTag: localTie, PeerTieTag: peerTie}
	ack := a.ourInit(true)
	ack.InitiateTag, ack.InitialTSN = tag, tsn
	ack.Params.StateCookie = a.signer.Sign(nil, &ck)
	if in.Params.Report {
		ack.Params.EchoUnrecognized = in.Params.Raw // §3.2.1
	}
	ack.Params.UnrecognizedForwardTSN = in.Params.ForwardTSN // no PR-SCTP here
	p := wire.AppendHeader(a.io.pkt[:0], wire.Header{SrcPort: a.tcb.localPort, DstPort: a.tcb.peerPort, VerificationTag: in.InitiateTag})
	p = ack.Append(p)
	wire.SetChecksum(p)
	a.sendPacket(p)
	a.io.pkt = append(p[:0], a.io.hdr[:]...)
}

// verifyOwnCookie checks a COOKIE ECHO against a cookie of the
// association's own signer (an INIT collision or an unexpected INIT):
// signature, lifetime, the peer's address, and the packet's tag and ports
// against the cookie's (RFC 9260 §5.1.5).
func (a *Association) verifyOwnCookie(hdr wire.Header, c wire.Chunk, from netip.AddrPort) (handshake.Cookie, error) {
	if a.signer == nil {
		return handshake.Cookie{}, handshake.ErrCookieTags
	}
	return a.signer.VerifyCookieEcho(hdr, c, from)
}

// peerRestart is a verified COOKIE ECHO of a restarted peer and the
// chunks bundled after it, for the listener to make the new association
// from (Listener.readLoop).
type peerRestart struct {
	ck   handshake.Cookie
	rest []byte
}

// foreignCookieEcho takes a COOKIE ECHO with another Verification Tag
// than ours (RFC 9260 §5.2.4). Our own cookie whose Tie-Tags are our tags,
// with new tags on both sides, is case A, a restarted peer: a DDP session
// does not survive it (RFC 5043 §11.3), so the association ends with
// ErrPeerRestarted, without an ABORT (the peer lost the old tag), and a
// listener makes the new one from the same COOKIE ECHO. In
// SHUTDOWN-ACK-SENT the SHUTDOWN ACK goes again with a Cookie Received
// While Shutting Down ERROR. Anything else is discarded. mu is held.
func (a *Association) foreignCookieEcho(pkt wire.Packet, now time.Time) {
	it := pkt.Chunks()
	c, _ := it.Next()
	ck, err := a.verifyOwnCookie(pkt.Header, c, a.primaryPath().addr)
	if err != nil || ck.LocalTieTag != a.tcb.localTag || ck.PeerTieTag != a.tcb.peerTag ||
		ck.LocalVerificationTag == a.tcb.localTag || ck.PeerVerificationTag == a.tcb.peerTag {
		a.stats.badTag++
		return
	}
	if a.state == stateShutdownAckSent {
		// §5.2.4 action A, §9.2: no new association while ours shuts
		// down: the SHUTDOWN ACK again, and an ERROR saying why.
		a.ctrl = wire.ShutdownAck{}.Append(a.ctrl)
		a.ctrl = (&wire.ErrorChunk{Causes: wire.AppendCause(nil, wire.CauseCookieWhileShuttingDown, nil)}).Append(a.ctrl)
		a.transmit(now)
		return
	}
	a.restart = &peerRestart{ck: ck, rest: it.Rest()}
	a.restartPending.Store(true)
	a.terminate(&AbortError{Reason: "the peer restarted the association (RFC 9260 §5.2.4 case A)", Cause: ErrPeerRestarted})
}

// takeRestart returns the COOKIE ECHO of a restarted peer that ended the
// association, once.
func (a *Association) takeRestart() (*peerRestart, bool) {
	if !a.restartPending.Load() {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.restart
	a.restart = nil
	a.restartPending.Store(false)
	return r, r != nil
}
