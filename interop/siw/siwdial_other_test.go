//go:build !unix

package siw

import "syscall"

func reuseAddr(_, _ string, _ syscall.RawConn) error { return nil }
