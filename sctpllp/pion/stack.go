package pion

import (
	"context"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Stack returns the pion stack with cfg for sctpllp.Config.Stack.
func Stack(cfg Config) backend.Stack { return stack{cfg} }

type stack struct{ cfg Config }

func (s stack) Dial(ctx context.Context, raddr string) (backend.Transport, error) {
	t, err := Dial(ctx, raddr, s.cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s stack) Listen(laddr string) (backend.Listener, error) {
	l, err := Listen(laddr, s.cfg)
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
