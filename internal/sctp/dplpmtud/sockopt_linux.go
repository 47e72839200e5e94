//go:build linux

package dplpmtud

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func control(rc syscall.RawConn, fn func(fd int) error) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = fn(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}

// UDPPathMTU returns the kernel's path MTU for a connected UDP (or any
// connected datagram) socket: IP_MTU or IPV6_MTU (ip(7), ipv6(7)). The
// value includes ICMP "fragmentation needed" / "packet too big" reports
// the kernel has cached for the destination (RFC 1191, RFC 8201).
func UDPPathMTU(rc syscall.RawConn, ipv6 bool) (int, error) {
	var v int
	err := control(rc, func(fd int) error {
		var err error
		if ipv6 {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU)
		} else {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pmtu: IP_MTU: %w", err)
	}
	return v, nil
}

// setDontFragment selects the socket's path MTU discovery mode (ip(7)
// IP_MTU_DISCOVER, ipv6(7) IPV6_MTU_DISCOVER): on sets IP_PMTUDISC_DO (DF
// set, datagrams above the known path MTU fail with EMSGSIZE); off sets
// IP_PMTUDISC_DONT (the kernel fragments at the known path MTU).
func setDontFragment(rc syscall.RawConn, ipv6, on bool) error {
	mode := unix.IP_PMTUDISC_DONT
	if on {
		mode = unix.IP_PMTUDISC_DO
	}
	err := control(rc, func(fd int) error {
		if ipv6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, mode)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, mode)
	})
	if err != nil {
		return fmt.Errorf("pmtu: IP_MTU_DISCOVER: %w", err)
	}
	return nil
}

// TCPMaxSeg returns TCP_MAXSEG of a connected TCP socket: on Linux the MSS
// the connection currently uses (options excluded), which follows the path
// MTU the kernel learns (RFC 1191, RFC 4821 when tcp_mtu_probing is on).
func TCPMaxSeg(rc syscall.RawConn) (int, error) {
	var v int
	err := control(rc, func(fd int) error {
		var err error
		v, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pmtu: TCP_MAXSEG: %w", err)
	}
	return v, nil
}

// Linux SCTP socket options (include/uapi/linux/sctp.h).
const (
	solSCTP       = 132
	optSCTPStatus = 14
)

// sctpStatusLen is sizeof(struct sctp_status) on Linux: assoc_id, state,
// rwnd, unackdata, penddata, instrms, outstrms, fragmentation_point (24
// octets) then struct sctp_paddrinfo (packed, aligned 4: assoc_id,
// sockaddr_storage, state, cwnd, srtt, rto, mtu = 152 octets).
const sctpStatusLen = 24 + 152

// Offsets in struct sctp_status.
const (
	sctpStatusFragPoint = 20
	sctpStatusPrimary   = 24
	sctpPaddrinfoMTU    = 4 + 128 + 16
)

// sctpStatusInfo is what SCTP_STATUS reports about an association's primary
// path.
type sctpStatusInfo struct {
	// FragmentationPoint is the largest user message sent unfragmented
	// (the kernel's frag_point, derived from the path MTU).
	FragmentationPoint int
	// PathMTU is the primary path's MTU (spinfo_mtu).
	PathMTU int
}

// parseSCTPStatus decodes the struct sctp_status image getsockopt returns
// (host byte order).
func parseSCTPStatus(b []byte) (sctpStatusInfo, error) {
	if len(b) < sctpStatusLen {
		return sctpStatusInfo{}, fmt.Errorf("pmtu: sctp_status of %d octets: %w", len(b), ErrShort)
	}
	return sctpStatusInfo{
		FragmentationPoint: int(*(*uint32)(unsafe.Pointer(&b[sctpStatusFragPoint]))),
		PathMTU:            int(*(*uint32)(unsafe.Pointer(&b[sctpStatusPrimary+sctpPaddrinfoMTU]))),
	}, nil
}

// kernelSCTPStatus reads SCTP_STATUS from a one-to-one kernel SCTP socket
// (sctp(7)): the kernel's own view of the path MTU and fragmentation
// point of the association (assoc_id 0).
func kernelSCTPStatus(rc syscall.RawConn) (sctpStatusInfo, error) {
	var buf [sctpStatusLen]byte
	err := control(rc, func(fd int) error {
		l := uint32(len(buf))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solSCTP, optSCTPStatus,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return sctpStatusInfo{}, fmt.Errorf("pmtu: SCTP_STATUS: %w", err)
	}
	return parseSCTPStatus(buf[:])
}

// sctpGetPeerAddrInfo is SCTP_GET_PEER_ADDR_INFO (include/uapi/linux/sctp.h).
const sctpGetPeerAddrInfo = 15

// paddrinfoLen is sizeof(struct sctp_paddrinfo) on Linux (packed,
// aligned 4): assoc_id (4), sockaddr_storage (128), state, cwnd, srtt,
// rto, mtu (5 × 4).
const paddrinfoLen = 4 + 128 + 20

// appendPaddrinfoRequest appends the struct sctp_paddrinfo image that asks
// SCTP_GET_PEER_ADDR_INFO about peer (assoc_id 0: the association of a
// one-to-one socket): the address as a sockaddr_in or sockaddr_in6 in host
// byte order family, network byte order port.
func appendPaddrinfoRequest(b []byte, peer netip.AddrPort) []byte {
	start := len(b)
	b = append(b, make([]byte, paddrinfoLen)...)
	sa := b[start+4 : start+4+128]
	a := peer.Addr()
	if a.Is4() || a.Is4In6() {
		*(*uint16)(unsafe.Pointer(&sa[0])) = unix.AF_INET
		binary.BigEndian.PutUint16(sa[2:], peer.Port())
		v4 := a.Unmap().As4()
		copy(sa[4:], v4[:])
	} else {
		*(*uint16)(unsafe.Pointer(&sa[0])) = unix.AF_INET6
		binary.BigEndian.PutUint16(sa[2:], peer.Port())
		v6 := a.As16()
		copy(sa[8:], v6[:])
	}
	return b
}

// parsePaddrinfoMTU returns spinfo_mtu of a struct sctp_paddrinfo image.
func parsePaddrinfoMTU(b []byte) (int, error) {
	if len(b) < paddrinfoLen {
		return 0, fmt.Errorf("pmtu: sctp_paddrinfo of %d octets: %w", len(b), ErrShort)
	}
	return int(*(*uint32)(unsafe.Pointer(&b[sctpPaddrinfoMTU]))), nil
}

// kernelSCTPPeerMTU asks a kernel SCTP socket for the path MTU towards one
// peer transport address (SCTP_GET_PEER_ADDR_INFO, sctp(7)): the per-path
// value of a multi-homed association, for a Table.
func kernelSCTPPeerMTU(rc syscall.RawConn, peer netip.AddrPort) (int, error) {
	buf := appendPaddrinfoRequest(make([]byte, 0, paddrinfoLen), peer)
	err := control(rc, func(fd int) error {
		l := uint32(len(buf))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solSCTP, sctpGetPeerAddrInfo,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pmtu: SCTP_GET_PEER_ADDR_INFO: %w", err)
	}
	return parsePaddrinfoMTU(buf)
}
