//go:build !linux

package mpa

// readMSS leaves c.mssVal at 0 where TCP_MAXSEG is not read: MULPDU then
// derives from FallbackMSS (RFC 5044 §5.1).
func (c *Conn) readMSS(fd uintptr) {}

// socketDead reports false where the TCP state is not read: an end of file
// no send explained is taken as the peer's FIN.
func (c *Conn) socketDead() bool { return false }
