//go:build unix

package sockbuf

import (
	"net"
	"syscall"
)

// SocketBuffers reports the receive and send buffer sizes the kernel granted
// (Linux reports twice the requested value, capped by rmem_max/wmem_max).
func SocketBuffers(c *net.UDPConn) (rcv, snd int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		snd, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	return rcv, snd
}
