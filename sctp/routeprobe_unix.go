//go:build unix

package sctp

import (
	"net"
	"net/netip"
	"sync"

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
	if p == nil {
		return 0
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
		return 0
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) { cerr = unix.Connect(int(fd), sa) }); err != nil || cerr != nil {
		return 0
	}
	mtu, err := dplpmtud.UDPPathMTU(rc, v6)
	if err != nil || mtu < 576 {
		return 0
	}
	return mtu
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
