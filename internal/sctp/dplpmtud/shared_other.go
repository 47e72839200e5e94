//go:build !linux

package dplpmtud

import (
	"net"
	"net/netip"
)

// PathQuerier is Linux only.
type PathQuerier struct{}

// NewPathQuerier is Linux only.
func NewPathQuerier() (*PathQuerier, error) { return nil, ErrUnsupported }

// Ref is Linux only.
func (q *PathQuerier) Ref() {}

// Close is Linux only.
func (q *PathQuerier) Close() error { return nil }

// PathMTU is Linux only.
func (q *PathQuerier) PathMTU(peer netip.AddrPort) (int, error) { return 0, ErrUnsupported }

// SharedDF is Linux only.
type SharedDF struct{}

// NewSharedDF is Linux only.
func NewSharedDF(uc *net.UDPConn) (*SharedDF, error) { return nil, ErrUnsupported }

// Set is Linux only.
func (s *SharedDF) Set(on bool) error { return ErrUnsupported }
