//go:build !linux

package sctp

import (
	"errors"
	"net"
	"net/netip"
)

// UDP segmentation and receive offload are Linux's; elsewhere every
// packet is its own system call.

const (
	gsoMaxSegments = 64
	gsoMaxBytes    = 65535 - 40 - 8
)

var groOOBLen, pktinfoOOBLen = 0, 0

func enablePktinfo(*net.UDPConn) bool { return false }

func pktinfoDst([]byte) netip.Addr { return netip.Addr{} }

func udpOffloadSupported(*net.UDPConn) bool { return false }

func enableGRO(*net.UDPConn) bool { return false }

func newGSOControl() []byte { return nil }

func setGSOSegment([]byte, int) {}

func groSegment([]byte) int { return 0 }

func offloadUnsupported(error) bool { return true }

type gsoWriter struct{}

func newGSOWriter(*net.UDPConn, netip.AddrPort) *gsoWriter { return nil }

func (*gsoWriter) writeRun([][]byte, int) error { return errors.ErrUnsupported }

const (
	mmsgMax      = 16
	mmsgMaxBytes = 4 << 16
)

type mmsgWriter struct{}

func newMMsgWriter(*net.UDPConn, netip.AddrPort) *mmsgWriter { return nil }

func (*mmsgWriter) writeMMsg([][]byte) error { return errors.ErrUnsupported }

// inqProbe would report a datagram waiting; elsewhere it never does.
type inqProbe struct{}

func newInqProbe(*net.UDPConn) *inqProbe { return nil }

func (*inqProbe) queued() bool { return false }
