package sctp

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/sockbuf"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// Listener accepts associations on one UDP socket. Unauthenticated
// packets go through a Responder: nothing is kept for a peer before its
// valid COOKIE ECHO (RFC 9260 §5.1.3), and associations are capped in all
// and per peer address.
type Listener struct {
	// One goroutine reads the socket and only demultiplexes: each packet of a
	// known association goes to that association's bounded queue, which a
	// worker of its own drains while it holds packets (listener_rx.go), so
	// that no association's packets wait for another's. A reaper ends the
	// associations that make no progress (listener_reap.go), and a full table
	// evicts the least useful one before it refuses a new peer.

	pc     *net.UDPConn
	cfg    Config
	resp   *handshake.Responder
	accept chan *Association
	done   chan struct{}

	// admit serialises the Responder (its scratch buffers are unshared)
	// and the admission of associations (caps, eviction, the backlog).
	admit sync.Mutex

	mu        sync.Mutex
	assocs    map[assocKey]*member
	byTag     map[uint32]*member // by our Verification Tag
	perIP     map[netip.Addr]int
	accepting bool
	closeOnce sync.Once
	readDone  chan struct{}
	probe     *routeProbe        // route MTU per peer; nil with Config.MTU set
	offload   bool               // UDP_SEGMENT on the socket (Config.NoOffload)
	multi     bool               // several local addresses (multihome.go)
	hosts     []netip.Addr       // those addresses, for Addr
	df        *dplpmtud.SharedDF // DF on the socket, for PLPMTUD; nil: no probing

	// queued counts the buffer octets held in every association's queue;
	// queueCap and listenerQueueCap bound one queue and all of them.
	queued           atomic.Int64
	queueCap         int
	listenerQueueCap int64
	stats            listenerCounters
	evictAfter       time.Duration // l.mu; defaultEvictAfter
	stallTimeout     time.Duration // l.mu; Config.StallTimeout
}

// assocKey tells a listener's associations apart by the peer's UDP
// address and the SCTP ports (RFC 9260 §1.5.1: an association is named by
// its endpoints, address and port; RFC 6951 §5.1: the UDP port is below
// them).
type assocKey struct {
	peer                netip.AddrPort
	peerPort, localPort uint16
}

// member is one association of a listener with its receive queue and the
// reaper's view of it.
type member struct {
	a   *Association
	key assocKey // l.mu
	tag uint32   // our Verification Tag
	// peer is where the association sends (the worker's copy of key.peer).
	peer     netip.AddrPort
	lastRecv atomic.Int64 // UnixNano of the last packet queued for it

	work    func() // l.work(m)
	qmu     sync.Mutex
	q       []rxItem
	head    int
	qBytes  int
	running bool // a worker drains q

	// The reaper's view (l.mu): busy since since without progress.
	mark  progressMark
	busy  bool
	since time.Time
}

// listenerCounters are a listener's own counters.
type listenerCounters = procstat.ListenerCounters

// ListenerStats are a listener's counters of its associations.
type ListenerStats = procstat.ListenerStats

// Listen listens for associations over UDP on address (network "udp",
// "udp4" or "udp6"). Several hosts of one port, "10.0.1.1/10.0.2.1:7400",
// make the listener multihomed (RFC 9260 §6.4): one socket bound to the
// wildcard address and that port, and INIT ACKs listing the hosts. cfg
// may be nil.
func Listen(network, address string, cfg *Config) (*Listener, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := overUDP(&c); err != nil {
		return nil, err
	}
	if multiHosts(address) {
		c = c.multihomed()
	}
	c = c.normalized()
	if c.StallTimeout == 0 {
		c.StallTimeout = defaultStallTimeout
	}
	var hosts []netip.Addr
	var pc *net.UDPConn
	if multiHosts(address) {
		var port uint16
		var err error
		if hosts, port, err = splitHosts(address); err != nil {
			return nil, err
		}
		if pc, err = wildcardUDP(network, hosts, port); err != nil {
			return nil, err
		}
	} else {
		laddr, err := net.ResolveUDPAddr(network, address)
		if err != nil {
			return nil, err
		}
		if pc, err = net.ListenUDP(network, laddr); err != nil {
			return nil, err
		}
	}
	sockbuf.SetSocketBuffers(pc, socketBuffer)
	qc := 2*c.ReceiveBuffer + 256<<10
	l := &Listener{
		pc:               pc,
		cfg:              c,
		resp:             newResponderFor(c, hosts),
		multi:            hosts != nil,
		hosts:            hosts,
		accept:           make(chan *Association, c.Backlog),
		done:             make(chan struct{}),
		assocs:           make(map[assocKey]*member),
		byTag:            make(map[uint32]*member),
		perIP:            make(map[netip.Addr]int),
		accepting:        true,
		readDone:         make(chan struct{}),
		offload:          !c.NoOffload && udpOffloadSupported(pc),
		queueCap:         qc,
		listenerQueueCap: max(int64(listenerQueueBytes), 4*int64(qc)),
		evictAfter:       defaultEvictAfter,
		stallTimeout:     c.StallTimeout,
	}
	if c.MTU <= 0 || (hosts != nil && c.Tap != nil) {
		l.probe = newRouteProbe()
	}
	if c.MTU <= 0 {
		if !c.NoPLPMTUD {
			if df, err := dplpmtud.NewSharedDF(pc); err == nil {
				l.df = df
			}
		}
	}
	go l.readLoop()
	if c.StallTimeout > 0 {
		go l.reap()
	}
	return l, nil
}

