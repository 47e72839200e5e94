//go:build !linux

package kernel

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// dial is available on Linux only: elsewhere it fails with
// ErrUnavailable.
func dial(ctx context.Context, raddr string, cfg Config) (backend.Transport, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// available fails with ErrUnavailable: kernel SCTP is Linux only.
func available() error {
	return fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// listener accepts kernel SCTP associations (Linux only).
type listener struct{}

// listen is available on Linux only: elsewhere it fails with
// ErrUnavailable.
func listen(laddr string, cfg Config) (*listener, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// Accept fails with ErrUnavailable.
func (l *listener) Accept(ctx context.Context) (backend.Transport, error) {
	return nil, ErrUnavailable
}

// Addr returns nil.
func (l *listener) Addr() net.Addr { return nil }

// Close does nothing.
func (l *listener) Close() error { return nil }

// Refused reports no refusals.
func (l *listener) refusedCount() (uint64, error) { return 0, nil }
