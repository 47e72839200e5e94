package sctp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/sockbuf"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// PathStats describes one destination address of an association (RFC
// 9260 §6.4): its state ("active", "unconfirmed", "potentially-failed",
// "inactive"), whether it is the primary, the RTO figures it is timed
// with, the octets sent to it, its error counter (§8.2), its congestion
// window and slow-start threshold (§7.2) and its PLPMTU (RFC 8899, an IP
// packet size; 0 while not probed).
type PathStats struct {
	Addr           netip.AddrPort
	State          string
	Primary        bool
	SRTT, RTO      time.Duration
	OctetsSent     uint64
	Errors         int
	Cwnd, SSThresh int
	PLPMTU         int
}

// multihome is the state of a multihomed association (RFC 9260 §6.4):
// one unconnected UDP socket bound to the wildcard address, the path
// manager choosing each packet's destination, and the source of the
// packet being received (replies go back there). Each path has its RTO
// estimator (§6.3) and its window (§7.2: cwnd, ssthresh,
// partial_bytes_acked): the association's are the data path's, the
// others wait in rtos and ccs. Each path's flight is kept in flight
// (§6.1 rule B checks it against that path's cwnd); the association's
// flight and the peer's window stay in the data path's congestion.
// Packets go one per system call.
type multihome struct {
	conn    *net.UDPConn
	pm      *pathmgr.Manager
	locals  []netip.Addr // listed in our INIT (active side)
	passive bool         // learns the peer's addresses from its packets
	extra   []netip.AddrPort
	dst     netip.AddrPort // destination of the packet being sent
	from    netip.AddrPort // source of the last packet received
	to      netip.Addr     // and the local address it reached (IP_PKTINFO)
	// tapRoute finds the source address of a packet sent to each
	// destination, for Config.Tap; tapSrcs caches its answers.
	tapRoute *routeProbe
	tapSrcs  []tapSource
	// txPath is the path DATA last went to; rtx asks the next
	// transmission to go to RetransmitPath(txPath) (§6.4.1).
	txPath pathmgr.ID
	rtx    bool
	// rtos are the RTO estimators of the paths other than cur, whose
	// estimator is the association's (primaryPath().rto).
	rtos [pathmgr.DefaultMaxPaths]rtoEstimator
	cur  pathmgr.ID
	// ccs hold the windows of the paths other than cur (only their
	// window fields mean anything, see congestion.swapWindow); acked sums
	// each path's octets acknowledged by the SACK being applied, and
	// lastData is when DATA last went to each path (§7.2.1 idle decay).
	ccs      [pathmgr.DefaultMaxPaths]congestion
	acked    [pathmgr.DefaultMaxPaths]int
	lastData [pathmgr.DefaultMaxPaths]time.Time
	// flight is the octets in flight to each path, kept by the
	// outstanding queue; flightBefore the data path's before a SACK.
	flight       [pathmgr.DefaultMaxPaths]int
	flightBefore int
	// t3 is each path's T3-rtx deadline (§6.3.2: one per destination;
	// zero: stopped), timerT3Rtx is armed at the earliest; rtxFrom is
	// the path whose T3-rtx expired, its chunks go to RetransmitPath.
	t3      [pathmgr.DefaultMaxPaths]time.Time
	rtxFrom pathmgr.ID
	// octets and dataPackets count what went to each path.
	octets      [pathmgr.DefaultMaxPaths]uint64
	dataPackets [pathmgr.DefaultMaxPaths]uint64
	hb          []byte
	changes     []pathmgr.Change
	// batches send each destination's runs of packets (UDP_SEGMENT, or
	// sendmmsg to a local address) from the wildcard socket; the
	// transmission in progress uses the one of dst (a.io.batch). gso:
	// the socket has UDP_SEGMENT (Config.NoOffload); noBatch: no batch
	// can be made.
	batches []dstBatch
	gso     bool
	noBatch bool
	// df and route serve PLPMTUD on each confirmed path
	// (multihome_plpmtud.go); nil: no probing.
	df    *dplpmtud.SharedDF
	route *routeProbe
}

// hostsAddr is a multihomed listener's address: its hosts and port, as
// splitHosts reads them.
type hostsAddr struct {
	hosts []netip.Addr
	port  uint16
}

func (hostsAddr) Network() string { return "udp" }

