//go:build !linux

package sctpllp

import (
	"context"
	"fmt"
	"net"
	"runtime"
)

// DialKernel is available on Linux only: elsewhere it fails with
// ErrKernelSCTPUnavailable.
func DialKernel(ctx context.Context, raddr string, cfg KernelConfig) (Transport, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrKernelSCTPUnavailable, runtime.GOOS)
}

// KernelListener accepts kernel SCTP associations (Linux only).
type KernelListener struct{}

// ListenKernel is available on Linux only: elsewhere it fails with
// ErrKernelSCTPUnavailable.
func ListenKernel(laddr string, cfg KernelConfig) (*KernelListener, error) {
	return nil, fmt.Errorf("%w: kernel SCTP sockets are supported on Linux only (GOOS=%s)", ErrKernelSCTPUnavailable, runtime.GOOS)
}

// Accept fails with ErrKernelSCTPUnavailable.
func (l *KernelListener) Accept(ctx context.Context) (Transport, error) {
	return nil, ErrKernelSCTPUnavailable
}

// Addr returns nil.
func (l *KernelListener) Addr() net.Addr { return nil }

// Close does nothing.
func (l *KernelListener) Close() error { return nil }

// Refused reports no refusals.
func (l *KernelListener) Refused() (uint64, error) { return 0, nil }
