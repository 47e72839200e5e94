package sctp

import (
	"errors"
	"net/netip"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// Packetization Layer Path MTU Discovery for datagram transports (RFC 8899,
// §6.2 for SCTP) inside the association. The route's MTU toward the peer
// (IP_MTU) is only the first hop's; a narrower link further on, whose ICMP
// "fragmentation needed" never arrives, would drop every full-sized packet
// (a black hole, RFC 8899 §4.3). So an association over UDP starts with
// packets of BASE_PLPMTU (1200 octets of IP packet) and sends probes
// confirmed by their HEARTBEAT ACK: a HEARTBEAT and a PAD chunk (RFC 8899
// §6.2.1.2, dplpmtud.AppendPadProbePacket) to a peer that answered one at
// BASE, else a HEARTBEAT padded in its information (dplpmtud.AppendProbePacket,
// the pion path's probe: pion drops packets with a PAD chunk). The state
// machine is dplpmtud.Prober (RFC 8899 §5.2) with MaxFirst: the route's MTU is
// probed once right after BASE, so where the first hop is the narrowest
// link the association reaches it in two round trips; otherwise, one
// PROBE_TIMER later, the search walks pmtu's table of common MTUs. This
// runs on every path, loopback too: lo's 65536 reaches our own stack in
// two round trips, while pion reads 8 KiB of a datagram and so confirms
// 8220 after a second. In SEARCH_COMPLETE the size is
// confirmed every dplpmtud.DefaultConfirmInterval and at once after a T3-rtx
// expiry (a loss of full-sized packets); MAX_PROBES failed confirmations
// fall back to BASE (black hole) and search again. Packets go out with DF
// set (IP_PMTUDISC_DO), so nothing is fragmented on the way; a send the
// kernel refuses with EMSGSIZE (it learned a smaller path MTU from ICMP)
// lowers the PLPMTU to the kernel's value at once (RFC 8899 §4.6.2). A
// DATA chunk built before the PLPMTU fell is larger than the new packet
// size and cannot be split (it has a TSN): it goes alone with DF clear, so
// the network may fragment it (RFC 8899 §5.4, RFC 9260 §7.3).
//
// The DDP layer reads MaxMessage for each segment, so its MULPDU follows
// (RFC 5043 §9; sctpllp's shrink grace covers a segment built just before
// a decrease).

// plpmtudBase is BASE_PLPMTU (RFC 8899 §5.1.2), an IP packet size.
const plpmtudBase = dplpmtud.DefaultBasePLPMTU

// pathProbe is what an association over UDP needs for PLPMTUD: the route's
// MTU (MAX_PLPMTU), the IP and UDP header octets, the socket's DF switch
// and a query of the kernel's path MTU toward the peer.
type pathProbe struct {
	routeMTU int // IP packet size; MAX_PLPMTU
	overhead int // IP and UDP headers
	df       *dplpmtud.SharedDF
	// kernelMTU returns the kernel's path MTU toward the peer (ICMP
	// included), 0 when it does not say.
	kernelMTU func() int
}

// plpmtud is the PLPMTUD state of one destination; mu guards it. dst is
// where its probes go (multihomed: its path's address; else unused, the
// association's socket is connected).
type plpmtud struct {
	path  pathProbe
	dst   netip.AddrPort
	p     *dplpmtud.Prober
	nonce uint64
	// padNonce is the nonce of the PAD probe sent at BASE (0: none yet);
	// padOK that the peer answered it (RFC 8899 §6.2.1.2).
	padNonce uint64
	padOK    bool
	stats    PLPMTUDStats
	tooBig   bool // a send failed with EMSGSIZE since the last check
}

// PLPMTUDStats are an association's counters of RFC 8899 probing.
type PLPMTUDStats struct {
	// State is the prober's state (dplpmtud.ProberState.String), "off"
	// where the association does not probe (Config.MTU set,
	// Config.NoPLPMTUD, or not over UDP: over DTLS).
	State string
	// PLPMTU is the IP packet size in use (0 when off).
	PLPMTU int
	// ProbesSent, ProbesAcked and ProbesLost count probe packets;
	// TooBig the sends the kernel refused (EMSGSIZE); BlackHoles the
	// falls back to BASE_PLPMTU after failed confirmations; Fragmentable
	// the packets sent with DF clear (a chunk larger than a lowered
	// PLPMTU).
	ProbesSent, ProbesAcked, ProbesLost uint64
	TooBig, BlackHoles, Fragmentable    uint64
	// PAD is true once the peer answered a probe of a HEARTBEAT and a PAD
	// chunk (RFC 8899 §6.2.1.2), which it gets from then on; without it
	// (pion drops such packets) probes pad the Heartbeat Information.
	PAD bool
}

// enablePLPMTUD makes the association probe its path once established.
// Called before the association starts; mu need not be held.
func (a *Association) enablePLPMTUD(pp pathProbe) {
	if s := a.newProber(pp, a.primaryPath().addr, a.maxPacket); s != nil && len(a.plps) == 0 {
		a.plps = append(a.plps, s)
	}
}

// newProber returns the PLPMTUD state of a destination dst whose route
// pp describes, probing up to packets of maxPacket octets of SCTP, or nil
// where probing cannot raise the packet size above BASE_PLPMTU. Each
// prober's nonces start at its own 2^48 multiple, so a probe's ack names
// its destination. mu is held, or the association is not running yet.
func (a *Association) newProber(pp pathProbe, dst netip.AddrPort, maxPacket int) *plpmtud {
	if pp.routeMTU <= plpmtudBase || pp.df == nil {
		return nil
	}
	max := min(pp.routeMTU, maxPacket+pp.overhead)
	if max <= plpmtudBase {
		return nil
	}
	pp.routeMTU = max
	return &plpmtud{path: pp, dst: dst, nonce: uint64(len(a.plps)) << 48}
}

// startPLPMTUD begins probing (RFC 8899 §5.2 PROBE_BASE): packets fall to
// BASE_PLPMTU until probes confirm more. mu is held.
func (a *Association) startPLPMTUD(now time.Time) {
	for _, s := range a.plps {
		a.startProber(s, now)
	}
}

func (a *Association) startProber(s *plpmtud, now time.Time) {
	if s.p != nil {
		return
	}
	s.p = dplpmtud.NewProber(dplpmtud.ProberConfig{Base: plpmtudBase, Max: s.path.routeMTU, MaxFirst: true}, now)
	a.applyPLPMTU()
	a.io.timers.Set(timerPLPMTUD, now)
}

// plpmtudDue sends the probes the probers ask for, if any, and re-arms
// the timer at the earliest of their deadlines. A multihomed path probes
// only while it is active: a path that failed keeps the PLPMTU it had,
// and its prober resumes when the path answers again (mhProbeResume).
// mu is held.
func (a *Association) plpmtudDue(now time.Time) {
	var next time.Time
	for _, s := range a.plps {
		if s.p == nil || !a.plpLive(s) { // onTimer runs it only before the end
			continue
		}
		a.proberDue(s, now)
		if d := s.p.Deadline(); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	a.applyPLPMTU()
	if !next.IsZero() {
		a.io.timers.Set(timerPLPMTUD, next)
	}
}

// proberDue runs one destination's prober. mu is held.
func (a *Association) proberDue(s *plpmtud, now time.Time) {
	if s.tooBig {
		s.tooBig = false
		a.plpTooBig(s, now)
	}
	lost := s.p.Lost()
	blackholeBefore := s.p.State()
	size, ok := s.p.Next(now)
	s.stats.ProbesLost += s.p.Lost() - lost
	if blackholeBefore == dplpmtud.StateSearchComplete && s.p.State() == dplpmtud.StateBase {
		s.stats.BlackHoles++
	}
	if ok {
		if s.p.State() == dplpmtud.StateBase && s.padNonce == 0 {
			// Whether the peer answers RFC 8899 §6.2.1.2's probe (PAD
			// chunk) is learnt at BASE: one of those beside the padded
			// HEARTBEAT every stack answers.
			s.nonce++
			s.padNonce = s.nonce
			a.sendProbe(s, now, size, true)
		}
		s.nonce++
		a.sendProbe(s, now, size, s.padOK)
	}
}

// sendProbe sends a probe of size octets of IP packet with nonce s.nonce:
// a HEARTBEAT and a PAD chunk (pad), or a HEARTBEAT padded in its
// information. The buffer is the pool's for the send only: an idle
// association holds no 64 KiB probe (TestAssociation_IdleMemory). mu is
// held.
func (a *Association) sendProbe(s *plpmtud, now time.Time, size int, pad bool) {
	n := probePacketSize(size, s.path.overhead)
	bp := getBuf(n)
	hdr := wire.Header{SrcPort: a.tcb.localPort, DstPort: a.tcb.peerPort, VerificationTag: a.tcb.peerTag}
	var b []byte
	if pad {
		b = dplpmtud.AppendPadProbePacket((*bp)[:0], hdr, s.nonce, n)
	} else {
		b = dplpmtud.AppendProbePacket((*bp)[:0], hdr, s.nonce, n)
	}
	s.stats.ProbesSent++
	a.stats.packetsSent++
	dst := a.primaryPath().addr
	if a.mh != nil {
		dst = s.dst
		a.mh.dst = dst
	}
	if a.cfg.Tap != nil {
		a.tap(true, dst, b)
	}
	err := a.io.out(b)
	putBuf(bp)
	if err != nil && errors.Is(err, syscall.EMSGSIZE) {
		a.plpTooBig(s, now)
	}
}

// plpTooBig takes an EMSGSIZE: the kernel knows a smaller path MTU (from
// an ICMP Packet Too Big), which lowers the PLPMTU (RFC 8899 §4.6.2).
// mu is held.
func (a *Association) plpTooBig(s *plpmtud, now time.Time) {
	s.stats.TooBig++
	if m := s.path.kernelMTU(); m > 0 {
		s.p.PacketTooBig(m, now)
		a.applyPLPMTU()
		a.io.timers.Set(timerPLPMTUD, s.p.Deadline())
	}
}

// plpmtudAck takes a HEARTBEAT ACK; it reports whether it answered one of
// our probes. mu is held.
func (a *Association) plpmtudAck(c wire.Chunk, now time.Time) bool {
	if len(a.plps) == 0 {
		return false
	}
	nonce, size, ok := dplpmtud.ParseProbeAck(c)
	if !ok {
		return false
	}
	for _, s := range a.plps {
		if s.p == nil || nonce>>48 != s.nonce>>48 {
			continue
		}
		if nonce == s.padNonce && !s.padOK {
			s.padOK = true // the peer answers PAD probes: send those from now on
		}
		if pr := s.p.Probing(); (nonce == s.nonce || nonce == s.padNonce) && pr != 0 && size == probePacketSize(pr, s.path.overhead) {
			s.stats.ProbesAcked++
			s.p.Acked(pr, now)
			a.applyPLPMTU()
			a.io.timers.Set(timerPLPMTUD, s.p.Deadline())
		}
	}
	return true
}

// probePacketSize is the SCTP packet of a probe of an IP packet of size
// octets: less the IP and UDP headers, in whole 4-octet words (RFC 9260
// §3.2), as every SCTP packet is; so a table entry of 1450 (1422 octets
// of SCTP) is probed with 1420 and its ack still confirms 1450.
func probePacketSize(size, overhead int) int { return (size - overhead) &^ 3 }

// plpmtudLoss tells the prober of destination dst that full-sized packets
// may be lost (a T3-rtx expiry): its PLPMTU is confirmed at once. mu is
// held.
func (a *Association) plpmtudLoss(dst netip.AddrPort, now time.Time) {
	s := a.proberFor(dst)
	if s == nil || s.p == nil {
		return
	}
	s.p.SuspectLoss(now)
	a.io.timers.Set(timerPLPMTUD, s.p.Deadline())
}

// proberFor returns the prober of destination dst (nil: none). mu is
// held.
func (a *Association) proberFor(dst netip.AddrPort) *plpmtud {
	if a.mh == nil {
		if len(a.plps) == 0 {
			return nil
		}
		return a.plps[0]
	}
	for _, s := range a.plps {
		if s.dst == dst {
			return s
		}
	}
	return nil
}

// applyPLPMTU sets the packet size from the probers: the smallest PLPMTU
// of the destinations probed, which on a multihomed association is RFC
// 9260 §7.3's association PMTU, so that a chunk retransmitted to an
// alternate path fits it unfragmented. When it falls, the chunks in
// flight in larger packets are taken as lost and sent again at once (with
// DF clear, sendOversize), without a window reduction, as Linux SCTP does
// on a PMTU decrease: waiting for T3-rtx, backed off while the black hole
// was being confirmed, cost seconds (TestBlackHoleMidTransfer_NativeSCTP).
// mu is held.
func (a *Association) applyPLPMTU() {
	n := 0
	for _, s := range a.plps {
		if s.p == nil {
			continue
		}
		if m := s.p.PLPMTU() - s.path.overhead; n == 0 || m < n {
			n = m
		}
	}
	if n == 0 || n == a.maxPacket {
		return
	}
	fell := n < a.maxPacket
	a.setMaxPacket(n)
	if fell && a.oq != nil {
		a.primaryPath().cc.OnRetransmitMarked(a.oq.MarkLargerForRetransmit(n - wire.HeaderLen))
	}
}

// setMaxPacket changes the largest packet: new chunks are built for it
// (MaxMessage) and bundling stops at it. mu is held.
func (a *Association) setMaxPacket(n int) {
	a.maxPacket = n
	a.maxMsg.Store(int64(maxMessageFor(n)))
	a.primaryPath().cc.SetPathMTU(n, n-wire.HeaderLen)
}

// maxMessageFor is the largest user message in one DATA chunk of a packet
// of n octets: PMDCS less the DATA chunk header, whole words.
func maxMessageFor(n int) int { return (n - wire.HeaderLen - wire.DataHeaderLen) &^ 3 }

// sendOversize sends a packet larger than the current packet size (a
// chunk built before the PLPMTU fell) with DF clear. mu is held.
func (a *Association) sendOversize(b []byte) error {
	s := a.plps[0]
	if a.mh != nil {
		if t := a.proberFor(a.mh.dst); t != nil {
			s = t
		}
	}
	s.stats.Fragmentable++
	_ = s.path.df.Set(false)
	err := a.io.out(b)
	_ = s.path.df.Set(true)
	return err
}

// plpmtudStats returns the association's RFC 8899 probing counters
// (Stats.PLPMTUD): its PLPMTU (on a multihomed association the smallest
// of its paths', as applyPLPMTU uses it), the state of the data path's
// prober and the counters summed over its destinations. mu is held.
func (a *Association) plpmtudStats() PLPMTUDStats {
	var st PLPMTUDStats
	var cur *plpmtud
	for _, s := range a.plps {
		if s.p == nil {
			continue
		}
		if cur == nil || (a.mh != nil && s.dst == a.mh.pm.Info(a.mh.cur).Addr) {
			cur = s
		}
		if m := s.p.PLPMTU(); st.PLPMTU == 0 || m < st.PLPMTU {
			st.PLPMTU = m
		}
		st.ProbesSent += s.stats.ProbesSent
		st.ProbesAcked += s.stats.ProbesAcked
		st.ProbesLost += s.stats.ProbesLost
		st.TooBig += s.stats.TooBig
		st.BlackHoles += s.stats.BlackHoles
		st.Fragmentable += s.stats.Fragmentable
	}
	if cur == nil {
		return PLPMTUDStats{State: "off"}
	}
	st.PAD = cur.padOK
	st.State = cur.p.State().String()
	return st
}
