package native

import (
	"context"
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"net"
	"time"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Config configures the project's own userspace SCTP stack (package
// sctp) over UDP: streams, path MTU, buffers, RTO and the listener's caps.
// Its zero value is usable.
type Config = sctp.Config

// kind is what the native transport's Kind returns.
const kind = "sctp-native"

// transport is the backend.Transport of the project's own SCTP stack
// (package sctp): a userspace SCTP over UDP (RFC 6951) written for DDP,
// with a stateless State Cookie, one timer per association and a data
// path that allocates nothing per packet.
type transport struct {
	a *sctp.Association
	n int
}

// newTransport checks the peer's Adaptation Layer Indication, which came
// in its INIT ACK if dialed, else in its INIT.
func newTransport(a *sctp.Association, cfg *Config, dialed bool) (*transport, error) {
	if !cfg.AllowMissingAdaptation {
		st := a.Stats()
		ind, ok := st.PeerAdaptation, st.HasPeerAdaptation
		if !ok || ind != backend.AdaptationIndicationDDP {
			_ = a.Abort()
			chunk := "INIT"
			if dialed {
				chunk = "INIT ACK"
			}
			if !ok {
				return nil, fmt.Errorf("%w: its %s carried no Adaptation Layer Indication (RFC 5061 §4.2.6)", backend.ErrAdaptationMismatch, chunk)
			}
			return nil, fmt.Errorf("%w: its %s indicated %#08x, not DDP's %#08x", backend.ErrAdaptationMismatch, chunk, ind, backend.AdaptationIndicationDDP)
		}
	}
	st := a.Stats()
	return &transport{a: a, n: min(st.OutStreams, st.InStreams)}, nil
}

// defaultRTOMin is the RTO.Min of the native stack's DDP associations
// unless Config.RTO.Min says otherwise: TCP's floor (RFC 6298 §2.4 allows
// it), not RFC 9260 §16's 1 s, which turns each loss fast retransmit
// cannot repair into a one-second stall where MPA's TCP waits 200 ms
// (measurements: docs/sctp-native.md, "Settings").
const defaultRTOMin = 200 * time.Millisecond

// DefaultCongestionControl is the congestion control of the native
// stack's DDP associations unless Config.CongestionControl says
// otherwise: CUBIC (RFC 9438) in place of RFC 9260 §7.2's Reno-like
// window, a deliberate departure, so that an association beside a TCP
// flow backs off as much on a loss and both converge alike
// (docs/sctp-native.md, "Settings"). ccname.CongestionRFC9260 remains a choice.
const DefaultCongestionControl = ccname.CongestionCUBIC

// defaultSlowStart is the initial slow start of the native stack's DDP
// associations unless Config.SlowStart says otherwise: RFC 9260's.
// HyStart++ (RFC 9406, ccname.SlowStartHyStart) is there to choose; it
// showed no gain on emulated wide-area paths (docs/sctp-native.md,
// "Settings").
const defaultSlowStart = ccname.SlowStartRFC9260

// forDDP sets what every DDP association of the native stack wants: only
// unordered messages from the peer (RFC 5043 §10), TCP's RTO floor
// (defaultRTOMin), DefaultCongestionControl and defaultSlowStart.
func forDDP(cfg Config) Config {
	cfg.UnorderedOnly = true
	if cfg.RTO.Min == 0 {
		cfg.RTO.Min = defaultRTOMin
	}
	if cfg.CongestionControl == "" {
		cfg.CongestionControl = DefaultCongestionControl
	}
	if cfg.SlowStart == "" {
		cfg.SlowStart = defaultSlowStart
	}
	return cfg
}

// Dial starts an association of the native stack to raddr (UDP).
func dial(ctx context.Context, raddr string, cfg Config) (*transport, error) {
	cfg = forDDP(cfg)
	a, err := sctp.Dial(ctx, "udp", raddr, &cfg)
	if err != nil {
		return nil, nativeErr(err)
	}
	return newTransport(a, &cfg, true)
}

// listener accepts associations of the native stack, over UDP
// (listen) or over DTLS (listenDTLS).
type listener struct {
	l   *sctp.Listener
	dl  *dtlsListener
	cfg Config
}

// Listen listens on the UDP address laddr.
func listen(laddr string, cfg Config) (*listener, error) {
	cfg = forDDP(cfg)
	l, err := sctp.Listen("udp", laddr, &cfg)
	if err != nil {
		return nil, err
	}
	return &listener{l: l, cfg: cfg}, nil
}

// Accept implements backend.Listener.
func (l *listener) Accept(ctx context.Context) (backend.Transport, error) {
	t, err := l.accept(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// accept waits for the next association.
func (l *listener) accept(ctx context.Context) (*transport, error) {
	if l.dl != nil {
		select {
		case t := <-l.dl.accept:
			return t, nil
		case <-l.dl.done:
			return nil, fmt.Errorf("%w: listener closed", net.ErrClosed)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		a, err := l.l.Accept(ctx)
		if err != nil {
			return nil, err
		}
		t, err := newTransport(a, &l.cfg, false)
		if err == nil {
			return t, nil
		}
	}
}

// Addr returns the listening address.
func (l *listener) Addr() net.Addr {
	if l.dl != nil {
		return l.dl.ln.Addr()
	}
	return l.l.Addr()
}

// HandshakeStats returns the counters of the stateless handshake. Over
// DTLS, CookiesOK counts the completed DTLS handshakes and BadPackets the
// failed ones (authentication, timeout, or a peer that is not DTLS); the
// SCTP handshake runs inside each authenticated connection.
func (l *listener) HandshakeStats() sctp.HandshakeStats {
	if l.dl != nil {
		return sctp.HandshakeStats{CookiesOK: l.dl.handshakes.Load(), BadPackets: l.dl.failed.Load()}
	}
	return l.l.HandshakeStats()
}

// Close stops listening; accepted associations carry on.
func (l *listener) Close() error {
	if l.dl != nil {
		return l.dl.close()
	}
	return l.l.Close()
}

// nativeErr maps the stack's errors onto the Transport contract's.
func nativeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sctp.ErrStreamRange):
		return fmt.Errorf("%w: %w", backend.ErrStreamRange, err)
	case errors.Is(err, sctp.ErrEmptyMessage):
		return fmt.Errorf("%w: %w", backend.ErrEmptyMessage, err)
	case errors.Is(err, sctp.ErrMessageTooLarge):
		return fmt.Errorf("%w: %w", llp.ErrSegmentTooLarge, err)
	case errors.Is(err, sctp.ErrClosed):
		return fmt.Errorf("%w: %w", backend.ErrAssociationClosed, err)
	}
	return err
}

// doneErr maps the cause of an association's end onto the contract's.
func doneErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sctp.ErrPeerUnresponsive):
		return fmt.Errorf("%w: %w: %w", llp.ErrAborted, backend.ErrPeerUnresponsive, err)
	case errors.Is(err, sctp.ErrAborted):
		return fmt.Errorf("%w: %w", llp.ErrAborted, err)
	}
	return fmt.Errorf("%w: %w", backend.ErrAssociationClosed, err)
}

