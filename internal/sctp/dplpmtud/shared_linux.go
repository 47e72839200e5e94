//go:build linux

package dplpmtud

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// PathQuerier reads the kernel's path MTU towards any destination, for a
// socket shared by several peers (an unconnected listening UDP socket,
// where IP_MTU is not available): it connects a helper datagram socket,
// which never sends, to the destination and reads IP_MTU / IPV6_MTU
// (the kernel's path MTU cache is per destination, RFC 1191 §5). The
// helper sockets belong to the network namespace of the thread that
// called NewPathQuerier.
type PathQuerier struct {
	mu       sync.Mutex
	fd4, fd6 int
	refs     int
}

// NewPathQuerier opens the helper sockets (IPv6 may be missing). It holds
// one reference; Close drops it.
func NewPathQuerier() (*PathQuerier, error) {
	q := &PathQuerier{fd4: -1, fd6: -1, refs: 1}
	var err4, err6 error
	q.fd4, err4 = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err4 != nil {
		q.fd4 = -1
	}
	q.fd6, err6 = unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err6 != nil {
		q.fd6 = -1
	}
	if q.fd4 < 0 && q.fd6 < 0 {
		return nil, fmt.Errorf("pmtu: helper socket: %w", errors.Join(err4, err6))
	}
	return q, nil
}

// Ref takes one more reference.
func (q *PathQuerier) Ref() {
	q.mu.Lock()
	q.refs++
	q.mu.Unlock()
}

// Close drops one reference; the sockets close with the last.
func (q *PathQuerier) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refs--; q.refs > 0 {
		return nil
	}
	for _, fd := range []*int{&q.fd4, &q.fd6} {
		if *fd >= 0 {
			_ = unix.Close(*fd)
			*fd = -1
		}
	}
	return nil
}

// PathMTU returns the kernel's path MTU towards peer.
func (q *PathQuerier) PathMTU(peer netip.AddrPort) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := peer.Addr().Unmap()
	if a.Is4() {
		if q.fd4 < 0 {
			return 0, ErrUnsupported
		}
		sa := &unix.SockaddrInet4{Port: int(peer.Port()), Addr: a.As4()}
		if err := unix.Connect(q.fd4, sa); err != nil {
			return 0, fmt.Errorf("pmtu: connect helper: %w", err)
		}
		return unix.GetsockoptInt(q.fd4, unix.IPPROTO_IP, unix.IP_MTU)
	}
	if q.fd6 < 0 {
		return 0, ErrUnsupported
	}
	sa := &unix.SockaddrInet6{Port: int(peer.Port()), Addr: a.As16()}
	if err := unix.Connect(q.fd6, sa); err != nil {
		return 0, fmt.Errorf("pmtu: connect helper: %w", err)
	}
	return unix.GetsockoptInt(q.fd6, unix.IPPROTO_IPV6, unix.IPV6_MTU)
}

// SharedDF switches DF on a UDP socket shared by several peers: Set(false)
// calls nest, so DF is set again only when every Set(false) has been
// matched by a Set(true). An IPv6 socket also gets the IPv4 setting for
// its v4-mapped traffic.
type SharedDF struct {
	mu  sync.Mutex
	rc  syscall.RawConn
	v6  bool
	off int
}

// NewSharedDF sets DF (IP_PMTUDISC_DO) on uc.
func NewSharedDF(uc *net.UDPConn) (*SharedDF, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &SharedDF{rc: rc}
	if la, ok := uc.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		s.v6 = true
	}
	return s, s.apply(true)
}

func (s *SharedDF) apply(on bool) error {
	if s.v6 {
		_ = setDontFragment(s.rc, false, on) // v4-mapped traffic, if dual-stack
		return setDontFragment(s.rc, true, on)
	}
	return setDontFragment(s.rc, false, on)
}

// Set switches DF on (on=true) or off, nesting as described.
func (s *SharedDF) Set(on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		s.off++
		if s.off == 1 {
			return s.apply(false)
		}
		return nil
	}
	if s.off > 0 {
		s.off--
	}
	if s.off == 0 {
		return s.apply(true)
	}
	return nil
}
