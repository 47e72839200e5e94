package native

import (
	"context"

	"github.com/pion/dtls/v3"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Stack returns the native stack with cfg for sctpllp.Config.Stack. A
// non-nil dcfg runs every association inside a DTLS connection (RFC 8261,
// DialDTLS and ListenDTLS); nil, plain SCTP over UDP.
func Stack(cfg Config, dcfg *dtls.Config) backend.Stack { return stack{cfg, dcfg} }

type stack struct {
	cfg  Config
	dtls *dtls.Config
}

func (s stack) Dial(ctx context.Context, raddr string) (backend.Transport, error) {
	var t *Transport
	var err error
	if s.dtls != nil {
		t, err = DialDTLS(ctx, raddr, s.cfg, s.dtls)
	} else {
		t, err = Dial(ctx, raddr, s.cfg)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s stack) Listen(laddr string) (backend.Listener, error) {
	var l *Listener
	var err error
	if s.dtls != nil {
		l, err = ListenDTLS(laddr, s.cfg, s.dtls)
	} else {
		l, err = Listen(laddr, s.cfg)
	}
	if err != nil {
		return nil, err
	}
	return stackListener{l}, nil
}

// stackListener is a Listener whose Accept returns a backend.Transport.
type stackListener struct{ *Listener }

func (l stackListener) Accept(ctx context.Context) (backend.Transport, error) {
	t, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}
