package capture

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
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
	peerFinOnce  sync.Once // the peer's FIN, seen as EOF
	joined       []byte    // WriteBuffers' pieces in one (under txMu)
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
		c.segments(false, b[:n])
		c.rxMu.Unlock()
	}
	if errors.Is(err, io.EOF) {
		c.peerFinOnce.Do(func() {
			c.rxMu.Lock()
			c.w.recordTCP(c.remote, c.local, c.rxSeq.Load(), c.txSeq.Load(), tcpFIN|tcpACK, nil)
			c.rxSeq.Add(1)
			c.rxMu.Unlock()
		})
	}
	return n, err
}

// Write implements net.Conn.
func (c *tcpConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.txMu.Lock()
		c.segments(true, b[:n])
		c.txMu.Unlock()
	}
	return n, err
}

// segments records data sent (out) or received as segments of at most
// maxSegment octets; the direction's lock is held.
func (c *tcpConn) segments(out bool, data []byte) {
	src, dst, seq, ack := c.remote, c.local, &c.rxSeq, c.txSeq.Load()
	if out {
		src, dst, seq, ack = c.local, c.remote, &c.txSeq, c.rxSeq.Load()
	}
	for len(data) > 0 {
		k := min(len(data), maxSegment)
		c.w.recordTCP(src, dst, seq.Load(), ack, tcpPSH|tcpACK, data[:k])
		seq.Add(uint32(k))
		data = data[k:]
	}
}

// WriteBuffers sends b with one writev on the recorded conn (which
// net.Buffers.WriteTo does only for the net package's own conns) and
// records what was sent as one segment (mpa.BuffersWriter).
func (c *tcpConn) WriteBuffers(b *net.Buffers) (int64, error) {
	// WriteTo consumes *b and clears its elements: keep the slices.
	var saved [8][]byte
	parts := append(saved[:0], *b...)
	n, err := b.WriteTo(c.Conn)
	if n > 0 {
		c.txMu.Lock()
		c.joined = c.joined[:0]
		left := n
		for _, p := range parts {
			k := min(int64(len(p)), left)
			c.joined = append(c.joined, p[:k]...)
			left -= k
		}
		c.segments(true, c.joined)
		c.txMu.Unlock()
	}
	return n, err
}

// Close implements net.Conn: a FIN from this side is recorded once.
func (c *tcpConn) Close() error {
	c.fin()
	return c.Conn.Close()
}

// CloseWrite shuts down the sending side (MPA's graceful close, RFC 5044
// §7.1.2) when the recorded conn can, recording this side's FIN.
func (c *tcpConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errNoCloseWrite
	}
	c.fin()
	return cw.CloseWrite()
}

// fin records this side's FIN once.
func (c *tcpConn) fin() {
	c.closeOnce.Do(func() {
		c.txMu.Lock()
		c.w.recordTCP(c.local, c.remote, c.txSeq.Load(), c.rxSeq.Load(), tcpFIN|tcpACK, nil)
		c.txSeq.Add(1)
		c.txMu.Unlock()
	})
}

// errNoCloseWrite: the recorded conn cannot half-close.
var errNoCloseWrite = errors.New("capture: the recorded conn cannot close its write side")

// errNoSyscallConn: the recorded conn has no file descriptor.
var errNoSyscallConn = errors.New("capture: the recorded conn has no syscall.RawConn")

// SyscallConn passes the recorded conn's raw connection through (MPA
// reads the TCP MSS with it).
func (c *tcpConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoSyscallConn
}

// SetLinger passes through to a *net.TCPConn (an abortive close sends a
// RST); the recorded FIN is then not what the peer sees.
func (c *tcpConn) SetLinger(sec int) error {
	if tc, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return tc.SetLinger(sec)
	}
	return nil
}
