//go:build !linux

package kernel

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Dial is available on Linux only: elsewhere it fails with
// ErrUnavailable.
func Dial(ctx context.Context, raddr string, cfg Config) (backend.Transport, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// Available fails with ErrUnavailable: kernel SCTP is Linux only.
func Available() error {
	return fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// Listener accepts kernel SCTP associations (Linux only).
type Listener struct{}

// Listen is available on Linux only: elsewhere it fails with
// ErrUnavailable.
func Listen(laddr string, cfg Config) (*Listener, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// Accept fails with ErrUnavailable.
func (l *Listener) Accept(ctx context.Context) (backend.Transport, error) {
	return nil, ErrUnavailable
}

// Addr returns nil.
func (l *Listener) Addr() net.Addr { return nil }

// Close does nothing.
func (l *Listener) Close() error { return nil }

// Refused reports no refusals.
func (l *Listener) refusedCount() (uint64, error) { return 0, nil }
