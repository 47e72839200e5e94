package sctp

import (
	"net"
	"net/netip"
	"time"
)

// path is what RFC 9260 keeps per destination transport address of the
// peer (§6.4, §14): the address with its UDP encapsulation port (RFC
// 6951 §5.4, followed when a NAT rebinds it), the RTO estimator (§6.3),
// the congestion controller (§7.2), and the HEARTBEAT state and error counter of §8.2-§8.3. mu guards it.
type path struct {
	addr  netip.AddrPort
	raddr net.Addr // addr as a net.Addr, for RemoteAddr
	rto   rtoEstimator
	cc    congestion
	// lastDataSent is when DATA last went to the path (§7.2.1's idle
	// decay); cwndLimited that the last transmission left new DATA
	// waiting for cwnd (neither the peer's window nor the user limited
	// it).
	lastDataSent time.Time
	cwndLimited  bool
	// errCount counts the path's retransmission timeouts and unanswered
	// HEARTBEATs since it last answered, against Path.Max.Retrans
	// (§8.2); with one path it follows the association's counter, which
	// decides (§8.1).
	errCount int
	// hbNonce is the nonce of the HEARTBEAT in flight, if hbPending.
	hbNonce   uint64
	hbPending bool
}

func newPath(cfg Config, raddr net.Addr) *path {
	return &path{raddr: raddr, rto: newRTOEstimator(cfg.RTO)}
}

// clearErrors resets the association's error counter and the primary
// path's: the peer answered (§8.1, §8.3), or a shutdown phase begins.
func (a *Association) clearErrors() {
	a.errCount = 0
	a.primaryPath().errCount = 0
}

// primaryPath returns the path DATA goes to. mu is held (or the
// association is not running yet).
func (a *Association) primaryPath() *path { return a.paths[a.primary] }

// setRemote points p at a new address (a NAT rebinding, RFC 6951 §5.4).
func (p *path) setRemote(ap netip.AddrPort) {
	p.addr, p.raddr = ap, net.UDPAddrFromAddrPort(ap)
}
