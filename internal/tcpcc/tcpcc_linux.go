// Package tcpcc chooses a TCP socket's congestion control (Linux
// TCP_CONGESTION) through the Control hook of net.Dialer and
// net.ListenConfig.
package tcpcc

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Control returns a net.Dialer / net.ListenConfig Control that sets
// congestion control cc on the socket before it connects or listens
// (connections a listener accepts inherit its choice), or nil for "".
// Root (CAP_NET_ADMIN) may set any the kernel has
// (net.ipv4.tcp_available_congestion_control); others only those in
// net.ipv4.tcp_allowed_congestion_control.
func Control(cc string) func(network, address string, c syscall.RawConn) error {
	if cc == "" {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP congestion control %q (see net.ipv4.tcp_available_congestion_control; one not in tcp_allowed_congestion_control needs CAP_NET_ADMIN): %w", cc, serr)
		}
		return nil
	}
}

// Of returns the congestion control of a TCP connection or listener.
func Of(sc syscall.Conn) (string, error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return "", err
	}
	var cc string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		cc, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return cc, gerr
}
