package dplpmtud

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeartbeatProbe_RFC4960Sec3_3_5 checks the probe image against a
// hand-built HEARTBEAT with a padded Heartbeat Info parameter.
func TestHeartbeatProbe_RFC4960Sec3_3_5(t *testing.T) {
	img := []byte{
		4, 0, 0, 36, // HEARTBEAT, length 36
		0, 1, 0, 32, // Heartbeat Info, length 32
		's', 'r', 'P', 'M', 'T', 'U', 'p', 'r',
		0, 0, 0, 0, 0, 0, 0, 7, // nonce
		0, 0, 0, 48, // probed SCTP packet size: 12 + 36
		0, 0, 0, 0, 0, 0, 0, 0, // padding
	}
	p := heartbeatProbe{Nonce: 7, Size: 48}
	assert.Equal(t, img, p.Append(nil))
	assert.Equal(t, 36, p.Len())
	got, n, err := parseHeartbeatProbe(img)
	require.NoError(t, err)
	assert.Equal(t, 36, n)
	assert.Equal(t, p, got)

	ack := append([]byte(nil), img...)
	ack[0] = 5
	got, _, err = parseHeartbeatProbe(ack)
	require.NoError(t, err)
	assert.True(t, got.Ack)
	assert.Equal(t, ack, got.Append(nil))

	buf := make([]byte, 0, 64)
	assert.Equal(t, 0.0, testing.AllocsPerRun(10, func() { buf = p.Append(buf[:0]) }))

	// Errors.
	bad := append([]byte(nil), img...)
	bad[0] = 3
	_, _, err = parseHeartbeatProbe(bad)
	var we *WireError
	require.ErrorAs(t, err, &we)
	bad = append([]byte(nil), img...)
	bad[8] = 'x' // another sender's heartbeat info
	_, _, err = parseHeartbeatProbe(bad)
	assert.ErrorIs(t, err, errNotProbe)
	bad = append([]byte(nil), img...)
	bad[5] = 2 // parameter type 2
	_, _, err = parseHeartbeatProbe(bad)
	require.ErrorAs(t, err, &we)
	bad = append([]byte(nil), img...)
	bad[7] = 200 // parameter longer than the chunk
	_, _, err = parseHeartbeatProbe(bad)
	assert.ErrorIs(t, err, ErrShort)
	bad = append([]byte(nil), img...)
	bad[27] = 52 // size disagrees with the chunk length
	_, _, err = parseHeartbeatProbe(bad)
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "RFC 8899 §4.1", we.Section)
	_, _, err = parseHeartbeatProbe([]byte{4, 0, 0, 4})
	assert.ErrorIs(t, err, ErrShort)
}

func TestAppendProbePacket(t *testing.T) {
	hdr := wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 42}
	pkt := appendProbePacket(nil, hdr, 3, 1401)
	assert.Len(t, pkt, 1400, "rounded down to whole words")
	assert.True(t, wire.ChecksumOK(pkt))
	h, err := wire.ParseHeader(pkt)
	require.NoError(t, err)
	assert.Equal(t, uint32(42), h.VerificationTag)
	p, _, err := parseHeartbeatProbe(pkt[12:])
	require.NoError(t, err)
	assert.Equal(t, heartbeatProbe{Nonce: 3, Size: 1400}, p)
}

// packet builds an SCTP packet of the given chunks (type, total padded
// length) with increasing TSNs for DATA.
func packet(chunks ...[2]int) []byte {
	b := wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 7})
	tsn := uint32(100)
	for _, c := range chunks {
		start := len(b)
		b = wire.Chunk{Type: wire.ChunkType(c[0]), Value: make([]byte, c[1]-4)}.Append(b)
		if c[0] == int(wire.ChunkData) {
			binary.BigEndian.PutUint32(b[start+4:], tsn)
			tsn++
		}
		for i := start + 16; i < len(b); i++ {
			b[i] = byte(i)
		}
	}
	wire.SetChecksum(b)
	return b
}