// Start implements backend.Transport.
func (t *transport) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	t.a.Start(fn, func(err error) { done(doneErr(err)) })
}

// WriteMsg implements backend.Transport.
func (t *transport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	return nativeErr(t.a.WriteMsg(sid, ppid, parts...))
}

// WriteMsgMore implements backend.MoreWriter.
func (t *transport) WriteMsgMore(sid uint16, ppid uint32, parts ...[]byte) error {
	return nativeErr(t.a.WriteMsgMore(sid, ppid, parts...))
}

// Flush implements backend.MoreWriter.
func (t *transport) Flush() error { return nativeErr(t.a.Flush()) }

// NumStreams implements backend.Transport.
func (t *transport) NumStreams() int { return t.n }

// MaxMessage implements backend.Transport.
func (t *transport) MaxMessage() int { return t.a.MaxMessage() }

// ResetStream implements backend.Transport. The native stack sends every message
// unordered, so a stream has no sequence state to reset: the identifier
// can be reused at once (RFC 5043 §6.6 quarantine is the adaptation's).
// It answers a peer's RE-CONFIG request (RFC 6525) but never sends one.
func (t *transport) ResetStream(sid uint16) error {
	if isDone(t.a.Done()) {
		return fmt.Errorf("sctpllp: reset stream %d: %w", sid, backend.ErrAssociationClosed)
	}
	if int(sid) >= t.n {
		return fmt.Errorf("%w: reset of stream %d of %d", backend.ErrStreamRange, sid, t.n)
	}
	return nil
}

// PeerAdaptation implements backend.Transport.
func (t *transport) PeerAdaptation() (uint32, bool) {
	st := t.a.Stats()
	return st.PeerAdaptation, st.HasPeerAdaptation
}

// Kind implements backend.Transport.
func (t *transport) Kind() string { return kind }

// LocalAddr implements backend.Transport.
func (t *transport) LocalAddr() net.Addr { return t.a.LocalAddr() }

// RemoteAddr implements backend.Transport.
func (t *transport) RemoteAddr() net.Addr { return t.a.RemoteAddr() }

// Close implements backend.Transport.
func (t *transport) Close() error { return nativeErr(t.a.Close()) }

// Abort implements backend.Transport.
func (t *transport) Abort() error { return t.a.Abort() }

// TransportStats reports the SRTT, the retransmitted DATA chunks and, when
// multihomed, each path.
func (t *transport) TransportStats() backend.Stats {
	s := t.a.Stats()
	bs := backend.Stats{SRTT: s.SRTT, HasSRTT: s.RTTMeasured, Retransmissions: s.Retransmits, HasRetransmissions: true}
	for _, p := range s.Paths {
		bs.Paths = append(bs.Paths, backend.Path{Addr: p.Addr, State: p.State, Primary: p.Primary,
			SRTT: p.SRTT, RTO: p.RTO, Cwnd: p.Cwnd, OctetsSent: p.OctetsSent, Errors: p.Errors, PLPMTU: p.PLPMTU})
	}
	return bs
}

// Stats returns the stack's own counters of the association.
func (t *transport) Stats() sctp.Stats { return t.a.Stats() }

// PLPMTUD returns the association's RFC 8899 probing state and counters.
func (t *transport) PLPMTUD() sctp.PLPMTUDStats { return t.a.Stats().PLPMTUD }

// isDone reports whether the association has ended (its Done channel is
// closed: it is CLOSED).
func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