func (a hostsAddr) String() string {
	var b strings.Builder
	for i, h := range a.hosts {
		if i > 0 {
			b.WriteByte('/')
		}
		if h.Is6() {
			b.WriteString("[" + h.String() + "]")
		} else {
			b.WriteString(h.String())
		}
	}
	return b.String() + ":" + strconv.Itoa(int(a.port))
}

// splitHosts parses "h1/h2:port" (one host, or several separated by
// '/', and one port).
func splitHosts(address string) ([]netip.Addr, uint16, error) {
	i := strings.LastIndexByte(address, ':')
	if i < 0 {
		return nil, 0, fmt.Errorf("sctp: address %q: missing port", address)
	}
	port, err := strconv.ParseUint(address[i+1:], 10, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("sctp: address %q: bad port", address)
	}
	var hosts []netip.Addr
	for _, h := range strings.Split(strings.Trim(address[:i], "[]"), "/") {
		a, err := netip.ParseAddr(strings.Trim(h, "[]"))
		if err != nil {
			return nil, 0, fmt.Errorf("sctp: address %q: %w", address, err)
		}
		hosts = append(hosts, a.Unmap())
	}
	return hosts, uint16(port), nil
}

// listedAddrs is what an INIT or INIT ACK lists of hosts: several, or
// none (one address goes unlisted, RFC 6951 §5.5).
func listedAddrs(hosts []netip.Addr) []netip.Addr {
	if len(hosts) < 2 {
		return nil
	}
	return hosts[:min(len(hosts), wire.MaxInitAddrs)]
}

// multiHosts reports whether address names several hosts.
func multiHosts(address string) bool { return strings.Contains(address, "/") }

// wildcardUDP binds an unconnected UDP socket to the wildcard address of
// the hosts' family and port: the kernel then picks each packet's source
// by route, on the link of its destination (§6.4).
func wildcardUDP(network string, hosts []netip.Addr, port uint16) (*net.UDPConn, error) {
	ip := net.IPv4zero
	if hosts[0].Is6() {
		ip = net.IPv6zero
	}
	pc, err := net.ListenUDP(network, &net.UDPAddr{IP: ip, Port: int(port)})
	if err != nil {
		return nil, err
	}
	sockbuf.SetSocketBuffers(pc, socketBuffer)
	return pc, nil
}

// multihomed sets the multihomed defaults where c leaves them unset.
func (c Config) multihomed() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = multihomedHeartbeatInterval
	}
	return c
}

func (c *Config) pathConfig() pathmgr.Config {
	return pathmgr.Config{HBInterval: c.HeartbeatInterval}
}

// newMultihome sets a up to send through conn to the paths of a path
// manager whose first path is first.
func (a *Association) newMultihome(conn *net.UDPConn, first netip.AddrPort, now time.Time) error {
	pm, err := pathmgr.New(a.cfg.pathConfig(), first, now)
	if err != nil {
		return err
	}
	a.mh = &multihome{conn: conn, pm: pm, dst: first, from: first,
		gso: !a.cfg.NoOffload && udpOffloadSupported(conn), noBatch: a.cfg.NoOffload}
	for i := range a.mh.rtos {
		a.mh.rtos[i] = newRTOEstimator(a.cfg.RTO)
	}
	a.io.out = a.mhWrite
	a.io.batch = a.mhBatch(first)
	return nil
}

// mhWrite sends one packet to mh.dst. mu is held.
func (a *Association) mhWrite(b []byte) error {
	a.mhCount(b)
	_, err := a.mh.conn.WriteToUDPAddrPort(b, a.mh.dst)
	return err
}

// mhCount counts packet b as sent to mh.dst. mu is held.
func (a *Association) mhCount(b []byte) {
	mh := a.mh
	if id, ok := mh.pm.Lookup(mh.dst); ok {
		mh.octets[id] += uint64(len(b))
		if len(b) > wire.HeaderLen && hasDataChunk(b[wire.HeaderLen:]) {
			mh.dataPackets[id]++
		}
	}
}

// dstBatch is the batch of one destination.
type dstBatch struct {
	dst netip.AddrPort
	b   *txBatch
}

// maxDstBatches bounds the batches a multihomed association keeps: one
// per destination, and some for destinations whose port changed (RFC
// 6951 §5.4).
const maxDstBatches = 2 * pathmgr.DefaultMaxPaths