// Addr returns the listening UDP address; a multihomed listener's is its
// hosts and port, "10.0.1.1/10.0.2.1:7400", which Dial takes.
func (l *Listener) Addr() net.Addr {
	if l.hosts == nil {
		return l.pc.LocalAddr()
	}
	return hostsAddr{l.hosts, l.pc.LocalAddr().(*net.UDPAddr).AddrPort().Port()}
}

// HandshakeStats returns the counters of unauthenticated traffic.
func (l *Listener) HandshakeStats() HandshakeStats { return l.resp.Stats() }

// Stats returns the counters of the listener's associations.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	n := len(l.assocs)
	l.mu.Unlock()
	s := &l.stats
	return ListenerStats{Associations: n, QueueDrops: s.QueueDrops.Load(), Evicted: s.Evicted.Load(),
		Stalled: s.Stalled.Load(), Rebinds: s.Rebinds.Load(), Unbound: s.Unbound.Load()}
}

// Accept waits for the next established association.
func (l *Listener) Accept(ctx context.Context) (*Association, error) {
	select {
	case a := <-l.accept:
		return a, nil
	case <-l.done:
		return nil, fmt.Errorf("%w: listener closed", net.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops accepting; associations not yet accepted are aborted, those
// accepted carry on, and the socket closes with the last of them.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.admit.Lock()
		l.mu.Lock()
		l.accepting = false
		l.mu.Unlock()
		l.admit.Unlock()
		for {
			select {
			case a := <-l.accept:
				_ = a.Abort()
				continue
			default:
			}
			break
		}
		l.maybeCloseSocket()
	})
	return nil
}

func (l *Listener) maybeCloseSocket() {
	l.mu.Lock()
	idle := !l.accepting && len(l.assocs) == 0
	l.mu.Unlock()
	if idle {
		_ = l.pc.Close()
		l.probe.close()
	}
}

// lookup finds the association of packet b from from (l.mu held): by
// our Verification Tag, the peer's address and the SCTP ports; failing
// that (an INIT, an ABORT with the T bit, a COOKIE ECHO of a restart) by
// the peer's UDP address and the ports. A packet with an association's
// tag from the peer's address but another UDP port finds the association
// too (RFC 6951 §5.4: the worker takes the new port once the packet
// checks out). On a multihomed listener the tag and ports find it from
// any address: another of the peer's addresses is a path (§6.4).
func (l *Listener) lookup(b []byte, from netip.AddrPort) *member {
	if len(b) < wire.HeaderLen {
		return nil
	}
	sp, dp := binary.BigEndian.Uint16(b[0:2]), binary.BigEndian.Uint16(b[2:4])
	tag := binary.BigEndian.Uint32(b[4:8])
	if m := l.byTag[tag]; m != nil && (m.key.peer.Addr() == from.Addr() || l.multi) && m.key.peerPort == sp && m.key.localPort == dp {
		return m
	}
	return l.assocs[assocKey{peer: from, peerPort: sp, localPort: dp}]
}

// unknown runs the stateless handshake for a packet of no association
// and makes the association of a valid COOKIE ECHO. It reports whether
// the new association kept the buffer bp.
func (l *Listener) unknown(b []byte, bp *[]byte, from netip.AddrPort) bool {
	l.admit.Lock()
	defer l.admit.Unlock()
	if !l.isAccepting() {
		return false
	}
	send := func(p []byte) { _, _ = l.pc.WriteToUDPAddrPort(p, from) }
	ck, rest, ok := l.resp.Unknown(b, from, send)
	if !ok {
		return false
	}
	return l.adopt(&ck, rest, bp, from)
}

