package sctp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// defaultStallTimeout is a Listener's Config.StallTimeout when none is
// set.
const defaultStallTimeout = 30 * time.Second

// defaultEvictAfter is how long an association must have been idle (no packet
// from its peer) or busy without progress before a full table may evict
// it for a new peer.
const defaultEvictAfter = 2 * time.Second

// progressMark is what the reaper compares between two looks at an
// association: busy is true while it waits for its peer (DATA
// outstanding or queued, a shutdown under way, a HEARTBEAT unanswered);
// a change of state or of the cumulative TSN acknowledged is progress.
type progressMark struct {
	state State
	cum   uint32
	busy  bool
}

// progress returns the association's mark.
func (a *Association) progress() progressMark {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := progressMark{state: a.state, busy: a.primaryPath().hbPending || a.pendHead < len(a.pend)}
	if a.oq != nil {
		p.cum = a.oq.CumTSN()
		p.busy = p.busy || a.oq.Len() > 0
	}
	switch a.state {
	case stateShutdownPending, stateShutdownSent, stateShutdownReceived, stateShutdownAckSent:
		p.busy = true
	}
	return p
}

// abortStalled aborts the association with a User-Initiated Abort cause
// that says why (RFC 9260 §3.3.10.12, §9.1) and err.
func (a *Association) abortStalled(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateClosed {
		return
	}
	causes := wire.AppendCause(nil, wire.CauseUserInitiatedAbort, []byte(reason))
	a.abortLocked(causes, &AbortError{Local: true, Reason: reason, Cause: ErrPeerUnresponsive})
}

// reapTick is the reaper's period for a stall timeout d.
func reapTick(d time.Duration) time.Duration {
	return min(max(d/4, 10*time.Millisecond), time.Second)
}

// reap looks at every association once per reapTick until the socket
// closes, and aborts those busy without progress for Config.StallTimeout:
// a peer that acknowledges nothing while DATA is outstanding (also one
// that keeps its window closed), that leaves a shutdown unfinished, or
// that answers no HEARTBEAT. Association.Max.Retrans (RFC 9260 §8.1) ends
// a silent peer too, but after RTO back-off to RTO.Max that takes minutes
// (docs/security.md); the stall timeout bounds what a peer that
// completed the handshake can hold.
func (l *Listener) reap() {
	t := time.NewTicker(reapTick(l.cfg.StallTimeout))
	defer t.Stop()
	var ms []*member
	for {
		select {
		case <-l.readDone:
			return
		case <-t.C:
		}
		l.mu.Lock()
		ms = ms[:0]
		for _, m := range l.assocs {
			ms = append(ms, m)
		}
		stall := l.stallTimeout
		l.mu.Unlock()
		now := time.Now()
		for i, m := range ms {
			ms[i] = nil
			p := m.a.progress()
			if p.state == stateClosed {
				continue
			}
			l.mu.Lock()
			switch {
			case !p.busy:
				m.busy = false
			case !m.busy || p.state != m.mark.state || p.cum != m.mark.cum:
				m.busy, m.since = true, now
			}
			m.mark = p
			stalled := m.busy && now.Sub(m.since) >= stall
			l.mu.Unlock()
			if stalled {
				l.stats.Stalled.Add(1)
				procstat.Listeners.Stalled.Add(1)
				m.a.abortStalled("no progress for the listener's stall timeout")
			}
		}
	}
}

// makeRoom reports whether an association of a peer at ip with our tag
// may be added: the tag is unused, the peer's address holds fewer than
// MaxAssociationsPerAddress, and the table has room, if need be after
// evicting its least useful association (victim). l.admit is held.
func (l *Listener) makeRoom(ip netip.Addr, tag uint32) bool {
	for range 4 { // an evicted association may have gone already
		l.mu.Lock()
		if l.byTag[tag] != nil || l.perIP[ip] >= l.cfg.MaxAssociationsPerAddress {
			l.mu.Unlock()
			return false
		}
		if len(l.assocs) < l.cfg.MaxAssociations {
			l.mu.Unlock()
			return true
		}
		v := l.victim(time.Now())
		l.mu.Unlock()
		if v == nil {
			return false
		}
		l.stats.Evicted.Add(1)
		procstat.Listeners.Evicted.Add(1)
		// Its end removes it from the table (forget) before this returns.
		v.a.abortStalled("evicted: the listener's table is full")
	}
	return false
}

// victim picks the association a full table gives up for a new peer, or
// nil. Candidates have had no packet from their peer for l.evictAfter,
// or have been busy without progress that long (the reaper's view: a
// peer that acknowledges nothing but keeps sending); of those, one of
// the address that holds the most associations goes first, so that a
// peer with many loses one before a peer with one, and of that address
// the one useless longest. l.mu is held.
func (l *Listener) victim(now time.Time) *member {
	var v *member
	var vFor time.Duration
	vIP := 0
	for _, m := range l.assocs {
		d := now.Sub(time.Unix(0, m.lastRecv.Load()))
		if m.busy {
			d = max(d, now.Sub(m.since))
		}
		if d < l.evictAfter {
			continue
		}
		n := l.perIP[m.key.peer.Addr()]
		if n > vIP || n == vIP && d > vFor {
			v, vFor, vIP = m, d, n
		}
	}
	return v
}
