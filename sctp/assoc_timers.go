package sctp

import (
	"encoding/binary"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"math/rand/v2"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// onTimer runs when the association's OS timer fires: every expired
// protocol timer is handled, then the timer is armed for the next.
func (a *Association) onTimer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	a.io.wake.Fired()
	if a.state == stateClosed {
		return
	}
	exp := a.io.timers.Expired(now)
	for id, rest, ok := exp.Pop(); ok && a.state != stateClosed; id, rest, ok = rest.Pop() {
		switch id {
		case timerT1Init:
			a.t1Expired(now, false)
		case timerT1Cookie:
			a.t1Expired(now, true)
		case timerT3Rtx:
			a.t3Expired(now)
		case timerT2Shutdown:
			a.t2Expired(now)
		case timerT5ShutdownGuard:
			// §9.2: the shutdown did not complete in time.
			a.abortLocked(nil, &AbortError{Local: true, Reason: "shutdown not completed (T5-shutdown-guard)", Cause: ErrPeerUnresponsive})
		case timerHeartbeat:
			a.heartbeatDue(now)
		case timerPLPMTUD:
			a.plpmtudDue(now)
		case timerDelayedAck:
			// transmit below sends the SACK that is now due.
		}
	}
	if a.state == stateClosed {
		return
	}
	a.transmit(now)
}

// t1Expired retransmits the INIT or the COOKIE ECHO with a doubled RTO,
// until Max.Init.Retransmits (RFC 9260 §5.1.6).
func (a *Association) t1Expired(now time.Time, cookie bool) {
	if a.hs == nil {
		return // established meanwhile (establish stops T1)
	}
	a.hs.initRetries++
	if a.hs.initRetries > a.cfg.MaxInitRetrans {
		what := "INIT"
		if cookie {
			what = "COOKIE ECHO"
		}
		a.terminate(&handshakeError{what: what, retries: a.cfg.MaxInitRetrans})
		return
	}
	a.primaryPath().rto.Backoff()
	if cookie {
		a.sendCookieEcho(now)
	} else {
		a.sendInit(now)
	}
}

// t3Expired applies a T3-rtx expiry (RFC 9260 §6.3.3 E1-E3): the window
// closes to one packet, the RTO doubles, every outstanding chunk is
// marked for retransmission, and the error counter grows (§8.1).
func (a *Association) t3Expired(now time.Time) {
	dst := a.primaryPath()
	if a.oq == nil || a.oq.Len() == 0 {
		return
	}
	if a.mh != nil {
		a.mhT3Expired(now) // one timer per destination (§6.3.2)
		return
	}
	a.stats.t3Expiries++
	if a.countError() {
		return
	}
	dst.cc.OnT3Timeout()
	dst.rto.Backoff()
	a.plpmtudLoss(dst.addr, now)
	marked := a.oq.MarkAllForRetransmit()
	dst.cc.OnRetransmitMarked(marked)
	a.io.timers.SetAfter(timerT3Rtx, now, dst.rto.RTO()) // E3: restarted as data goes out
	if a.cfg.Tracer != nil {
		a.traceEvent(tracing.Event{Kind: tracing.EventT3Expiry, Marked: marked}, now)
	}
}

// t2Expired retransmits SHUTDOWN or SHUTDOWN ACK (RFC 9260 §9.2).
func (a *Association) t2Expired(now time.Time) {
	if a.countError() {
		return
	}
	a.primaryPath().rto.Backoff()
	switch a.state {
	case stateShutdownSent:
		a.ctrl = (&wire.Shutdown{CumTSNAck: a.rt.CumTSN()}).Append(a.ctrl)
	case stateShutdownAckSent:
		a.ctrl = wire.ShutdownAck{}.Append(a.ctrl)
	default:
		return
	}
	a.io.timers.SetAfter(timerT2Shutdown, now, a.primaryPath().rto.RTO())
}

// countError counts a retransmission or HEARTBEAT without answer; past
// Association.Max.Retrans the peer is unreachable and the association is
// aborted (RFC 9260 §8.1). It reports whether that happened.
func (a *Association) countError() bool {
	a.errCount++
	a.primaryPath().errCount++ // §8.2: the path the retransmission or HEARTBEAT went to
	if a.errCount <= a.cfg.MaxRetrans {
		return false
	}
	a.abortLocked(nil, &AbortError{Local: true, Cause: ErrPeerUnresponsive,
		Reason: "peer unresponsive: Association.Max.Retrans exceeded"})
	return true
}

// restartHeartbeat schedules the next HEARTBEAT: RTO + HB.interval, with
// a jitter of ±50% of the RTO (RFC 9260 §8.3). mu is held.
func (a *Association) restartHeartbeat(now time.Time) {
	if a.mh != nil {
		a.mhArm()
		return
	}
	if a.cfg.HeartbeatInterval < 0 {
		return
	}
	rto := a.primaryPath().rto.RTO()
	jitter := time.Duration(rand.Int64N(int64(rto)+1)) - rto/2
	a.io.timers.SetAfter(timerHeartbeat, now, a.cfg.HeartbeatInterval+rto+jitter)
}

// heartbeatDue sends a HEARTBEAT to an idle peer and counts one that went
// unanswered (RFC 9260 §8.3). While DATA is outstanding the T3-rtx timer
// watches the peer, and no HEARTBEAT is sent.
func (a *Association) heartbeatDue(now time.Time) {
	if a.mh != nil {
		a.mhHeartbeat(now)
		return
	}
	dst := a.primaryPath()
	defer a.restartHeartbeat(now)
	if dst.hbPending {
		// §8.3: an unanswered HEARTBEAT counts as an error and backs the
		// RTO off as a T3-rtx expiry does (§6.3.3 E2), so the next one
		// comes later; a HEARTBEAT ACK's RTT measurement restores it.
		dst.hbPending = false
		if a.countError() {
			return
		}
		dst.rto.Backoff()
	}
	if a.oq != nil && a.oq.Len() > 0 {
		return
	}
	dst.hbNonce = rand.Uint64()
	var info [heartbeatInfoLen]byte
	binary.BigEndian.PutUint64(info[:], dst.hbNonce)
	binary.BigEndian.PutUint64(info[8:], uint64(now.UnixNano()))
	a.ctrl = (&wire.Heartbeat{Info: info[:]}).Append(a.ctrl)
	dst.hbPending = true
	a.stats.heartbeats++
}
