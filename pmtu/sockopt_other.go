//go:build !linux

package pmtu

import (
	"net/netip"
	"syscall"
)

// UDPPathMTU is Linux only.
func UDPPathMTU(rc syscall.RawConn, ipv6 bool) (int, error) { return 0, ErrUnsupported }

// SetDontFragment is Linux only.
func SetDontFragment(rc syscall.RawConn, ipv6, on bool) error { return ErrUnsupported }

// TCPMaxSeg is Linux only.
func TCPMaxSeg(rc syscall.RawConn) (int, error) { return 0, ErrUnsupported }

// SCTPStatus is what SCTP_STATUS reports (Linux only).
type SCTPStatus struct {
	FragmentationPoint int
	PathMTU            int
}

// KernelSCTPStatus is Linux only.
func KernelSCTPStatus(rc syscall.RawConn) (SCTPStatus, error) { return SCTPStatus{}, ErrUnsupported }

// KernelSCTPPeerMTU is Linux only.
func KernelSCTPPeerMTU(rc syscall.RawConn, peer netip.AddrPort) (int, error) {
	return 0, ErrUnsupported
}
