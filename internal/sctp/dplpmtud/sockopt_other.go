//go:build !linux

package dplpmtud

import (
	"net/netip"
	"syscall"
)

// UDPPathMTU is Linux only.
func UDPPathMTU(rc syscall.RawConn, ipv6 bool) (int, error) { return 0, ErrUnsupported }

// setDontFragment is Linux only.
func setDontFragment(rc syscall.RawConn, ipv6, on bool) error { return ErrUnsupported }

// TCPMaxSeg is Linux only.
func TCPMaxSeg(rc syscall.RawConn) (int, error) { return 0, ErrUnsupported }

// sctpStatusInfo is what SCTP_STATUS reports (Linux only).
type sctpStatusInfo struct {
	FragmentationPoint int
	PathMTU            int
}

// kernelSCTPStatus is Linux only.
func kernelSCTPStatus(rc syscall.RawConn) (sctpStatusInfo, error) {
	return sctpStatusInfo{}, ErrUnsupported
}

// kernelSCTPPeerMTU is Linux only.
func kernelSCTPPeerMTU(rc syscall.RawConn, peer netip.AddrPort) (int, error) {
	return 0, ErrUnsupported
}
