//go:build !unix

package transport

// fileLimit is 0 where there is no RLIMIT_NOFILE: the MPA admission then
// checks no file descriptor limit.
func fileLimit() int { return 0 }
