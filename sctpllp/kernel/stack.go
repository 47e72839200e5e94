package kernel

import (
	"context"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Stack returns kernel SCTP with cfg for sctpllp.Config.Stack. Dial takes
// "host:port", or "ip1/ip2:port" for a multihomed peer; Listen takes
// "ip:port", ":port" or "ip1/ip2:port". Both fail with ErrUnavailable
// where the kernel has no SCTP (Available).
func Stack(cfg Config) backend.Stack { return stack{cfg} }

// Available reports whether this kernel offers SCTP sockets: nil, or an
// error wrapping ErrUnavailable (always, on systems other than Linux). It
// opens and closes one socket.
func Available() error { return available() }

type stack struct{ cfg Config }

func (s stack) Dial(ctx context.Context, raddr string) (backend.Transport, error) {
	return dial(ctx, raddr, s.cfg)
}

func (s stack) Listen(laddr string) (backend.Listener, error) {
	l, err := listen(laddr, s.cfg)
	if err != nil {
		return nil, err
	}
	return l, nil
}
