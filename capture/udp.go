package capture

import (
	"net"
)

// packetConn records every datagram of a net.PacketConn.
type packetConn struct {
	net.PacketConn
	w     *Writer
	local net.Addr
}

// PacketConn returns pc recording each datagram it reads or writes as an
// IP/UDP packet between pc's local address and the peer's.
func (w *Writer) PacketConn(pc net.PacketConn) net.PacketConn {
	return &packetConn{PacketConn: pc, w: w, local: pc.LocalAddr()}
}

// Unwrap returns the recorded conn (for SyscallConn, SetReadBuffer...).
func (c *packetConn) Unwrap() net.PacketConn { return c.PacketConn }

// ReadFrom implements net.PacketConn.
func (c *packetConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(b)
	if n > 0 && addr != nil {
		l, r := endpoints(addrPort(c.local), addrPort(addr))
		c.w.recordUDP(r, l, b[:n])
	}
	return n, addr, err
}

// WriteTo implements net.PacketConn.
func (c *packetConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, addr)
	if err == nil && addr != nil {
		l, r := endpoints(addrPort(c.local), addrPort(addr))
		c.w.recordUDP(l, r, b[:n])
	}
	return n, err
}
