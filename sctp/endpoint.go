package sctp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/sockbuf"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// socketBuffer is the UDP socket buffer each way: room for a window of
// packets (the stock 208 KiB of net.core.rmem_max drops bursts).
const socketBuffer = 8 << 20

// unmap returns ap with an IPv4-mapped address as IPv4 and no zone.
func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

// transientReadError reports a socket error that leaves the socket usable:
// an ICMP error reported on a connected UDP socket.
func transientReadError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EMSGSIZE)
}

// Dial starts an association to the SCTP-over-UDP endpoint at address
// (network "udp", "udp4" or "udp6") from a UDP socket of its own, and
// returns it once it is established (RFC 9260 §5.1: INIT, INIT ACK,
// COOKIE ECHO, COOKIE ACK). It fails with ctx's error, or with an error
// wrapping ErrHandshake or ErrAborted. cfg may be nil.
func Dial(ctx context.Context, network, address string, cfg *Config) (*Association, error) {
	if err := overUDP(cfg); err != nil {
		return nil, err
	}
	if multiHosts(address) || cfg != nil && multiHosts(cfg.LocalAddr) {
		return dialMulti(ctx, network, address, cfg)
	}
	var d net.Dialer
	if cfg != nil && cfg.LocalAddr != "" {
		la, err := net.ResolveUDPAddr(network, cfg.LocalAddr)
		if err != nil {
			return nil, err
		}
		d.LocalAddr = la
	}
	nc, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	conn := nc.(*net.UDPConn)
	sockbuf.SetSocketBuffers(conn, socketBuffer)
	probing := cfg == nil || cfg.MTU <= 0 && !cfg.NoPLPMTUD
	cfg = withRouteMTU(conn, cfg)
	if probing && cfg != nil && cfg.MTU > 0 {
		// The route's MTU is known (loopback included: RFC 8899 on
		// every path, the peer's reads may be smaller than the route).
		if df, err := dplpmtud.NewSharedDF(conn); err == nil {
			c := *cfg
			c.pathProbe = &pathProbe{routeMTU: c.MTU, overhead: ipUDPOverhead(connAddrPort(conn.RemoteAddr()).Addr()),
				df: df, kernelMTU: func() int { return connRouteMTU(conn) }}
			cfg = &c
		}
	}
	a, err := DialConn(ctx, conn, cfg)
	if err != nil {
		_ = conn.Close()
	}
	return a, err
}

// withRouteMTU returns cfg with the MTU of the route to the peer of the
// connected socket conn (IP_MTU: the interface's MTU, or a smaller one the
// kernel learned from ICMP; lo's 65536 to a loopback peer) when cfg sets
// none, so that a jumbo-frame path carries larger packets and a tunnel
// smaller ones. Where the kernel does not say, cfg is unchanged.
func withRouteMTU(conn *net.UDPConn, cfg *Config) *Config {
	if cfg != nil && cfg.MTU > 0 {
		return cfg
	}
	mtu := connRouteMTU(conn)
	if mtu == 0 {
		return cfg
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c.MTU = mtu
	return &c
}

// connRouteMTU is the route MTU of a connected UDP socket, or 0. To a
// loopback peer it is lo's (65536): PLPMTUD probes it like any other
// (the peer may read less: pion takes 8 KiB).
func connRouteMTU(conn *net.UDPConn) int {
	ra := connAddrPort(conn.RemoteAddr()).Addr()
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	mtu, err := dplpmtud.UDPPathMTU(rc, ra.Is6() && !ra.Is4In6())
	if err != nil || mtu < 576 {
		return 0
	}
	return mtu
}

// DialConn starts an association over conn, a connected datagram conn to
// one peer whose every Read and Write is one SCTP packet: a connected UDP
// socket, or a DTLS connection (SCTP over DTLS, RFC 8261). The association
// owns conn from then on (it closes it at the end), also when DialConn
// fails. cfg may be nil.
func DialConn(ctx context.Context, conn net.Conn, cfg *Config) (*Association, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	c = c.normalized()
	a := newConnAssociation(conn, c)
	a.tcb.localPort, a.tcb.peerPort = c.LocalPort, c.PeerPort
	a.tcb.localTag, a.tcb.localInitialTSN = handshake.RandomTag(), handshake.RandomTag()
	go readLoop(conn, a)

	a.mu.Lock()
	a.sendInit(time.Now())
	a.mu.Unlock()
	select {
	case <-a.estab:
	case <-ctx.Done():
		_ = a.Abort()
		return nil, ctx.Err()
	}
	a.mu.Lock()
	st, aerr := a.state, a.err
	a.mu.Unlock()
	if st == stateClosed {
		if aerr == nil {
			aerr = ErrClosed
		}
		return nil, aerr
	}
	return a, nil
}

// newConnAssociation makes an association that sends on conn and closes
// it at the end.
func newConnAssociation(conn net.Conn, c Config) *Association {
	raddr := connAddrPort(conn.RemoteAddr())
	out := func(b []byte) error { _, err := conn.Write(b); return err }
	a := newAssociation(c, out, conn.LocalAddr(), conn.RemoteAddr(), c.maxPacketFor(raddr.Addr()))
	a.primaryPath().addr = raddr
	a.io.localAP = connAddrPort(conn.LocalAddr())
	a.io.closeSocket = func() { _ = conn.Close() }
	if uc, ok := conn.(*net.UDPConn); ok && !c.NoOffload {
		a.io.batch = newBatch(uc, netip.AddrPort{}, raddr.Addr(), out, udpOffloadSupported(uc), c.offloadLocal)
	}
	if c.pathProbe != nil {
		a.enablePLPMTUD(*c.pathProbe)
	}
	return a
}

// connAddrPort returns a conn's UDP address (zero if it has none).
func connAddrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return unmap(ua.AddrPort())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return unmap(ap)
}

