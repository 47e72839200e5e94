//go:build linux

package vmtest

import "golang.org/x/sys/unix"

// KernelHasSCTP reports whether the running kernel offers SCTP sockets: it
// opens and closes a one-to-one SCTP socket.
func KernelHasSCTP() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}
