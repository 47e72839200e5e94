package transport

import (
	"crypto/tls"
	"net"
	"sync"
)

// corkMax is the most a corked write holds before it sends: a 64 KiB
// FPDU in TLS 1.3 records of 16 KiB and their overhead, and then some.
const corkMax = 128 << 10

var corkPool = sync.Pool{New: func() any { b := make([]byte, 0, corkMax); return &b }}

// corkedConn is the TCP connection beneath MPA's TLS. crypto/tls writes
// each record of at most 16 KiB with its own Write; while corked, those
// Writes gather in a pooled buffer that uncork sends with one system
// call, so a 64 KiB FPDU costs one write instead of five. Uncorked (the
// handshake, alerts) it writes through.
type corkedConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    *[]byte
}

func (c *corkedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(b)
	}
	if c.buf == nil {
		c.buf = corkPool.Get().(*[]byte)
	}
	if len(*c.buf)+len(b) > corkMax {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(b) > corkMax {
			return c.Conn.Write(b)
		}
	}
	*c.buf = append(*c.buf, b...)
	return len(b), nil
}

func (c *corkedConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what the cork gathered and returns the buffer to the pool.
func (c *corkedConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	err := c.flushLocked()
	if c.buf != nil {
		corkPool.Put(c.buf)
		c.buf = nil
	}
	return err
}

func (c *corkedConn) flushLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}

// tlsConn is MPA's TLS connection: each Write (an FPDU or a batch of
// them, mpa's writePieces) leaves in as few system calls as corkMax
// allows.
type tlsConn struct {
	*tls.Conn
	under *corkedConn
}

func (c *tlsConn) Write(b []byte) (int, error) {
	c.under.cork()
	n, err := c.Conn.Write(b)
	if ferr := c.under.uncork(); err == nil && ferr != nil {
		return 0, ferr
	}
	return n, err
}

func tlsClient(nc net.Conn, cfg *tls.Config) *tlsConn {
	u := &corkedConn{Conn: nc}
	return &tlsConn{tls.Client(u, cfg), u}
}

func tlsServer(nc net.Conn, cfg *tls.Config) *tlsConn {
	u := &corkedConn{Conn: nc}
	return &tlsConn{tls.Server(u, cfg), u}
}
