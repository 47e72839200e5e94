//go:build !linux

package mpa

// idlePoller is Linux's (park_linux.go); elsewhere connections never park.
type idlePoller struct{}

func parkPoller() *idlePoller { return nil }

func (p *idlePoller) add(c *Conn) (uint64, error) { return 0, errNoPoller }

func (p *idlePoller) remove(c *Conn, tok uint64) bool { return false }
