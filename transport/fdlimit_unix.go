//go:build unix

package transport

import "syscall"

// fileLimit is RLIMIT_NOFILE's soft limit, 0 if unknown or unlimited.
func fileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<30 {
		return int(rl.Cur)
	}
	return 0
}
