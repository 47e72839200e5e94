package capture

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
)

// packetConn records every datagram of a net.PacketConn.
type packetConn struct {
	net.PacketConn
	w     *Writer
	local net.Addr
}

// wrapPacketConn returns pc recording each datagram it reads or writes as an
// IP/UDP packet between pc's local address and the peer's.
func (w *Writer) wrapPacketConn(pc net.PacketConn) net.PacketConn {
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

// datagramConn records a connected datagram conn (a connected UDP socket,
// or one peer's view of a shared one).
type datagramConn struct {
	net.Conn
	w             *Writer
	local, remote netip.AddrPort
	note          string      // a comment for the first record, if any
	noted         atomic.Bool // the comment was given
}

// sctpPort is the UDP port of SCTP over UDP (RFC 6951 §5), the one
// Wireshark decodes as SCTP without configuration.
const sctpPort = 9899

// SCTPOverUDPConn is wrapDatagram for SCTP over UDP (RFC 6951): the
// server's UDP port (the local one if serverLocal, else the remote one)
// is written as sctpPort so that Wireshark and tshark decode the SCTP
// packets without configuration. The first packet of the conn carries a
// pcapng comment naming the real port.
func (w *Writer) SCTPOverUDPConn(c net.Conn, serverLocal bool) net.Conn {
	dc := w.wrapDatagram(c).(*datagramConn)
	p := &dc.remote
	if serverLocal {
		p = &dc.local
	}
	if real := p.Port(); real != sctpPort {
		dc.note = fmt.Sprintf("SCTP over UDP (RFC 6951): UDP port %d written as %d", real, sctpPort)
		*p = netip.AddrPortFrom(p.Addr(), sctpPort)
	}
	return dc
}

// wrapDatagram returns c, a conn whose every Read and Write is one UDP
// datagram, recording each as an IP/UDP packet between c's local and
// remote addresses.
func (w *Writer) wrapDatagram(c net.Conn) net.Conn {
	l, r := endpoints(addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
	return &datagramConn{Conn: c, w: w, local: l, remote: r}
}

// Unwrap returns the recorded conn.
func (c *datagramConn) Unwrap() net.Conn { return c.Conn }

// Read implements net.Conn.
func (c *datagramConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.w.recordUDPNote(c.remote, c.local, b[:n], c.comment())
	}
	return n, err
}

// Write implements net.Conn.
func (c *datagramConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.w.recordUDPNote(c.local, c.remote, b[:n], c.comment())
	}
	return n, err
}

// comment returns the conn's note the first time, then "".
func (c *datagramConn) comment() string {
	if c.note == "" || c.noted.Load() || !c.noted.CompareAndSwap(false, true) {
		return ""
	}
	return c.note
}

// SCTPOverUDPTap returns a recorder for a stack that hands over its SCTP
// packets itself (the project's own SCTP, sctp.Config.Tap): each call
// records one datagram between the association's local and remote UDP
// addresses, sent or received. As for SCTPOverUDPConn, the server's UDP
// port (the local one if serverLocal) is written as sctpPort so that
// Wireshark decodes the packets as SCTP; the first record says so.
func (w *Writer) SCTPOverUDPTap(serverLocal bool) func(sent bool, local, remote netip.AddrPort, pkt []byte) {
	var noted atomic.Bool
	return func(sent bool, local, remote netip.AddrPort, pkt []byte) {
		l, r := endpoints(local, remote)
		p := &r
		if serverLocal {
			p = &l
		}
		note := ""
		if real := p.Port(); real != sctpPort {
			if noted.CompareAndSwap(false, true) {
				note = fmt.Sprintf("SCTP over UDP (RFC 6951): UDP port %d written as %d", real, sctpPort)
			}
			*p = netip.AddrPortFrom(p.Addr(), sctpPort)
		}
		if sent {
			w.recordUDPNote(l, r, pkt, note)
		} else {
			w.recordUDPNote(r, l, pkt, note)
		}
	}
}
