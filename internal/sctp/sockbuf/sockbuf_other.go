//go:build !unix

package sockbuf

import "net"

// SocketBuffers is not available on this platform.
func SocketBuffers(*net.UDPConn) (rcv, snd int) { return 0, 0 }
