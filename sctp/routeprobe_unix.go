//go:build unix

package sctp

import (
	"net"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
)

// routeProbe tells a listener the route MTU toward each new peer, as a
// dialer learns it from its connected socket (connRouteMTU): a UDP socket
// per address family, opened with the listening socket (so in its network
// namespace, whichever thread asks later), connected to the peer in turn
// (connect sends nothing) and asked for IP_MTU or IPV6_MTU: the
// interface's MTU, or a smaller one the kernel learned from ICMP. It is
// never read and holds the smallest receive buffer.
type routeProbe struct {
	mu     sync.Mutex
	v4, v6 *net.UDPConn
}

// newRouteProbe opens the probe's sockets; a family the host lacks is
// left out.
func newRouteProbe() *routeProbe {
	p := &routeProbe{}
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero}); err == nil {
		_ = c.SetReadBuffer(1)
		p.v4 = c
	}
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6unspecified}); err == nil {
		_ = c.SetReadBuffer(1)
		p.v6 = c
	}
	return p
}

// mtu returns the route MTU toward peer, or 0 where the kernel does not
// say.
func (p *routeProbe) mtu(peer netip.AddrPort) int {
	mtu := 0
	p.connected(peer, func(rc syscall.RawConn, v6 bool) {
		if m, err := dplpmtud.UDPPathMTU(rc, v6); err == nil && m >= 576 {
			mtu = m
		}
	})
	return mtu
}

// source returns the source address the kernel's route toward peer gives
// (the probe socket's own address once connected), or the zero Addr.
func (p *routeProbe) source(peer netip.AddrPort) netip.Addr {
	var src netip.Addr
	p.connected(peer, func(rc syscall.RawConn, _ bool) {
		_ = rc.Control(func(fd uintptr) {
			switch sa, _ := unix.Getsockname(int(fd)); sa := sa.(type) {
			case *unix.SockaddrInet4:
				src = netip.AddrFrom4(sa.Addr)
			case *unix.SockaddrInet6:
				src = netip.AddrFrom16(sa.Addr).Unmap()
			}
		})
	})
	return src
}

// connected connects the probe socket of peer's family to peer and calls
// f with it, under p.mu; it does nothing for a family the host lacks.
func (p *routeProbe) connected(peer netip.AddrPort, f func(rc syscall.RawConn, v6 bool)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	addr := peer.Addr().Unmap()
	c, v6 := p.v4, false
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(peer.Port()), Addr: addr.As4()}
	if addr.Is6() {
		c, v6 = p.v6, true
		sa = &unix.SockaddrInet6{Port: int(peer.Port()), Addr: addr.As16()}
	}
	if c == nil {
		return
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		// Dissolve the last connection first: it bound the socket to that
		// route's source address, which would stick (udp_disconnect).
		unspec := unix.RawSockaddr{Family: unix.AF_UNSPEC}
		_, _, _ = unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&unspec)), unsafe.Sizeof(unspec))
		cerr = unix.Connect(int(fd), sa)
	}); err != nil || cerr != nil {
		return
	}
	f(rc, v6)
}

// close closes the probe's sockets.
func (p *routeProbe) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range []*net.UDPConn{p.v4, p.v6} {
		if c != nil {
			_ = c.Close()
		}
	}
	p.v4, p.v6 = nil, nil
}
