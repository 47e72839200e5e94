//go:build !linux

package sockbuf

import "net"

// SetSocketBuffers asks for n-octet receive and send buffers on c (capped
// by the system's limits).
func SetSocketBuffers(c *net.UDPConn, n int) {
	_ = c.SetReadBuffer(n)
	_ = c.SetWriteBuffer(n)
}
