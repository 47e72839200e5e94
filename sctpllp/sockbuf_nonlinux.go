//go:build !linux

package sctpllp

import "net"

// setSocketBuffers asks for n-octet receive and send buffers on c (capped
// by the system's limits).
func setSocketBuffers(c *net.UDPConn, n int) {
	_ = c.SetReadBuffer(n)
	_ = c.SetWriteBuffer(n)
}