// mhBatch returns the batch of packets to dst, made the first time (nil
// where none can be). A transmission sends to one destination, so one
// batch is in use at a time, and it is empty between transmissions. mu is
// held, or the association is not running yet.
func (a *Association) mhBatch(dst netip.AddrPort) *txBatch {
	mh := a.mh
	if mh.noBatch {
		return nil
	}
	for i := range mh.batches {
		if mh.batches[i].dst == dst {
			return mh.batches[i].b
		}
	}
	conn := mh.conn
	b := newBatch(conn, dst, dst.Addr(), func(p []byte) error {
		_, err := conn.WriteToUDPAddrPort(p, dst)
		return err
	}, mh.gso, a.cfg.offloadLocal)
	if b == nil {
		mh.noBatch = true
		return nil
	}
	if len(mh.batches) == maxDstBatches {
		// The oldest goes (empty: only the transmission in progress holds
		// packets, and it is not in the middle of one); its count stays.
		b.offloaded = mh.batches[0].b.offloaded
		mh.batches = append(mh.batches[:0], mh.batches[1:]...)
	}
	mh.batches = append(mh.batches, dstBatch{dst, b})
	return b
}

// mhOffloadSends sums the batches' multi-packet sends. mu is held.
func (a *Association) mhOffloadSends() uint64 {
	var n uint64
	for _, d := range a.mh.batches {
		n += d.b.offloaded
	}
	return n
}

func hasDataChunk(chunks []byte) bool {
	it := wire.NewChunkIter(chunks)
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		if c.Type == wire.ChunkData {
			return true
		}
	}
	return false
}

// mhSendFailed takes a send that failed for want of a route as a timeout
// of its path (it is potentially failed from then on), not as an error
// of the association. mu is held.
func (a *Association) mhSendFailed(err error, now time.Time) {
	if !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH) && !errors.Is(err, syscall.EPERM) {
		return
	}
	pm := a.mh.pm
	if id, ok := pm.Lookup(a.mh.dst); ok && pm.Info(id).State == pathmgr.Active {
		pm.Timeout(id, now)
	}
}

// mhPick chooses the destination of the transmission about to be built:
// DATA goes to DataPath (a retransmission after T3-rtx to RetransmitPath,
// §6.4.1), a packet of control chunks only back to where the peer's last
// packet came from. mu is held.
func (a *Association) mhPick(data bool) {
	mh := a.mh
	pm := mh.pm
	a.mhSetRTOs()
	switch {
	case data && mh.rtx:
		mh.rtx = false
		mh.txPath = pm.RetransmitPath(mh.rtxFrom)
	case data:
		mh.txPath = pm.DataPath()
	case mh.from.IsValid():
		mh.dst = mh.from
		a.io.batch = a.mhBatch(mh.dst)
		return
	}
	mh.dst = pm.Info(mh.txPath).Addr
	a.io.batch = a.mhBatch(mh.dst)
	if mh.txPath != mh.cur {
		// DATA changes path: T3-rtx is timed with that path's RTO, and
		// the window is that path's (§7.2), decayed for the time the
		// path carried no DATA (§7.2.1); a path never used starts from
		// the initial window.
		dst := a.primaryPath()
		mh.rtos[mh.cur], dst.rto = dst.rto, mh.rtos[mh.txPath]
		if a.oq != nil {
			// ccs[cur] is unused while cur is the data path: the window
			// of txPath comes in, cur's goes to its own slot.
			dst.cc.swapWindow(&mh.ccs[mh.txPath])
			mh.ccs[mh.txPath].swapWindow(&mh.ccs[mh.cur])
			a.oq.path = uint8(mh.txPath)
			dst.cc.pathFlight = &mh.flight[mh.txPath]
		}
		mh.lastData[mh.cur] = dst.lastDataSent
		mh.cur = mh.txPath
		if rto := dst.rto.RTO(); rto > 0 {
			now, idle := time.Now(), 64*rto
			if t := mh.lastData[mh.cur]; !t.IsZero() {
				idle = now.Sub(t)
			}
			dst.cc.OnIdle(idle, rto)
			if !dst.lastDataSent.IsZero() {
				dst.lastDataSent = now // that idleness is accounted for
			}
		}
	}
}

