package mpa

import (
	"bytes"
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

	// Full Operation starts with a small buffer (an idle stream holds
	// 1 KiB), keeping what was buffered after the startup frame.
	c := conns[0]
	copy(c.rx.buf, "xyz")
	c.rx.r, c.rx.w = 1, 3
	c.enterFullOperation()
	assert.Equal(t, rxIdleLen, len(c.rx.buf))
	assert.Equal(t, []byte("yz"), c.rx.buffered())
}

// TestRxBufferGrowsWithTraffic: small FPDUs are read with the idle
// buffer; the first FPDU larger than it, and a stream of small ones that
// fills it, grow it to rxBufLen; everything arrives intact either way.
func TestRxBufferGrowsWithTraffic(t *testing.T) {
	t.Run("large FPDU", func(t *testing.T) {
		cli, srv := pair(t, &Config{}, &Config{})
		sr := newRecorder()
		srv.Start(sr)
		cli.Start(newRecorder())
		require.NoError(t, cli.SendSegment([]byte("hdr"), []byte("small")))
		assert.Equal(t, "hdrsmall", string(sr.next(t)))
		assert.Equal(t, int64(rxIdleLen), srv.rx.size.Load(), "small FPDUs keep the idle buffer")
		big := bytes.Repeat([]byte{7}, cli.MULPDU()) // beyond rxIdleLen
		require.NoError(t, cli.SendSegment(nil, big))
		assert.Equal(t, big, sr.next(t))
		require.NoError(t, cli.SendSegment([]byte("hdr"), []byte("after")))
		assert.Equal(t, "hdrafter", string(sr.next(t)))
		assert.Equal(t, int64(rxBufLen), srv.rx.size.Load())
	})
	t.Run("stream of small FPDUs", func(t *testing.T) {
		cli, srv := pair(t, &Config{}, &Config{})
		sr := newRecorder()
		segs := segments(400, 200, 9) // 40 KiB, sent before the receiver reads
		for _, s := range segs {
			require.NoError(t, cli.SendSegment(s[:1], s[1:]))
		}
		srv.Start(sr)
		cli.Start(newRecorder())
		for i, s := range segs {
			require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
		}
		assert.Equal(t, int64(rxBufLen), srv.rx.size.Load(), "a read that filled the idle buffer grew it")
	})
}
