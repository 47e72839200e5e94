package mpa

import (
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartup_SmallFirstBuffer: a connection in its startup phase holds a
// buffer for one startup frame only (RFC 5044 §7.1.2: nothing is known of
// the peer yet); the FPDU-sized buffers come with Full Operation. Each
// TCP connection allocated about 129 KiB before its MPA Request had
// arrived (4,000 connections opened and closed four times: +617 MB).
func TestStartup_SmallFirstBuffer(t *testing.T) {
	const n = 200
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cfg := &Config{}
	conns := make([]*Conn, n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range conns {
		conns[i] = newConn(a, cfg, false)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d octets allocated per connection in startup", per)
	assert.Less(t, per, uint64(4<<10), "per connection before the MPA Request")
	require.Less(t, len(conns[0].rx.buf), 4<<10)

	// Full Operation: the receive buffer takes the largest FPDU, and what
	// was buffered after the startup frame is kept.
	c := conns[0]
	copy(c.rx.buf, "xyz")
	c.rx.r, c.rx.w = 1, 3
	c.enterFullOperation()
	assert.Equal(t, rxBufLen, len(c.rx.buf))
	assert.Equal(t, []byte("yz"), c.rx.buffered())
}