// mhInitWindows gives each path its own window, a copy of the first
// one's as initTCB made it (§7.2.1), and has the outstanding queue sum
// acknowledged octets and the flight per path. mu is held.
func (a *Association) mhInitWindows(cfg congestionConfig) {
	for i := range a.mh.ccs {
		a.mh.ccs[i] = newCongestion(cfg)
	}
	clear(a.mh.flight[:])
	clear(a.mh.t3[:])
	a.oq.pathAcked, a.oq.pathFlight, a.oq.path = &a.mh.acked, &a.mh.flight, uint8(a.mh.cur)
	a.primaryPath().cc.pathFlight = &a.mh.flight[a.mh.cur]
}

// mhFastRetransmit reduces the window of each path that lost chunks
// (§7.2.4 step 2 for the destination the chunks were sent to), not that
// of the path the retransmission goes to; it reports whether one entered
// Fast Recovery. mu is held.
func (a *Association) mhFastRetransmit(cur *congestion, highest uint32) bool {
	entered := false
	for i := range a.mh.ccs {
		if a.oq.pathLost&(1<<i) == 0 {
			continue
		}
		cc := &a.mh.ccs[i]
		if pathmgr.ID(i) == a.mh.cur {
			cc = cur
		}
		entered = cc.OnFastRetransmit(highest) || entered
	}
	return entered
}

// mhOnAck applies a SACK to the data path's window with only the octets
// that were sent to that path, judged used or not by that path's flight
// (§7.2: bytes sent elsewhere neither grow nor shrink it), and the
// association's flight with all of them. Another path's Fast Recovery
// ends as the data path's does, at its exit point (§7.2.4). mu is held.
func (a *Association) mhOnAck(cc *congestion, ack ackInfo) {
	ack.AckedBytes, ack.WindowFlight = a.mh.acked[a.mh.cur], a.mh.flightBefore
	cc.OnAck(ack)
	for i := range a.mh.pm.Len() {
		if o := &a.mh.ccs[i]; o.inFR && pathmgr.ID(i) != a.mh.cur && seq.TSNGreaterEq(ack.CumTSNAck, o.frExit) {
			o.inFR = false
		}
	}
}

// mhInFR returns the paths in Fast Recovery, as outstandingQueue.pathFR.
// mu is held.
func (a *Association) mhInFR() uint16 {
	var fr uint16
	for i := range a.mh.pm.Len() {
		if _, in := a.mhCC(pathmgr.ID(i)).InFastRecovery(); in {
			fr |= 1 << i
		}
	}
	return fr
}

// mhRTO is path id's RTO estimator. mu is held.
func (a *Association) mhRTO(id pathmgr.ID) *rtoEstimator {
	if id == a.mh.cur {
		return &a.primaryPath().rto
	}
	return &a.mh.rtos[id]
}

// mhSetRTOs gives the path manager each path's RTO, which times its
// HEARTBEATs. mu is held.
func (a *Association) mhSetRTOs() {
	for i := range a.mh.pm.Len() {
		a.mh.pm.SetRTO(pathmgr.ID(i), a.mhRTO(pathmgr.ID(i)).RTO())
	}
}

// tapSource is the source address the route to dst gave at when.
type tapSource struct {
	dst  netip.AddrPort
	src  netip.Addr
	when time.Time
}

// tapSourceTTL is how long a route's source address is trusted: a route
// that fails over changes it.
const tapSourceTTL = time.Second

// tap shows packet p to Config.Tap, sent to or received from remote. mu
// is held.
func (a *Association) tap(sent bool, remote netip.AddrPort, p []byte) {
	local := a.io.localAP
	if a.mh != nil {
		local = a.mhTapLocal(sent, remote)
	}
	a.cfg.Tap(sent, local, remote, p)
}

// mhTapLocal is the local address Config.Tap shows on the one wildcard
// socket of a multihomed association: for a packet received, the address
// it reached; for one sent to dst, the source address of the kernel's
// route to dst. Where neither is known, the socket's wildcard address.
// mu is held.
func (a *Association) mhTapLocal(sent bool, dst netip.AddrPort) netip.AddrPort {
	port := a.io.localAP.Port()
	if !sent {
		if a.mh.to.IsValid() {
			return netip.AddrPortFrom(a.mh.to, port)
		}
		return a.io.localAP
	}
	now := time.Now()
	for i := range a.mh.tapSrcs {
		if s := &a.mh.tapSrcs[i]; s.dst == dst {
			if now.Sub(s.when) > tapSourceTTL {
				s.src, s.when = a.mh.tapRoute.source(dst), now
			}
			if s.src.IsValid() {
				return netip.AddrPortFrom(s.src, port)
			}
			return a.io.localAP
		}
	}
	src := a.mh.tapRoute.source(dst)
	if len(a.mh.tapSrcs) < 2*pathmgr.DefaultMaxPaths {
		a.mh.tapSrcs = append(a.mh.tapSrcs, tapSource{dst: dst, src: src, when: now})
	}
	if src.IsValid() {
		return netip.AddrPortFrom(src, port)
	}
	return a.io.localAP
}