// AcceptConn runs the passive side of an association start over conn, a
// datagram conn to one peer (a DTLS connection accepted by a listener,
// for SCTP over DTLS, RFC 8261): INITs are answered statelessly with a
// State Cookie, and the association is returned once a valid COOKIE ECHO
// arrives (RFC 9260 §5.1). It owns conn (closing it on failure). It fails
// with ctx's error if no association is made in time.
func AcceptConn(ctx context.Context, conn net.Conn, cfg *Config) (*Association, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	c = c.normalized()
	resp := newResponderFor(c, nil)
	from := connAddrPort(conn.RemoteAddr())
	send := func(p []byte) { _, _ = conn.Write(p) }
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	bp := getBuf(largeBuf)
	for {
		n, err := conn.Read(*bp)
		if err != nil {
			putBuf(bp)
			_ = conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
		}
		ck, rest, ok := resp.Unknown((*bp)[:n], from, send)
		if !ok {
			continue
		}
		if !stop() {
			putBuf(bp)
			_ = conn.Close()
			return nil, ctx.Err()
		}
		_ = conn.SetReadDeadline(time.Time{})
		a := newConnAssociation(conn, c)
		a.verifyCookie = resp.VerifyCookieEcho
		kept := a.adoptCookie(&ck, rest, bp)
		if !kept {
			putBuf(bp)
		}
		go readLoop(conn, a)
		return a, nil
	}
}

// newResponderFor is the Responder of a passive side configured by c.
func newResponderFor(c Config, addrs []netip.Addr) *handshake.Responder {
	var ad uint32
	if !c.NoAdaptation {
		ad = c.Adaptation
	}
	return handshake.NewResponder(handshake.ResponderConfig{ARwnd: uint32(c.ReceiveBuffer), OutboundStreams: uint16(c.Streams),
		InboundStreams: uint16(c.Streams), Extensions: ourExtensions, Adaptation: ad, NoAdaptation: c.NoAdaptation,
		AllowMissingAdaptation: c.AllowMissingAdaptation, ZeroChecksum: c.ZeroChecksum, InitAckRate: c.InitAckRate, CookieLifespan: c.CookieLifespan,
		Addrs: listedAddrs(addrs)})
}

// adoptCookie makes a passive association ESTABLISHED from a verified
// cookie (RFC 9260 §5.1.5), queues its COOKIE ACK and takes the chunks
// bundled after the COOKIE ECHO, held in bp. It reports whether bp now
// belongs to the association.
func (a *Association) adoptCookie(ck *handshake.Cookie, rest []byte, bp *[]byte) bool {
	a.tcb.localPort, a.tcb.peerPort = ck.LocalPort, ck.PeerPort
	a.tcb.localTag, a.tcb.localInitialTSN = ck.LocalVerificationTag, ck.LocalInitialTSN
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.adoptPeer(ck.PeerVerificationTag, ck.PeerInitialTSN, ck.PeerARwnd, int(ck.InboundStreams), int(ck.OutboundStreams),
		ck.PeerAdaptation, ck.HasPeerAdaptation, ck.PeerReconfig, ck.PeerZeroChecksum)
	if a.mh != nil {
		a.mhAddListed(ck.Listed(), now) // §5.1.2: the INIT's addresses, carried in the cookie
	}
	a.establish(now)
	a.ctrl = wire.CookieAck{}.Append(a.ctrl) // §5.1 step D, bundled with what follows
	a.setRxPacket(bp)
	return a.receiveChunks(rest, bp, now)
}

// readLoop reads the active side's own socket until it is closed.
func readLoop(conn net.Conn, a *Association) {
	r := newUDPReader(conn, !a.cfg.NoOffload, false)
	bp := getBuf(largeBuf)
	for {
		n, seg, _, _, err := r.read(*bp)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				a.mu.Lock()
				a.portUnreachable(err)
				a.mu.Unlock()
				continue
			}
			if transientReadError(err) {
				continue
			}
			putBuf(bp)
			a.mu.Lock()
			switch {
			case a.state == stateClosed:
			case errors.Is(err, io.EOF) && a.state == stateShutdownAckSent:
				// A connection-oriented socket (DTLS, RFC 8261) closed
				// cleanly by the peer (close_notify) after this side's
				// SHUTDOWN ACK: the peer closes only once its shutdown is
				// over (Close: after its SHUTDOWN COMPLETE), and with
				// every chunk of both sides acknowledged before the
				// SHUTDOWN (RFC 9260 §9.2) nothing is lost. pion/dtls can
				// report the close before the record that preceded it,
				// the SHUTDOWN COMPLETE: the shutdown ends as that chunk
				// would have ended it.
				a.terminate(nil)
			default:
				a.terminate(fmt.Errorf("%w: socket: %w", ErrClosed, err))
			}
			a.mu.Unlock()
			return
		}
		if seg > 0 && seg < n {
			if a.receiveSegments((*bp)[:n], bp, seg, !r.deferSACK()) {
				bp = getBuf(largeBuf)
			}
			continue
		}
		r.sackSent()
		if a.receive((*bp)[:n], bp) {
			bp = getBuf(largeBuf)
		}
	}
}
