package sctpllp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pion/transport/v5/deadline"
)

// udpMux turns one UDP socket into one net.Conn per remote address, for the
// passive side of SCTP over UDP: every pion association reads and writes
// its own net.Conn. A datagram from an unknown address creates a conn only
// if it looks like an SCTP packet whose first chunk is INIT (RFC 4960 §3,
// §3.3.2), so stray datagrams cannot make the listener allocate
// associations.
type udpMux struct {
	pc       *net.UDPConn
	acceptCh chan *muxConn
	done     chan struct{}
	readDone chan struct{}

	mu        sync.Mutex
	conns     map[netip.AddrPort]*muxConn
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

func newUDPMux(pc *net.UDPConn, backlog int) *udpMux {
	m := &udpMux{
		pc:        pc,
		acceptCh:  make(chan *muxConn, backlog),
		done:      make(chan struct{}),
		readDone:  make(chan struct{}),
		conns:     make(map[netip.AddrPort]*muxConn),
		accepting: true,
		refs:      1,
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
		bp := getBuf(maxDatagram)
		n, raddr, err := m.pc.ReadFromUDPAddrPort(*bp)
		if err != nil {
			putBuf(bp)
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
		if !ok && m.accepting && looksLikeInit(*bp) {
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
			putBuf(bp)
			continue
		}
		select {
		case c.q <- bp:
		default:
			putBuf(bp) // queue full: drop, as the kernel would
		}
	}
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
}

func (c *muxConn) fail(err error) {
	c.failOnce.Do(func() { c.failErr = err; close(c.failed) })
}

// Read returns the next datagram from the remote.
func (c *muxConn) Read(p []byte) (int, error) {
	select {
	case bp := <-c.q:
		n := copy(p, *bp)
		putBuf(bp)
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
		}
		c.m.mu.Unlock()
		for {
			select {
			case bp := <-c.q:
				putBuf(bp)
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