// tapRemote is the peer address Config.Tap shows: the packet's own
// destination or source on a multihomed association. mu is held.
func (a *Association) tapRemote(sent bool) netip.AddrPort {
	switch {
	case a.mh == nil:
		return a.primaryPath().addr
	case sent:
		return a.mh.dst
	}
	return a.mh.from
}

// mhSent records DATA sent to the data path. mu is held.
func (a *Association) mhSent(now time.Time) { a.mh.pm.Sent(a.mh.txPath, now) }

// mhCC is path id's window. mu is held.
func (a *Association) mhCC(id pathmgr.ID) *congestion {
	if id == a.mh.cur {
		return &a.primaryPath().cc
	}
	return &a.mh.ccs[id]
}

// mhSetT3 starts path id's T3-rtx with that path's RTO if it is not
// running (§6.3.2 R1), or restarts it (R3, §7.2.4 step 4). mu is held.
func (a *Association) mhSetT3(id pathmgr.ID, now time.Time, restart bool) {
	if restart || a.mh.t3[id].IsZero() {
		a.mh.t3[id] = now.Add(a.mhRTO(id).RTO())
	}
	a.mhArmT3()
}

// mhArmT3 arms the association's T3-rtx timer at the earliest path
// deadline, or stops it. mu is held.
func (a *Association) mhArmT3() {
	var next time.Time
	for _, at := range a.mh.t3 {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if next.IsZero() {
		a.io.timers.Stop(timerT3Rtx)
	} else {
		a.io.timers.Set(timerT3Rtx, next)
	}
}

// mhAckTimers applies a SACK to the paths' T3-rtx timers (§6.3.2): a
// path with nothing left in flight stops its timer (R2), one whose
// chunks in flight the SACK newly acknowledged restarts it (R3: its
// earliest outstanding chunk may be among them, by the Cumulative TSN
// Ack or a Gap Ack Block). With chunks outstanding and no timer left (only
// gap-acked or reneged ones), the data path's runs. mu is held.
func (a *Association) mhAckTimers(now time.Time) {
	mh := a.mh
	running := false
	for i := range mh.pm.Len() {
		switch {
		case mh.flight[i] == 0:
			mh.t3[i] = time.Time{}
		case a.oq.pathLive&(1<<i) != 0:
			mh.t3[i] = now.Add(a.mhRTO(pathmgr.ID(i)).RTO())
		}
		running = running || !mh.t3[i].IsZero()
	}
	if !running && a.oq.Len() > 0 {
		mh.t3[mh.cur] = now.Add(a.mhRTO(mh.cur).RTO())
	}
	a.mhArmT3()
}

// mhT3Expired applies the T3-rtx expiry of each path whose deadline has
// passed (RFC 9260 §6.3.3 for that destination): one more error of the
// association (§8.1) and of the path (§8.2; potentially failed, RFC
// 7829), that path's RTO backed off (E2) and window closed to one packet
// (E1, §7.2.3), and the chunks sent there marked for retransmission (E3)
// to an alternate path (§6.4.1). Other paths' windows, timers and
// error counters are left alone. mu is held.
func (a *Association) mhT3Expired(now time.Time) {
	mh := a.mh
	for i := range mh.pm.Len() {
		id := pathmgr.ID(i)
		if at := mh.t3[id]; at.IsZero() || at.After(now) {
			continue
		}
		mh.t3[id] = time.Time{}
		marked, n := a.oq.MarkPathForRetransmit(uint8(id))
		if n == 0 {
			if a.oq.Len() == 0 || a.mhT3Running() {
				continue // nothing of this path left outstanding
			}
			marked = a.oq.MarkAllForRetransmit() // the last timer standing
		}
		a.stats.t3Expiries++
		if a.countError() {
			return
		}
		a.mhCC(id).OnT3Timeout()
		a.mhRTO(id).Backoff()
		a.plpmtudLoss(mh.pm.Info(id).Addr, now)
		mh.pm.Timeout(id, now)
		a.primaryPath().cc.OnRetransmitMarked(marked)
		mh.rtx, mh.rtxFrom = true, id
		if a.cfg.Tracer != nil {
			a.traceEvent(tracing.Event{Kind: tracing.EventT3Expiry, Marked: marked}, now)
		}
	}
	a.mhArmT3()
}

// mhT3Running reports whether a path's T3-rtx runs. mu is held.
func (a *Association) mhT3Running() bool {
	for _, at := range a.mh.t3 {
		if !at.IsZero() {
			return true
		}
	}
	return false
}

// mhAcked: a SACK newly acknowledged DATA in flight to each path of
// pathLive: those paths are alive (§8.2). A chunk marked lost by the
// path's T3-rtx and acknowledged later (its SACK went astray) proves
// nothing about the path now. mu is held.
func (a *Association) mhAcked(now time.Time) {
	for i := range a.mh.pm.Len() {
		if a.oq.pathLive&(1<<i) != 0 {
			if c := a.mh.pm.Acked(pathmgr.ID(i), now); c.To == pathmgr.Active && c.From != pathmgr.Active {
				a.mhPathAnswered(pathmgr.ID(i), now)
			}
		}
	}
}

// mhNoteFrom records the source of packet p about to be received, and
// the local address it reached (zero if not known): replies go there. A
// known address with a new UDP port is the same path at that port once p
// proves the association's (its Verification Tag and checksum): the
// peer's encapsulation port is per address (RFC 6951 §5.4), and a NAT
// may rebind one path's port only. On the passive side an address not yet
// known becomes an unconfirmed path, probed with HEARTBEATs (§5.4) before
// DATA may go to it. It reports whether a path took a new port.
func (a *Association) mhNoteFrom(from netip.AddrPort, to netip.Addr, p []byte) (rebound bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mh == nil || a.state == stateClosed {
		return false
	}
	a.mh.from, a.mh.to = from, to
	if _, ok := a.mh.pm.Lookup(from); ok {
		return false
	}
	if id, ok := a.mh.pm.LookupHost(from.Addr()); ok {
		if len(p) < wire.HeaderLen+4 || binary.BigEndian.Uint32(p[4:8]) != a.tcb.localTag || a.tcb.localTag == 0 || !a.checksumOK(p) {
			return false
		}
		old := a.mh.pm.Info(id).Addr
		a.mh.pm.SetPort(id, from.Port())
		for _, s := range a.plps {
			if s.dst == old {
				s.dst = from
			}
		}
		return true
	}
	if a.mh.passive {
		if _, err := a.mh.pm.Add(from, time.Now()); err == nil {
			a.mhArm()
		}
	}
	return false
}

// mhAddPeers adds the addresses the peer's INIT ACK listed, and those
// Dial was given, as unconfirmed paths (§5.4, §5.1.2). mu is held.
func (a *Association) mhAddPeers(p *wire.InitParams, now time.Time) {
	a.mhAddListed(p.Addrs[:min(max(p.NumAddrs, 0), wire.MaxInitAddrs)], now)
	for _, ap := range a.mh.extra {
		_, _ = a.mh.pm.Add(ap, now)
	}
}

// mhAddListed adds addresses the peer listed in its INIT or INIT ACK as
// unconfirmed paths, sent only HEARTBEATs until one is answered with its
// nonce (§5.1.2, §5.4), at the UDP port of the first path. An address of
// the other family than the socket's cannot be reached and is left out;
// the path manager ignores one already known and caps their number. mu
// is held.
func (a *Association) mhAddListed(addrs []netip.Addr, now time.Time) {
	first := a.mh.pm.Info(0).Addr
	for _, ad := range addrs {
		if ad = ad.Unmap(); ad.Is4() == first.Addr().Is4() {
			_, _ = a.mh.pm.Add(netip.AddrPortFrom(ad, first.Port()), now)
		}
	}
}

// mhHeartbeatInfoLen: the nonce, the send time and the path.
const mhHeartbeatInfoLen = 17

// mhHeartbeat counts the HEARTBEATs unanswered for an RTO and sends those
// due, each alone to its path with a fresh 64-bit random nonce (RFC 9260
// §5.4, §8.3, RFC 7829 §4). mu is held.
func (a *Association) mhHeartbeat(now time.Time) {
	mh := a.mh
	pm := mh.pm
	a.mhSetRTOs()
	mh.changes = pm.Expire(now, mh.changes[:0])
	for _, c := range mh.changes {
		// §8.1: an unanswered HEARTBEAT of a confirmed path counts
		// against Association.Max.Retrans once no path is active, so
		// that an idle association whose every path failed ends; while
		// one is active, probes of a failed one do not.
		if c.From != pathmgr.Unconfirmed && !a.mhAnyActive() && a.countError() {
			return
		}
	}
	if a.tcb.peerTag == 0 {
		a.mhArm()
		return
	}
	for id, ok := pm.Due(now); ok; id, ok = pm.Due(now) {
		nonce := rand.Uint64()
		var info [mhHeartbeatInfoLen]byte
		binary.BigEndian.PutUint64(info[:], nonce)
		binary.BigEndian.PutUint64(info[8:], uint64(now.UnixNano()))
		info[16] = byte(id)
		p := (&wire.Heartbeat{Info: info[:]}).Append(append(mh.hb[:0], a.io.hdr[:]...))
		a.seal(p)
		mh.hb = p
		pm.Probe(id, nonce, now)
		a.stats.heartbeats++
		a.mhSendAlone(p, pm.Info(id).Addr, now)
	}
	a.mhArm()
}

// mhAnyActive reports whether a path is active. mu is held.
func (a *Association) mhAnyActive() bool {
	for i := range a.mh.pm.Len() {
		if a.mh.pm.Info(pathmgr.ID(i)).State == pathmgr.Active {
			return true
		}
	}
	return false
}

// mhHeartbeatAck takes a HEARTBEAT ACK: it confirms or revives its path
// only with the nonce of the HEARTBEAT in flight (§5.4). mu is held.
func (a *Association) mhHeartbeatAck(c wire.Chunk, now time.Time) {
	hb, err := wire.ParseHeartbeat(c)
	if err != nil || len(hb.Info) != mhHeartbeatInfoLen {
		return
	}
	id := pathmgr.ID(hb.Info[16])
	if int(id) >= a.mh.pm.Len() {
		return
	}
	if _, ok := a.mh.pm.HeartbeatAck(id, binary.BigEndian.Uint64(hb.Info), now); ok {
		if rtt := now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(hb.Info[8:])))); rtt >= 0 {
			a.mhRTO(id).Observe(rtt) // §8.3: an RTT measurement of that path
		}
		a.clearErrors()
		a.mhPathAnswered(id, now)
		a.mhArm()
	}
}

