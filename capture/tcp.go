package capture

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// maxSegment is the largest TCP payload per recorded packet.
const maxSegment = maxIPPayload - tcpHeaderLen

// initial sequence numbers of the synthesized connection (any value
// does; distinct ones make the directions easy to tell apart).
const (
	isnInitiator = 0x10000000
	isnResponder = 0x20000000
)

// tcpConn records a stream conn as TCP segments.
type tcpConn struct {
	net.Conn
	w             *Writer
	local, remote netip.AddrPort
	// txMu and rxMu serialise each direction's records; the next
	// sequence numbers are atomics so that each direction reads the
	// other's (its acknowledgement number) without taking its lock.
	txMu, rxMu   sync.Mutex
	txSeq, rxSeq atomic.Uint32
	closeOnce    sync.Once
}

// Conn returns c recording its byte stream as TCP segments between c's
// local and remote addresses: a three-way handshake now (initiator: the
// side that connected), one or more segments per Read and Write, a FIN
// on Close.
func (w *Writer) Conn(c net.Conn, initiator bool) net.Conn {
	l, r := endpoints(addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
	t := &tcpConn{Conn: c, w: w, local: l, remote: r}
	tx, rx := uint32(isnResponder), uint32(isnInitiator)
	if initiator {
		tx, rx = isnInitiator, isnResponder
		w.recordTCP(l, r, tx, 0, tcpSYN, nil)
		w.recordTCP(r, l, rx, tx+1, tcpSYN|tcpACK, nil)
		w.recordTCP(l, r, tx+1, rx+1, tcpACK, nil)
	} else {
		w.recordTCP(r, l, rx, 0, tcpSYN, nil)
		w.recordTCP(l, r, tx, rx+1, tcpSYN|tcpACK, nil)
		w.recordTCP(r, l, rx+1, tx+1, tcpACK, nil)
	}
	t.txSeq.Store(tx + 1)
	t.rxSeq.Store(rx + 1)
	return t
}

// Unwrap returns the recorded conn.
func (c *tcpConn) Unwrap() net.Conn { return c.Conn }

// Read implements net.Conn.
func (c *tcpConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.rxMu.Lock()
		ack := c.txSeq.Load()
		for p := b[:n]; len(p) > 0; {
			k := min(len(p), maxSegment)
			c.w.recordTCP(c.remote, c.local, c.rxSeq.Load(), ack, tcpPSH|tcpACK, p[:k])
			c.rxSeq.Add(uint32(k))
			p = p[k:]
		}
		c.rxMu.Unlock()
	}
	return n, err
}

// Write implements net.Conn.
func (c *tcpConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.txMu.Lock()
		ack := c.rxSeq.Load()
		for p := b[:n]; len(p) > 0; {
			k := min(len(p), maxSegment)
			c.w.recordTCP(c.local, c.remote, c.txSeq.Load(), ack, tcpPSH|tcpACK, p[:k])
			c.txSeq.Add(uint32(k))
			p = p[k:]
		}
		c.txMu.Unlock()
	}
	return n, err
}

// Close implements net.Conn: a FIN from this side is recorded once.
func (c *tcpConn) Close() error {
	c.closeOnce.Do(func() {
		c.txMu.Lock()
		c.w.recordTCP(c.local, c.remote, c.txSeq.Load(), c.rxSeq.Load(), tcpFIN|tcpACK, nil)
		c.txSeq.Add(1)
		c.txMu.Unlock()
	})
	return c.Conn.Close()
}
