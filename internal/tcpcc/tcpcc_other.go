//go:build !linux

// Package tcpcc chooses a TCP socket's congestion control (Linux
// TCP_CONGESTION) through the Control hook of net.Dialer and
// net.ListenConfig.
package tcpcc

import (
	"errors"
	"syscall"
)

// ErrUnsupported: TCP_CONGESTION is Linux's.
var ErrUnsupported = errors.New("tcpcc: choosing a TCP congestion control needs Linux (TCP_CONGESTION)")

// Control returns nil for "", else a Control that fails with ErrUnsupported.
func Control(cc string) func(network, address string, c syscall.RawConn) error {
	if cc == "" {
		return nil
	}
	return func(string, string, syscall.RawConn) error { return ErrUnsupported }
}

// Of fails with ErrUnsupported.
func Of(syscall.Conn) (string, error) { return "", ErrUnsupported }