// mhHeartbeatReply answers a HEARTBEAT at once, to its source. mu is held.
func (a *Association) mhHeartbeatReply(ack *wire.Heartbeat) {
	p := ack.Append(append(a.mh.hb[:0], a.io.hdr[:]...))
	a.seal(p)
	a.mh.hb = p
	a.mhSendAlone(p, a.mh.from, time.Now())
}

// mhSendAlone sends packet p to dst at once. mu is held.
func (a *Association) mhSendAlone(p []byte, dst netip.AddrPort, now time.Time) {
	a.mh.dst = dst
	a.stats.packetsSent++
	if a.cfg.Tap != nil {
		a.tap(true, dst, p)
	}
	if err := a.io.out(p); err != nil {
		a.stats.sendErrors++
		a.mhSendFailed(err, now)
	}
}

// mhArm points the heartbeat timer at the path manager's deadline. mu is
// held.
func (a *Association) mhArm() {
	if d := a.mh.pm.Deadline(); !d.IsZero() && a.state != stateClosed {
		a.io.timers.Set(timerHeartbeat, d)
	}
}

// mhPathStats returns the figures of each path. mu is held.
func (a *Association) mhPathStats() []PathStats {
	pm := a.mh.pm
	out := make([]PathStats, pm.Len())
	for i := range out {
		in, rto := pm.Info(pathmgr.ID(i)), a.mhRTO(pathmgr.ID(i))
		cc := &a.mh.ccs[i]
		if pathmgr.ID(i) == a.mh.cur {
			cc = &a.primaryPath().cc
		}
		out[i] = PathStats{Addr: in.Addr, State: in.State.String(), Primary: in.Primary,
			SRTT: rto.SRTT(), RTO: rto.RTO(), OctetsSent: a.mh.octets[i], Errors: in.Errors,
			Cwnd: cc.Cwnd(), SSThresh: cc.SSThresh(), PLPMTU: a.mhPLPMTU(in.Addr)}
	}
	return out
}

