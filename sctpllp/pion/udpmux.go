package pion

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pion/transport/v5/deadline"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// udpMux turns one UDP socket into one net.Conn per remote address, for the
// passive side of SCTP over UDP: every pion association reads and writes
// its own net.Conn. A datagram from an unknown address creates nothing: the
// handshaker (pion_handshake.go) answers an INIT statelessly, and a conn is
// made only for a valid COOKIE ECHO. (With Config.LegacyHandshake a
// datagram whose first chunk looks like an INIT creates a conn and a pion
// association, as before.)
type udpMux struct {
	pc       *net.UDPConn
	hs       *handshaker // nil: legacy handshake
	acceptCh chan *muxConn
	done     chan struct{}
	readDone chan struct{}

	mu        sync.Mutex
	conns     map[netip.AddrPort]*muxConn
	perIP     map[netip.Addr]int // stateless associations per peer address
	accepting bool
	refs      int // listener + live conns; the socket closes at zero
	closeOnce sync.Once
}

// muxQueueLen bounds the datagrams queued per remote; excess is dropped as
// a full socket buffer would drop it.
const muxQueueLen = 4096

// maxDatagram is the largest datagram read: pion never sends an SCTP packet
// above 8192 octets.
const maxDatagram = 8192

func newUDPMux(pc *net.UDPConn, backlog int, cfg Config) *udpMux {
	m := &udpMux{
		pc:        pc,
		acceptCh:  make(chan *muxConn, backlog),
		done:      make(chan struct{}),
		readDone:  make(chan struct{}),
		conns:     make(map[netip.AddrPort]*muxConn),
		perIP:     make(map[netip.Addr]int),
		accepting: true,
		refs:      1,
	}
	if !cfg.LegacyHandshake {
		m.hs = newHandshaker(cfg)
	}
	go m.readLoop()
	return m
}

func looksLikeInit(b []byte) bool {
	// Common header (12) then chunk type 1 (INIT) with its 20-octet fixed part.
	return len(b) >= 12+20 && b[12] == 1
}

func (m *udpMux) readLoop() {
	defer close(m.readDone)
	for {
		bp := bufpool.Get(maxDatagram)
		n, raddr, err := m.pc.ReadFromUDPAddrPort(*bp)
		if err != nil {
			bufpool.Put(bp)
			m.mu.Lock()
			for _, c := range m.conns {
				c.fail(err)
			}
			m.mu.Unlock()
			return
		}
		*bp = (*bp)[:n]
		raddr = netip.AddrPortFrom(raddr.Addr().Unmap(), raddr.Port())
		m.mu.Lock()
		c, ok := m.conns[raddr]
		switch {
		case ok && c.snap != nil:
			ok = m.known(c, bp)
		case !ok && m.accepting && m.hs != nil:
			c, ok = m.unknown(raddr, bp)
		case !ok && m.accepting && looksLikeInit(*bp):
			c = m.newConn(raddr)
			select {
			case m.acceptCh <- c:
				m.conns[raddr] = c
				m.refs++
				ok = true
			default:
			}
		}
		m.mu.Unlock()
		if !ok {
			bufpool.Put(bp)
			continue
		}
		select {
		case c.q <- bp:
		default:
			bufpool.Put(bp) // queue full: drop, as the kernel would
		}
	}
}

// unknown runs the stateless handshake for a datagram from an address
// with no conn; m.mu is held. A valid COOKIE ECHO makes the conn, queues
// the chunks bundled after it in *bp, and reports true.
func (m *udpMux) unknown(raddr netip.AddrPort, bp *[]byte) (*muxConn, bool) {
	send := func(p []byte) { _, _ = m.pc.WriteToUDPAddrPort(p, raddr) }
	s, rest := m.hs.unknown(*bp, raddr, send)
	if s == nil {
		return nil, false
	}
	if len(m.conns) >= m.hs.maxAssocs || m.perIP[raddr.Addr()] >= m.hs.maxPerIP {
		// The peer proved it receives, but the listener is full, or this
		// address holds its share: an ABORT (rate-limited), no state.
		m.hs.refuseAssociation(s, send)
		return nil, false
	}
	c := m.newConn(raddr)
	c.snap = s
	select {
	case m.acceptCh <- c:
	default:
		m.hs.CountBacklogFull() // the peer retransmits its COOKIE ECHO
		return nil, false
	}
	m.conns[raddr] = c
	m.perIP[raddr.Addr()]++
	m.refs++
	m.hs.CountCookieOK()
	m.hs.sendCookieAck(s, send)
	return c, m.keepRest(bp, rest)
}

