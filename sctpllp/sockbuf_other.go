//go:build !unix

package sctpllp

import "net"

// socketBuffers is not available on this platform.
func socketBuffers(*net.UDPConn) (rcv, snd int) { return 0, 0 }
