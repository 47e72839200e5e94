package native

import (
	"context"

	"github.com/pion/dtls/v3"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Stack returns the native stack with cfg for sctpllp.Config.Stack. A
// non-nil dcfg runs every association inside a DTLS connection (RFC 8261;
// a peer that is not DTLS fails with ErrDTLSHandshake); nil, plain SCTP
// over UDP. Addresses are UDP "host:port", or several hosts of one port,
// "10.0.1.1/10.0.2.1:7400", for a multihomed association (without DTLS;
// Config.LocalAddr names the local hosts of a Dial). Its transports also have
// MoreWriter's methods, Stats and PLPMTUD, its listeners HandshakeStats
// (reached by an interface assertion).
func Stack(cfg Config, dcfg *dtls.Config) backend.Stack { return stack{cfg, dcfg} }

type stack struct {
	cfg  Config
	dtls *dtls.Config
}

func (s stack) Dial(ctx context.Context, raddr string) (backend.Transport, error) {
	var t *transport
	var err error
	if s.dtls != nil {
		t, err = dialDTLS(ctx, raddr, s.cfg, s.dtls)
	} else {
		t, err = dial(ctx, raddr, s.cfg)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s stack) Listen(laddr string) (backend.Listener, error) {
	var l *listener
	var err error
	if s.dtls != nil {
		l, err = listenDTLS(laddr, s.cfg, s.dtls)
	} else {
		l, err = listen(laddr, s.cfg)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}
