//go:build linux

package sockbuf

import (
	"net"

	"golang.org/x/sys/unix"
)

// SetSocketBuffers asks for n-octet receive and send buffers on c. With
// CAP_NET_ADMIN it uses SO_RCVBUFFORCE/SO_SNDBUFFORCE, which are not capped
// by net.core.rmem_max/wmem_max (208 KiB on a stock kernel, far too small
// for SCTP over UDP: datagrams are dropped and pion's 1 s retransmission
// timer collapses throughput); otherwise it falls back to the capped
// SO_RCVBUF/SO_SNDBUF.
func SetSocketBuffers(c *net.UDPConn, n int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, n)
		}
	})
}
