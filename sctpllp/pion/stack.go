package pion

import (
	"context"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Stack returns the pion stack with cfg for sctpllp.Config.Stack. Its
// Dial opens a UDP socket towards raddr ("host:port") and an association
// over it; its Listen demultiplexes one UDP socket by peer address. Its
// transports also have PathMTU, PMTUConn, StreamFree, Buffered and
// SocketBuffers, its listeners Peers and HandshakeStats (reached by an
// interface assertion).
func Stack(cfg Config) backend.Stack { return stack{cfg} }

type stack struct{ cfg Config }

func (s stack) Dial(ctx context.Context, raddr string) (backend.Transport, error) {
	var t *transport
	var err error
	if s.cfg.PathMTU != nil {
		t, err = dialPMTU(ctx, raddr, s.cfg, *s.cfg.PathMTU)
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
	if s.cfg.PathMTU != nil {
		l, err = listenPMTU(laddr, s.cfg, *s.cfg.PathMTU)
	} else {
		l, err = listen(laddr, s.cfg)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}