// mhReadLoop reads a multihomed active side's socket until it is closed:
// every packet, from whichever of the peer's addresses, is the
// association's, unless it reached an address the association was not
// given (Config.LocalAddr): the wildcard socket takes those too.
func mhReadLoop(conn *net.UDPConn, a *Association, locals []netip.Addr) {
	r := newUDPReader(conn, !a.cfg.NoOffload, len(locals) > 0 || a.cfg.Tap != nil)
	bp := getBuf(largeBuf)
	for {
		n, seg, from, to, err := r.read(*bp)
		if err != nil {
			if transientReadError(err) {
				continue
			}
			putBuf(bp)
			a.mu.Lock()
			if a.state != stateClosed {
				a.terminate(fmt.Errorf("%w: socket: %w", ErrClosed, err))
			}
			a.mu.Unlock()
			return
		}
		if to.IsValid() && len(locals) > 0 && !slices.Contains(locals, to) {
			a.mu.Lock()
			a.stats.unbound++
			a.mu.Unlock()
			continue
		}
		if seg > 0 && seg < n {
			// One flow's datagrams that the kernel coalesced (UDP_GRO):
			// one source, one destination. Its SACK may be left to the
			// next read (and go to that read's source, RFC 9260 §6.4).
			a.mhNoteFrom(unmap(from), to, (*bp)[:seg])
			if a.receiveSegments((*bp)[:n], bp, seg, !r.deferSACK()) {
				bp = getBuf(largeBuf)
			}
			continue
		}
		r.sackSent()
		a.mhNoteFrom(unmap(from), to, (*bp)[:n])
		if a.receive((*bp)[:n], bp) {
			bp = getBuf(largeBuf)
		}
	}
}