// known filters a datagram of a statelessly made association; m.mu is
// held. It drops a packet without the association's tag (RFC 9260 §8.5),
// and answers a retransmitted COOKIE ECHO (our COOKIE ACK was lost) with
// another COOKIE ACK, passing on only the chunks bundled after it.
func (m *udpMux) known(c *muxConn, bp *[]byte) bool {
	b := *bp
	if !tagOK(b, c.snap) {
		m.hs.CountForeignTag()
		return false
	}
	if len(b) > wire.HeaderLen && wire.ChunkType(b[wire.HeaderLen]) == wire.ChunkCookieEcho {
		pkt, err := wire.ParsePacket(b)
		if err != nil {
			return false
		}
		it := pkt.Chunks()
		ch, _ := it.Next()
		if ck, err := m.hs.VerifyCookieEcho(pkt.Header, ch, c.raddr); err != nil || ck.LocalVerificationTag != c.snap.cookie.LocalVerificationTag {
			return false
		}
		m.hs.sendCookieAck(c.snap, func(p []byte) { _, _ = m.pc.WriteToUDPAddrPort(p, c.raddr) })
		return m.keepRest(bp, it.Rest())
	}
	return true
}

// keepRest makes *bp the packet of its common header and the chunks rest
// (a suffix of *bp), and reports whether there are any.
func (m *udpMux) keepRest(bp *[]byte, rest []byte) bool {
	if len(rest) == 0 {
		return false
	}
	b := *bp
	n := copy(b[wire.HeaderLen:], rest)
	*bp = b[:wire.HeaderLen+n]
	wire.SetChecksum(*bp)
	return true
}

func (m *udpMux) newConn(raddr netip.AddrPort) *muxConn {
	return &muxConn{
		m:      m,
		raddr:  raddr,
		addr:   net.UDPAddrFromAddrPort(raddr),
		q:      make(chan *[]byte, muxQueueLen),
		closed: make(chan struct{}),
		rd:     deadline.New(),
		failed: make(chan struct{}),
	}
}

// stopAccepting drops the listener's reference.
func (m *udpMux) stopAccepting() {
	m.mu.Lock()
	if !m.accepting {
		m.mu.Unlock()
		return
	}
	m.accepting = false
	close(m.done)
	m.mu.Unlock()
	m.release()
}

func (m *udpMux) release() {
	m.mu.Lock()
	m.refs--
	last := m.refs == 0
	m.mu.Unlock()
	if last {
		m.closeOnce.Do(func() {
			_ = m.pc.Close()
			<-m.readDone
		})
	}
}

// muxConn is one remote address's view of the shared UDP socket.
type muxConn struct {
	m      *udpMux
	raddr  netip.AddrPort
	addr   *net.UDPAddr
	q      chan *[]byte
	rd     *deadline.Deadline
	once   sync.Once
	closed chan struct{}

	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	// snap is the association a valid COOKIE ECHO made; nil for a conn of
	// the legacy handshake.
	snap *snapInit
}

func (c *muxConn) fail(err error) {
	c.failOnce.Do(func() { c.failErr = err; close(c.failed) })
}

// Read returns the next datagram from the remote.
func (c *muxConn) Read(p []byte) (int, error) {
	select {
	case bp := <-c.q:
		n := copy(p, *bp)
		bufpool.Put(bp)
		if c.snap != nil {
			// pion's SNAP association uses ports 5000/5000.
			rewritePorts(p[:n], pionSNAPPort, pionSNAPPort)
		}
		return n, nil
	case <-c.closed:
		return 0, net.ErrClosed
	case <-c.failed:
		return 0, c.failErr
	case <-c.rd.Done():
		return 0, os.ErrDeadlineExceeded
	}
}

// Write sends one datagram to the remote.
func (c *muxConn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	if s := c.snap; s != nil && (s.cookie.LocalPort != pionSNAPPort || s.cookie.PeerPort != pionSNAPPort) {
		// The peer's ports, not pion's 5000/5000; pion keeps p.
		bp := bufpool.Get(len(p))
		copy(*bp, p)
		rewritePorts(*bp, s.cookie.LocalPort, s.cookie.PeerPort)
		_, err := c.m.pc.WriteToUDPAddrPort(*bp, c.raddr)
		bufpool.Put(bp)
		return len(p), err
	}
	return c.m.pc.WriteToUDPAddrPort(p, c.raddr)
}

// Close detaches the conn; the socket closes with the last conn once the
// listener is closed.
func (c *muxConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.m.mu.Lock()
		if c.m.conns[c.raddr] == c {
			delete(c.m.conns, c.raddr)
			if c.snap != nil {
				if c.m.perIP[c.raddr.Addr()]--; c.m.perIP[c.raddr.Addr()] <= 0 {
					delete(c.m.perIP, c.raddr.Addr())
				}
			}
		}
		c.m.mu.Unlock()
		for {
			select {
			case bp := <-c.q:
				bufpool.Put(bp)
				continue
			default:
			}
			break
		}
		c.m.release()
	})
	return nil
}

// LocalAddr returns the socket's address.
func (c *muxConn) LocalAddr() net.Addr { return c.m.pc.LocalAddr() }

// RemoteAddr returns the remote's address.
func (c *muxConn) RemoteAddr() net.Addr { return c.addr }

// SetDeadline sets the read deadline (writes never block).
func (c *muxConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline sets the read deadline.
func (c *muxConn) SetReadDeadline(t time.Time) error { c.rd.Set(t); return nil }

// SetWriteDeadline is a no-op: datagram writes do not block.
func (c *muxConn) SetWriteDeadline(time.Time) error { return nil }

var errListenerClosed = errors.New("sctpllp: listener closed")
