//go:build linux

package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// tapConn records the SCTP chunk types of the last packets pion sends and
// receives, to show the end of an association when a test fails (the VM has
// no tcpdump).
type tapConn struct {
	net.Conn
	mu    sync.Mutex
	start time.Time
	log   []string
}

func newTap(t *testing.T, c net.Conn) *tapConn {
	tc := &tapConn{Conn: c, start: time.Now()}
	t.Cleanup(func() {
		if t.Failed() {
			tc.mu.Lock()
			t.Logf("pion side, last packets (time since set-up, direction, chunks):\n%s", strings.Join(tc.log, "\n"))
			tc.mu.Unlock()
			for _, f := range []string{"/proc/net/sctp/snmp", "/proc/net/sctp/assocs"} {
				if b, err := os.ReadFile(f); err == nil {
					t.Logf("%s:\n%s", f, b)
				}
			}
		}
	})
	return tc
}

func (c *tapConn) record(dir string, b []byte) {
	if len(b) < 12 {
		return
	}
	var chunks []string
	for p := b[12:]; len(p) >= 4; {
		l := int(binary.BigEndian.Uint16(p[2:]))
		chunks = append(chunks, fmt.Sprintf("%d/%#x/%d", p[0], p[1], l))
		if l < 4 {
			break
		}
		l = (l + 3) &^ 3
		if l > len(p) {
			break
		}
		p = p[l:]
	}
	c.mu.Lock()
	c.log = append(c.log, fmt.Sprintf("%8.3fs %s vtag=%08x %s", time.Since(c.start).Seconds(), dir, binary.BigEndian.Uint32(b[4:]), strings.Join(chunks, " ")))
	if len(c.log) > 60 {
		c.log = c.log[len(c.log)-60:]
	}
	c.mu.Unlock()
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.record("in ", b[:n])
	}
	return n, err
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.record("out", b)
	return c.Conn.Write(b)
}
