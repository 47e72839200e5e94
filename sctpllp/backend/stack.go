package backend

import (
	"context"
	"net"
)

// Stack is an SCTP stack with its configuration bound: what
// sctpllp.Config.Stack takes to open associations (sctpllp/native and
// sctpllp/pion each return one from their Stack function). sctpllp
// imports no stack; the caller chooses.
type Stack interface {
	// Dial opens an association to raddr.
	Dial(ctx context.Context, raddr string) (Transport, error)
	// Listen listens for associations on laddr.
	Listen(laddr string) (Listener, error)
}

// Listener is a Stack's listening endpoint. One that also has
// HandshakeStats() sctp.HandshakeStats reports its stateless handshake.
type Listener interface {
	// Accept waits for the next association.
	Accept(ctx context.Context) (Transport, error)
	// Addr returns the listening address.
	Addr() net.Addr
	// Close stops listening; accepted associations continue.
	Close() error
}
