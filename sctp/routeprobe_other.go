//go:build !unix

package sctp

import "net/netip"

// routeProbe: the route MTU is asked of the kernel on unix systems only;
// elsewhere a listener uses Config.MTU or the default.
type routeProbe struct{}

func newRouteProbe() *routeProbe                  { return nil }
func (p *routeProbe) mtu(peer netip.AddrPort) int { return 0 }
func (p *routeProbe) close()                      {}

func (p *routeProbe) source(netip.AddrPort) netip.Addr { return netip.Addr{} }
