//go:build linux

package mpa

import "golang.org/x/sys/unix"

// readMSS stores the connection's current MSS (TCP_MAXSEG: on a connected
// Linux socket the effective MSS, options excluded) in c.mssVal. It is
// stored as a method value in c.mssFn so RawConn.Control does not allocate.
func (c *Conn) readMSS(fd uintptr) {
	if v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG); err == nil {
		c.mssVal = v
	}
}

// tcpClose is Linux's TCP_CLOSE state (include/net/tcp_states.h).
const tcpClose = 7

// socketDead reports whether the kernel has torn the connection down (a
// reset received, TCP_USER_TIMEOUT or retransmissions exhausted) rather
// than received a FIN: after a FIN the socket stays in CLOSE_WAIT until it
// is closed here. Called by the receive goroutine on end of file, before
// this end has closed its side.
func (c *Conn) socketDead() bool {
	if c.raw == nil {
		return false
	}
	dead := false
	_ = c.raw.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			dead = ti.State == tcpClose
		}
	})
	return dead
}
