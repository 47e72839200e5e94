package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Setup built by hand from the layout in docs/cli.md: write, latency,
// 4096 octets, depth 1, 1000 iterations.
var setupImage = []byte{
	'S', 'R', 'B', '1',
	0x01, 0x02, 0x00, 0x00,
	0x00, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8,
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,
}

func TestSetupImage(t *testing.T) {
	s, n, err := parseSetup(setupImage)
	require.NoError(t, err)
	assert.Equal(t, setupLen, n)
	assert.Equal(t, setupMsg{Test: TestWrite, Flags: flagLatency, Size: 4096, Depth: 1, Iters: 1000}, s)
	assert.True(t, s.Latency())
	assert.False(t, s.Reverse())
	assert.Equal(t, setupImage, s.appendTo(nil))
	assert.Equal(t, setupLen, len(s.appendTo(nil)))
}

// TestSetupBuffers: octets 6 and 7, reserved before Buffers existed,
// carry it; 0 (what a client of that time sends) means one buffer.
func TestSetupBuffers(t *testing.T) {
	b := append([]byte(nil), setupImage...)
	b[6], b[7] = 0x01, 0x00
	s, _, err := parseSetup(b)
	require.NoError(t, err)
	assert.Equal(t, uint16(256), s.Buffers)
	assert.Equal(t, 256, s.buffers())
	assert.Equal(t, b, s.appendTo(nil))
	s.Buffers = 0
	assert.Equal(t, 1, s.buffers())
}

func TestSetupRoundTrip(t *testing.T) {
	for _, s := range []setupMsg{
		{Test: TestSend, Size: 1, Depth: MaxDepth, Duration: 1500 * time.Millisecond, Flags: flagReverse},
		{Test: TestSend, Size: 64 << 10, Depth: 16, RxDepth: 64, Iters: 10},
		{Test: TestWriteImm, Size: 1, Depth: 1, RxDepth: MaxRxDepth, Iters: 10},
		{Test: TestFetchAdd, Size: 8, Depth: 16, Iters: 1 << 40},
		{Test: TestPing, Size: 1 << 20, Depth: 1, Iters: 3, Flags: flagReverse | flagLatency},
		{Test: TestWrite, Size: 64 << 10, Depth: 16, Iters: 10, Buffers: 256},
		{Test: TestRead, Size: 1, Depth: 1, Iters: 10, Buffers: MaxBuffers},
	} {
		b := s.appendTo(make([]byte, 0, setupLen))
		require.Len(t, b, setupLen)
		got, n, err := parseSetup(append(b, 0xEE)) // trailing octets are not consumed
		require.NoError(t, err)
		assert.Equal(t, setupLen, n)
		assert.Equal(t, s, got)
	}
}

func TestSetupRejects(t *testing.T) {
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), setupImage...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"truncated":      setupImage[:setupLen-1],
		"magic":          mut(func(b []byte) { b[0] = 'X' }),
		"test 0":         mut(func(b []byte) { b[4] = 0 }),
		"test 8":         mut(func(b []byte) { b[4] = 8 }),
		"flags":          mut(func(b []byte) { b[5] = 0x80 }),
		"buffers":        mut(func(b []byte) { b[6], b[7] = MaxBuffers>>8, 1 }), // MaxBuffers+1
		"rx depth":       mut(func(b []byte) { b[30] = 1 }),
		"size 0":         mut(func(b []byte) { b[10] = 0 }),
		"atomic size":    mut(func(b []byte) { b[4] = byte(TestCmpSwap) }),
		"depth 0":        mut(func(b []byte) { b[15] = 0 }),
		"depth too big":  mut(func(b []byte) { b[14] = 1 }),
		"iters and time": mut(func(b []byte) { b[27] = 1 }),
		"neither":        mut(func(b []byte) { b[22], b[23] = 0, 0 }),
	} {
		_, _, err := parseSetup(b)
		var me *messageError
		require.ErrorAs(t, err, &me, name)
		assert.ErrorIs(t, err, errMalformed, name)
		assert.Equal(t, "setup", me.Message)
	}
}

func TestSetupAppendNoAlloc(t *testing.T) {
	s := setupMsg{Test: TestRead, Size: 64, Depth: 4, Iters: 9}
	b := make([]byte, 0, setupLen)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = s.appendTo(b[:0]) }))
}

func FuzzSetup(f *testing.F) {
	f.Add(setupImage)
	f.Add((&setupMsg{Test: TestSend, Size: 1, Depth: 2, Duration: time.Second}).appendTo(nil))
	f.Add([]byte("SRB1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := parseSetup(b)
		if err != nil {
			return
		}
		require.Equal(t, setupLen, n)
		require.Equal(t, b[:setupLen], s.appendTo(nil))
	})
}

// A handled ping-pong reposts a receive after sending its answer (pong.go):
// both sides must keep a spare receive posted meanwhile, whatever the
// Setup's depths (RFC 5041 §7.1: an untagged message without a buffer is
// fatal).
func TestRecvCount_PingPongKeepsASpare(t *testing.T) {
	for _, test := range []Test{TestSend, TestWriteImm} {
		for _, depth := range []uint32{0, 1, 16} {
			for _, rx := range []uint32{0, 1, 64} {
				s := setupMsg{Test: test, Flags: flagLatency, Size: 64, Depth: depth, RxDepth: rx}
				require.True(t, s.handled())
				assert.GreaterOrEqual(t, recvCount(s, true), 2, "active, %+v", s)
				assert.GreaterOrEqual(t, recvCount(s, false), 2, "passive, %+v", s)
			}
		}
	}
}

