package sctpllp

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctp"
)

// NativeConfig configures the project's own userspace SCTP stack (package
// sctp) over UDP: streams, path MTU, buffers, RTO and the listener's caps.
// Its zero value is usable.
type NativeConfig = sctp.Config

// KindNative is the Kind of the native backend.
const KindNative = "sctp-native"

// NativeTransport is the Transport of the project's own SCTP stack
// (package sctp): a userspace SCTP over UDP (RFC 6951) written for DDP,
// with a stateless State Cookie, one timer per association and a data
// path that allocates nothing per packet.
type NativeTransport struct {
	a *sctp.Association
	n int
}

func newNativeTransport(a *sctp.Association, cfg *NativeConfig) (*NativeTransport, error) {
	if !cfg.AllowMissingAdaptation {
		ind, ok := a.PeerAdaptation()
		if !ok || ind != AdaptationIndicationDDP {
			_ = a.Abort()
			if !ok {
				return nil, fmt.Errorf("%w (peer sent none)", ErrAdaptationMismatch)
			}
			return nil, fmt.Errorf("%w (peer sent %#08x)", ErrAdaptationMismatch, ind)
		}
	}
	out, in := a.NumStreams()
	return &NativeTransport{a: a, n: min(out, in)}, nil
}

// forDDP sets what every DDP association of the native stack wants: only
// unordered messages from the peer (RFC 5043 §10).
func forDDP(cfg NativeConfig) NativeConfig {
	cfg.UnorderedOnly = true
	return cfg
}

// DialNative starts an association of the native stack to raddr (UDP).
func DialNative(ctx context.Context, raddr string, cfg NativeConfig) (*NativeTransport, error) {
	cfg = forDDP(cfg)
	a, err := sctp.Dial(ctx, "udp", raddr, &cfg)
	if err != nil {
		return nil, nativeErr(err)
	}
	return newNativeTransport(a, &cfg)
}

// NativeListener accepts associations of the native stack, over UDP
// (ListenNative) or over DTLS (ListenNativeDTLS).
type NativeListener struct {
	l   *sctp.Listener
	dl  *dtlsListener
	cfg NativeConfig
}

// ListenNative listens on the UDP address laddr.
func ListenNative(laddr string, cfg NativeConfig) (*NativeListener, error) {
	cfg = forDDP(cfg)
	l, err := sctp.Listen("udp", laddr, &cfg)
	if err != nil {
		return nil, err
	}
	return &NativeListener{l: l, cfg: cfg}, nil
}

// Accept waits for the next association.
func (l *NativeListener) Accept(ctx context.Context) (*NativeTransport, error) {
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
		t, err := newNativeTransport(a, &l.cfg)
		if err == nil {
			return t, nil
		}
	}
}

// Addr returns the listening address.
func (l *NativeListener) Addr() net.Addr {
	if l.dl != nil {
		return l.dl.ln.Addr()
	}
	return l.l.Addr()
}

// HandshakeStats returns the counters of the stateless handshake. Over
// DTLS, CookiesOK counts the completed DTLS handshakes and BadPackets the
// failed ones (authentication, timeout, or a peer that is not DTLS); the
// SCTP handshake runs inside each authenticated connection.
func (l *NativeListener) HandshakeStats() HandshakeStats {
	if l.dl != nil {
		return HandshakeStats{CookiesOK: l.dl.handshakes.Load(), BadPackets: l.dl.failed.Load()}
	}
	return l.l.HandshakeStats()
}

// Close stops listening; accepted associations carry on.
func (l *NativeListener) Close() error {
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
		return fmt.Errorf("%w: %w", ErrStreamRange, err)
	case errors.Is(err, sctp.ErrEmptyMessage):
		return fmt.Errorf("%w: %w", ErrEmptyMessage, err)
	case errors.Is(err, sctp.ErrMessageTooLarge):
		return fmt.Errorf("%w: %w", llp.ErrSegmentTooLarge, err)
	case errors.Is(err, sctp.ErrClosed):
		return fmt.Errorf("%w: %w", ErrAssociationClosed, err)
	}
	return err
}

// doneErr maps the cause of an association's end onto the contract's.
func doneErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sctp.ErrPeerUnresponsive):
		return fmt.Errorf("%w: %w: %w", llp.ErrAborted, ErrPeerUnresponsive, err)
	case errors.Is(err, sctp.ErrAborted):
		return fmt.Errorf("%w: %w", llp.ErrAborted, err)
	}
	return fmt.Errorf("%w: %w", ErrAssociationClosed, err)
}

// Start implements Transport.
func (t *NativeTransport) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	t.a.Start(fn, func(err error) { done(doneErr(err)) })
}

// WriteMsg implements Transport.
func (t *NativeTransport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	return nativeErr(t.a.WriteMsg(sid, ppid, parts...))
}

// NumStreams implements Transport.
func (t *NativeTransport) NumStreams() int { return t.n }

// MaxMessage implements Transport.
func (t *NativeTransport) MaxMessage() int { return t.a.MaxMessage() }

// ResetStream implements Transport. The native stack sends every message
// unordered, so a stream has no sequence state to reset: the identifier
// can be reused at once (RFC 5043 §6.6 quarantine is the adaptation's).
// It answers a peer's RE-CONFIG request (RFC 6525) but never sends one.
func (t *NativeTransport) ResetStream(sid uint16) error {
	if t.a.State() == sctp.StateClosed {
		return fmt.Errorf("sctpllp: reset stream %d: %w", sid, ErrAssociationClosed)
	}
	if int(sid) >= t.n {
		return fmt.Errorf("%w: reset of stream %d of %d", ErrStreamRange, sid, t.n)
	}
	return nil
}

// PeerAdaptation implements Transport.
func (t *NativeTransport) PeerAdaptation() (uint32, bool) { return t.a.PeerAdaptation() }

// Kind implements Transport.
func (t *NativeTransport) Kind() string { return KindNative }

// LocalAddr implements Transport.
func (t *NativeTransport) LocalAddr() net.Addr { return t.a.LocalAddr() }

// RemoteAddr implements Transport.
func (t *NativeTransport) RemoteAddr() net.Addr { return t.a.RemoteAddr() }

// Close implements Transport.
func (t *NativeTransport) Close() error { return nativeErr(t.a.Close()) }

// Abort implements Transport.
func (t *NativeTransport) Abort() error { return t.a.Abort() }

// TransportStats reports the SRTT and the retransmitted DATA chunks.
func (t *NativeTransport) TransportStats() TransportStats {
	s := t.a.Stats()
	return TransportStats{SRTT: s.SRTT, HasSRTT: s.RTTMeasured, Retransmissions: s.Retransmits, HasRetransmissions: true}
}

// Stats returns the stack's own counters of the association.
func (t *NativeTransport) Stats() sctp.Stats { return t.a.Stats() }
