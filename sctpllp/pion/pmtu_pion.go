package pion

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// dialPMTU is dial with path MTU tracking: the UDP socket is
// wrapped in a dplpmtud.Conn (IP_PMTUDISC_DO, EMSGSIZE and ICMP handling,
// RFC 8899 probing, re-bundling to the path MTU) and MaxMessage — hence
// Association.MULPDU and every Session's MULPDU — follows the tracked path
// MTU from then on (RFC 5043 §9). pion's own packet budget is set once to
// its maximum (8192 octets, cfg.MTU is ignored): pion v1.11.3 cannot
// change it after set-up, and dplpmtud.Conn cuts its packets to the path.
// See docs/pmtu.md.
func dialPMTU(ctx context.Context, raddr string, cfg Config, pcfg dplpmtud.ConnConfig) (*transport, error) {
	cfg = cfg.withDefaults()
	ua, err := net.ResolveUDPAddr("udp", raddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	_ = uc.SetReadBuffer(cfg.SocketBuffer)
	_ = uc.SetWriteBuffer(cfg.SocketBuffer)
	return newTransportPMTU(ctx, uc, true, cfg, pcfg)
}

// newTransportPMTU is newTransport over a connected UDP socket
// with path MTU tracking (see dialPMTU). uc is owned by the transport.
func newTransportPMTU(ctx context.Context, uc *net.UDPConn, client bool, cfg Config, pcfg dplpmtud.ConnConfig) (*transport, error) {
	if pcfg.MaxPacket <= 0 || pcfg.MaxPacket > pionMaxPacket {
		pcfg.MaxPacket = pionMaxPacket
	}
	pc, err := dplpmtud.NewConn(uc, pcfg)
	if err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	cfg.MTU = pcfg.MaxPacket + pmtu.UDPHeaderLen + pmtu.IPHeaderLen(pc.IPv6())
	t, err := newTransport(ctx, pc, client, cfg)
	if err != nil {
		return nil, err // pc was closed by newTransport
	}
	t.udp = uc
	t.pmtu = pc
	return t, nil
}

// pmtuMaxMessage is MaxMessage under path MTU tracking: the message that
// fits one DATA chunk in one packet of the current path MTU (never above
// what pion was set up for, never below what a 516-octet MULPDU needs,
// RFC 5043 §9).
func (t *transport) pmtuMaxMessage() int {
	m := t.pmtu.MaxMessage()
	return min(max(m, maxMessageForPacket(minPionPacket)), t.maxMsg)
}

// PathMTU returns the path MTU statistics of a transport made by
// dialPMTU (ok false for one without tracking).
func (t *transport) PathMTU() (s dplpmtud.Stats, ok bool) {
	if t.pmtu == nil {
		return dplpmtud.Stats{}, false
	}
	return t.pmtu.Stats(), true
}

// PMTUConn returns the path MTU tracker of a transport made by
// dialPMTU, or nil.
func (t *transport) PMTUConn() *dplpmtud.Conn { return t.pmtu }

// listenPMTU is listen with path MTU tracking on every accepted
// association (see dialPMTU). The listening socket is shared, so the
// kernel's path MTU towards each peer is read through a helper socket
// (dplpmtud.PathQuerier) created here, in the caller's network namespace, and
// DF is switched on the shared socket with nesting (dplpmtud.SharedDF).
func listenPMTU(laddr string, cfg Config, pcfg dplpmtud.ConnConfig) (*listener, error) {
	if pcfg.MaxPacket <= 0 || pcfg.MaxPacket > pionMaxPacket {
		pcfg.MaxPacket = pionMaxPacket
	}
	// pion's packet budget: its largest packet for either family.
	cfg.MTU = pcfg.MaxPacket + pmtu.UDPHeaderLen + pmtu.IPv6HeaderLen
	q, err := dplpmtud.NewPathQuerier()
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	l, err := listenPion(laddr, cfg, func(l *listener, uc *net.UDPConn) error {
		df, err := dplpmtud.NewSharedDF(uc)
		if err != nil {
			return err
		}
		l.wrap = func(c *muxConn) (*dplpmtud.Conn, error) {
			peer := c.raddr
			cc := pcfg
			cc.KernelMTU = func() (int, error) { return q.PathMTU(peer) }
			cc.SetDF = df.Set
			q.Ref()
			pc, err := dplpmtud.NewConn(&releaseConn{muxConn: c, release: func() { _ = q.Close() }}, cc)
			if err != nil {
				_ = q.Close()
			}
			return pc, err
		}
		l.onClose = func() { _ = q.Close() }
		return nil
	})
	if err != nil {
		_ = q.Close()
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	return l, nil
}

// releaseConn calls release once after the muxConn is closed.
type releaseConn struct {
	*muxConn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.muxConn.Close()
	c.once.Do(c.release)
	return err
}