func (l *Listener) isAccepting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepting
}

// maxPacketFor is the largest packet toward peer: from Config.MTU if set,
// else from the route's MTU as the dialer's connected socket knows it
// (routeProbe; loopback keeps loopbackMTU), else defaultMTU. Asked once
// per association, after a valid COOKIE ECHO.
func (l *Listener) maxPacketFor(peer netip.AddrPort) int {
	if l.cfg.MTU <= 0 && !peer.Addr().IsLoopback() {
		if mtu := l.probe.mtu(peer); mtu > 0 {
			c := l.cfg
			c.MTU = mtu
			return c.maxPacketFor(peer.Addr())
		}
	}
	return l.cfg.maxPacketFor(peer.Addr())
}

// forget removes m from the listener's tables at once: the association
// ended, and packets from its peer get the answers of RFC 9260 §8.4 from
// now on. Called from the association's end, with its mu held.
func (l *Listener) forget(m *member) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.assocs[m.key] != m {
		return
	}
	delete(l.assocs, m.key)
	procstat.Listeners.Associations.Add(-1)
	if l.byTag[m.tag] == m {
		delete(l.byTag, m.tag)
	}
	ip := m.key.peer.Addr()
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// adopt makes the association of a verified cookie ck, with the chunks
// bundled after its COOKIE ECHO, and queues it for Accept: if the
// listener's caps allow, after evicting the least useful association
// when the table is full (otherwise an ABORT, or nothing while the accept
// queue is full: the peer retransmits). It reports whether the
// association kept the buffer bp. l.admit is held.
func (l *Listener) adopt(ck *handshake.Cookie, rest []byte, bp *[]byte, from netip.AddrPort) bool {
	send := func(p []byte) { _, _ = l.pc.WriteToUDPAddrPort(p, from) }
	key := assocKey{peer: from, peerPort: ck.PeerPort, localPort: ck.LocalPort}
	if !l.makeRoom(from.Addr(), ck.LocalVerificationTag) {
		l.resp.Refuse(ck, send)
		return false
	}
	if len(l.accept) == cap(l.accept) {
		// Only admitters send on l.accept: room now is room below.
		l.resp.CountBacklogFull() // the peer retransmits its COOKIE ECHO
		return false
	}
	out := func(p []byte) error { _, err := l.pc.WriteToUDPAddrPort(p, from); return err }
	a := newAssociation(l.cfg, out, l.pc.LocalAddr(), net.UDPAddrFromAddrPort(from), l.maxPacketFor(from))
	if !l.cfg.NoOffload {
		a.io.batch = newBatch(l.pc, from, from.Addr(), out, l.offload, l.cfg.offloadLocal)
	}
	a.primaryPath().addr = from
	if l.multi {
		if err := a.newMultihome(l.pc, from, time.Now()); err != nil {
			return false
		}
		a.mh.passive = true
		a.mh.tapRoute = l.probe
		a.mhProbing(l.df, l.probe)
	} else if l.df != nil {
		if mtu := l.probe.mtu(from); mtu > 0 {
			a.enablePLPMTUD(pathProbe{routeMTU: mtu, overhead: ipUDPOverhead(from.Addr()), df: l.df,
				kernelMTU: func() int { return l.probe.mtu(from) }})
		}
	}
	a.io.localAP = unmap(l.pc.LocalAddr().(*net.UDPAddr).AddrPort())
	a.verifyCookie = l.resp.VerifyCookieEcho
	m := &member{a: a, key: key, tag: ck.LocalVerificationTag, peer: from, since: time.Now()}
	m.work = func() { l.work(m) }
	m.lastRecv.Store(time.Now().UnixNano())
	l.mu.Lock()
	if l.assocs[key] != nil || l.byTag[m.tag] != nil {
		// Taken since makeRoom (a packet of that association raced this
		// COOKIE ECHO): the peer retransmits.
		l.mu.Unlock()
		return false
	}
	l.assocs[key] = m
	procstat.Listeners.Associations.Add(1)
	l.byTag[m.tag] = m
	l.perIP[from.Addr()]++
	l.mu.Unlock()
	// Called by terminate with a.mu held: the association leaves the
	// table before its mutex is released.
	a.io.release = func() {
		l.forget(m)
		l.maybeCloseSocket()
	}
	l.resp.CountCookieOK()
	// Established (and its COOKIE ACK sent) before anyone can accept it.
	kept := a.adoptCookie(ck, rest, bp)
	l.accept <- a
	return kept
}