// The receives of a bandwidth Send's passive side share a sink of at most
// rxSink octets (their payloads are never read), which is what the server
// reserves; every side that reads what it receives keeps a buffer per
// receive.
func TestSinkSlots(t *testing.T) {
	for _, c := range []struct {
		name   string
		s      setupMsg
		active bool
		slots  int
		cost   int64
	}{
		{"send 64K rx 128", setupMsg{Test: TestSend, Size: 64 << 10, Depth: 16, RxDepth: 128}, false, 16, 64<<10 + 16*64<<10},
		{"write-imm 4K rx 240", setupMsg{Test: TestWriteImm, Size: 4096, Depth: 16, RxDepth: 240}, false, 256, 4096 + 242*4096},
		{"send 4M", setupMsg{Test: TestSend, Size: 4 << 20, Depth: 16}, false, 2, 4<<20 + 2*4<<20},
		{"send 64 octets", setupMsg{Test: TestSend, Size: 64, Depth: 16, RxDepth: 16}, false, rxSink / ctrlLen, 64 + 18*128},
		{"active send", setupMsg{Test: TestSend, Size: 64 << 10, Depth: 16}, true, math.MaxInt, 64<<10 + 8*ctrlLen},
		{"active write", setupMsg{Test: TestWrite, Size: 64 << 10, Depth: 16}, true, math.MaxInt, 64<<10 + 8*ctrlLen},
		{"active write 1000 iterations", setupMsg{Test: TestWrite, Size: 64 << 10, Depth: 16, Iters: 1000}, true, math.MaxInt, 64<<10 + 8*ctrlLen + 16*1000},
		{"active latency send", setupMsg{Test: TestSend, Flags: flagLatency, Size: 64 << 10}, true, math.MaxInt, 64<<10 + 8*64<<10},
		{"latency send", setupMsg{Test: TestSend, Flags: flagLatency, Size: 64 << 10}, false, math.MaxInt, -1},
		{"ping", setupMsg{Test: TestPing, Size: 64 << 10, Depth: 16}, false, math.MaxInt, -1},
		{"write", setupMsg{Test: TestWrite, Size: 64 << 10, Depth: 16}, false, math.MaxInt, 64<<10 + 2*ctrlLen},
		{"read", setupMsg{Test: TestRead, Size: 64 << 10, Depth: 16}, false, math.MaxInt, 64<<10 + 2*ctrlLen},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.slots, sinkSlots(c.s, c.active))
			if c.cost >= 0 {
				assert.Equal(t, c.cost, memoryCost(c.s, c.active))
			}
			if c.slots != math.MaxInt {
				assert.LessOrEqual(t, int64(min(c.slots, recvCount(c.s, c.active))*recvLen(c.s, c.active)), max(int64(rxSink), 2*int64(recvLen(c.s, c.active))))
			}
		})
	}
}

// postEvery: the list length of a bandwidth run (Config.PostList).
func TestPostEvery(t *testing.T) {
	for _, c := range []struct {
		test       Test
		latency    bool
		events     bool
		depth, cfg int
		want       uint64
	}{
		{TestRead, false, false, 16, 0, 4}, // automatic: a quarter of the depth in a handler
		{TestFetchAdd, false, false, 3, 0, 1},
		{TestRead, false, true, 16, 0, 1},   // waiting for events: one by one
		{TestWrite, false, false, 16, 0, 1}, // not handled
		{TestWrite, false, false, 16, 8, 8},
		{TestRead, false, false, 16, 100, 16}, // at most the depth
		{TestRead, true, false, 16, 8, 1},     // latency: depth 1
		{TestSend, false, false, 16, -3, 1},
	} {
		s := setupMsg{Test: c.test, Size: 64, Depth: uint32(c.depth)}
		if c.latency {
			s.Flags |= flagLatency
		}
		if c.events {
			s.Flags |= flagEvents
		}
		conn := &conn{setup: s, postList: clampDepth(c.cfg)}
		assert.Equal(t, c.want, conn.postEvery(), "%+v", c)
	}
}

// listReady: a list goes when every slots are free, or when the run ends
// before they would be.
func TestTallyListReady(t *testing.T) {
	c := &conn{setup: setupMsg{Test: TestRead, Size: 64, Depth: 8, Iters: 10}}
	tl := c.newTally(8, false)
	assert.True(t, tl.listReady(0, 4), "nothing posted: all 8 free")
	assert.False(t, tl.listReady(5, 4), "3 free")
	tl.done = 1
	assert.True(t, tl.listReady(5, 4), "4 free")
	tl.done = 0
	assert.False(t, tl.listReady(8, 4), "none free")
	tl.done = 2
	assert.True(t, tl.listReady(9, 4), "1 free, and only one operation is left (Iters 10)")
	tl.done = 1
	assert.False(t, tl.listReady(8, 4), "1 free, two operations left")
}