// dialMulti is Dial to several peer addresses or from several local ones
// (RFC 9260 §6.4): the INIT goes to the first peer address, the others
// and those the INIT ACK lists become unconfirmed paths.
func dialMulti(ctx context.Context, network, address string, cfg *Config) (*Association, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c = c.multihomed().normalized()
	peers, port, err := splitHosts(address)
	if err != nil {
		return nil, err
	}
	var locals []netip.Addr
	var lport uint16
	if c.LocalAddr != "" {
		if locals, lport, err = splitHosts(c.LocalAddr); err != nil {
			return nil, err
		}
	}
	conn, err := wildcardUDP(network, peers, lport)
	if err != nil {
		return nil, err
	}
	first := netip.AddrPortFrom(peers[0], port)
	a := newAssociation(c, nil, conn.LocalAddr(), net.UDPAddrFromAddrPort(first), c.maxPacketFor(first.Addr()))
	a.primaryPath().addr = first
	a.io.localAP = connAddrPort(conn.LocalAddr())
	a.io.closeSocket = func() { _ = conn.Close() }
	if err := a.newMultihome(conn, first, time.Now()); err != nil {
		_ = conn.Close()
		return nil, err
	}
	var route *routeProbe
	if (c.MTU <= 0 && !c.NoPLPMTUD) || c.Tap != nil {
		route = newRouteProbe()
		a.io.closeSocket = func() { _ = conn.Close(); route.close() }
		a.mh.tapRoute = route
	}
	if c.MTU <= 0 && !c.NoPLPMTUD {
		if df, err := dplpmtud.NewSharedDF(conn); err == nil {
			a.mhProbing(df, route)
		}
	}
	if len(locals) > 1 {
		a.mh.locals = locals
	}
	bound := locals
	if slices.ContainsFunc(locals, netip.Addr.IsUnspecified) {
		bound = nil
	}
	for _, h := range peers[1:] {
		a.mh.extra = append(a.mh.extra, netip.AddrPortFrom(h, port))
	}
	a.tcb.localPort, a.tcb.peerPort = c.LocalPort, c.PeerPort
	a.tcb.localTag, a.tcb.localInitialTSN = handshake.RandomTag(), handshake.RandomTag()
	go mhReadLoop(conn, a, bound)
	a.mu.Lock()
	a.sendInit(time.Now())
	a.mu.Unlock()
	select {
	case <-a.estab:
	case <-ctx.Done():
		_ = a.Abort()
		return nil, ctx.Err()
	}
	a.mu.Lock()
	st, aerr := a.state, a.err
	a.mu.Unlock()
	if st == stateClosed {
		if aerr == nil {
			aerr = ErrClosed
		}
		return nil, aerr
	}
	return a, nil
}