// TestSplitPacket_RFC4960Sec6_10: re-bundling keeps chunk order, gives
// every piece the common header and a valid checksum, and reports single
// chunks that still exceed the limit.
func TestSplitPacket_RFC4960Sec6_10(t *testing.T) {
	sack := [2]int{3, 16}
	data := func(n int) [2]int { return [2]int{0, n} }
	pkt := packet(sack, data(1000), data(1000), data(3000), data(500))
	var pieces [][]byte
	var over []bool
	_, err := splitPacket(pkt, 1300, nil, func(p []byte, o bool) error {
		pieces = append(pieces, append([]byte(nil), p...))
		over = append(over, o)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, pieces, 4)
	assert.Equal(t, []bool{false, false, true, false}, over)
	assert.Equal(t, []int{12 + 16 + 1000, 12 + 1000, 12 + 3000, 12 + 500}, []int{len(pieces[0]), len(pieces[1]), len(pieces[2]), len(pieces[3])})
	var chunks []byte
	var tsns []uint32
	for _, p := range pieces {
		assert.True(t, wire.ChecksumOK(p))
		assert.Equal(t, pkt[:8], p[:8])
		chunks = append(chunks, p[12:]...)
		dataTSNs(p, func(tsn uint32) { tsns = append(tsns, tsn) })
	}
	assert.Equal(t, pkt[12:], chunks, "chunks unchanged and in order")
	assert.Equal(t, []uint32{100, 101, 102, 103}, tsns)

	// A packet that fits is passed through untouched.
	n := 0
	_, err = splitPacket(pkt, len(pkt), nil, func(p []byte, o bool) error {
		n++
		assert.False(t, o)
		assert.Equal(t, pkt, p)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// INIT cannot be bundled: emitted whole as oversize.
	initPkt := packet([2]int{int(wire.ChunkInit), 2000})
	_, err = splitPacket(initPkt, 1000, nil, func(p []byte, o bool) error {
		assert.True(t, o)
		assert.Len(t, p, len(initPkt))
		return nil
	})
	require.NoError(t, err)

	// Errors from emit stop the split.
	stop := errors.New("stop")
	_, err = splitPacket(pkt, 1300, nil, func([]byte, bool) error { return stop })
	assert.ErrorIs(t, err, stop)
}

// TestPadProbe_RFC8899Sec6_2_1_2: the recommended probe is a HEARTBEAT
// (nonce and probed size in its information, not padded) and a PAD chunk
// (RFC 4820, type 132) filling the packet to the probed size; the peer's
// HEARTBEAT ACK echoes the small information and confirms that size.
func TestPadProbe_RFC8899Sec6_2_1_2(t *testing.T) {
	hdr := wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 0x01020304}
	for _, size := range []int{44, 1172, 1422, 65504} {
		b := AppendPadProbePacket(nil, hdr, 9, size)
		want := size &^ 3
		require.Len(t, b, want)
		assert.True(t, wire.ChecksumOK(b))
		it := wire.NewChunkIter(b[wire.HeaderLen:])
		hb, ok := it.Next()
		require.True(t, ok)
		assert.Equal(t, wire.ChunkHeartbeat, hb.Type)
		assert.Equal(t, probeChunkMin, hb.Len())
		pad, ok := it.Next()
		require.True(t, ok)
		assert.Equal(t, wire.ChunkPad, pad.Type)
		assert.Equal(t, want-wire.HeaderLen-probeChunkMin, pad.Len())
		_, ok = it.Next()
		assert.False(t, ok)
		require.NoError(t, it.Err())

		// The peer's answer: the HEARTBEAT's information in a HEARTBEAT ACK.
		ack := wire.Chunk{Type: wire.ChunkHeartbeatAck, Value: hb.Value}
		nonce, got, ok := ParseProbeAck(ack)
		require.True(t, ok, "size %d", size)
		assert.Equal(t, uint64(9), nonce)
		assert.Equal(t, want, got)
	}
	// A PAD-form HEARTBEAT that claims a packet smaller than itself plus
	// a PAD header, or not in whole words, is no probe.
	for _, size := range []int{40, 1174} {
		c := heartbeatProbe{Pad: true, Nonce: 1, Size: size}.Append(nil)
		_, _, err := parseHeartbeatProbe(c)
		var we *WireError
		require.ErrorAs(t, err, &we, "size %d", size)
	}
	buf := make([]byte, 0, 2048)
	assert.Equal(t, 0.0, testing.AllocsPerRun(10, func() { buf = AppendPadProbePacket(buf[:0], hdr, 1, 1500) }))
}
