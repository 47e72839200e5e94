package sctp

import (
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
)

// PLPMTUD on a multihomed association (RFC 9260 §7.3, RFC 8899 §6.2):
// each confirmed path has its own prober, sending its probes to that
// path's address from the one socket (DF set on it), with that route's
// MTU as MAX_PLPMTU. An unconfirmed address gets no probe, only the
// HEARTBEAT of path verification (§5.4): a probe is a large packet, and
// an INIT must not aim those at a third party. A path that is not active
// does not probe and keeps its PLPMTU; it resumes when it answers again.
// Packets are built for the smallest PLPMTU of the confirmed paths (the
// association PMTU of §7.3), so that a retransmission to an alternate
// path fits it unfragmented.

// mhProbing gives a multihomed association the socket's DF switch and the
// route MTU of each destination, and starts with its first path's
// prober. Called before the association starts; mu need not be held.
func (a *Association) mhProbing(df *dplpmtud.SharedDF, route *routeProbe) {
	if df == nil || route == nil || a.cfg.MTU > 0 || a.cfg.NoPLPMTUD {
		return
	}
	a.mh.df, a.mh.route = df, route
	if s := a.mhNewProber(a.mh.pm.Info(0).Addr); s != nil {
		a.plps = append(a.plps[:0], s)
	}
}

// mhNewProber returns a prober of destination addr up to its route's MTU
// (Config.MaxPacket caps it), or nil where that is not known or not above
// BASE_PLPMTU. mu is held, or the association is not running yet.
func (a *Association) mhNewProber(addr netip.AddrPort) *plpmtud {
	route := a.mh.route
	mtu := route.mtu(addr)
	if mtu == 0 {
		return nil
	}
	c := a.cfg
	c.MTU = mtu
	pp := pathProbe{routeMTU: mtu, overhead: ipUDPOverhead(addr.Addr()), df: a.mh.df,
		kernelMTU: func() int { return route.mtu(addr) }}
	return a.newProber(pp, addr, c.maxPacketFor(addr.Addr()))
}

// mhPathAnswered: path id answered (its HEARTBEAT ACK, or a SACK of DATA
// sent there). A path confirmed for the first time gets its prober; one
// that comes back resumes probing at once. mu is held.
func (a *Association) mhPathAnswered(id pathmgr.ID, now time.Time) {
	mh := a.mh
	if mh.df == nil {
		return
	}
	in := mh.pm.Info(id)
	if !in.Confirmed {
		return
	}
	s := a.proberFor(in.Addr)
	if s == nil {
		if s = a.mhNewProber(in.Addr); s == nil {
			return
		}
		a.plps = append(a.plps, s)
		if a.state != stateEstablished {
			return // establish starts it
		}
		a.startProber(s, now)
		return
	}
	if s.p != nil && in.State == pathmgr.Active {
		a.io.timers.Set(timerPLPMTUD, now)
	}
}

// plpLive reports whether destination s probes now: always with one
// path, while its path is active on a multihomed association. mu is held.
func (a *Association) plpLive(s *plpmtud) bool {
	if a.mh == nil {
		return true
	}
	id, ok := a.mh.pm.Lookup(s.dst)
	return ok && a.mh.pm.Info(id).State == pathmgr.Active
}

// mhPLPMTU is the PLPMTU of destination addr (0: not probed). mu is held.
func (a *Association) mhPLPMTU(addr netip.AddrPort) int {
	if s := a.proberFor(addr); s != nil && s.p != nil {
		return s.p.PLPMTU()
	}
	return 0
}
