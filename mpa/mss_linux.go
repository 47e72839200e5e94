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
