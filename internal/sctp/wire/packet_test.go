package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeader_RFC9260_3_1(t *testing.T) {
	h := Header{SrcPort: 5000, DstPort: 0x1234, VerificationTag: 0xa1b2c3d4}
	b := AppendHeader(nil, h)
	assert.Equal(t, hx(t, "1388 1234 a1b2c3d4 00000000"), b)
	got, err := ParseHeader(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	_, err = ParseHeader(b[:11])
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestParsePacket_RFC9260_3(t *testing.T) {
	b := AppendHeader(nil, Header{SrcPort: 1, DstPort: 2, VerificationTag: 3})
	b = (&Shutdown{CumTSNAck: 7}).Append(b)
	b = CookieAck{}.Append(b)
	SetChecksum(b)

	p, err := ParsePacket(b)
	require.NoError(t, err)
	assert.Equal(t, Header{SrcPort: 1, DstPort: 2, VerificationTag: 3}, p.Header)
	n, err := p.Validate()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	it := p.Chunks()
	c, ok := it.Next()
	require.True(t, ok)
	s, err := ParseShutdown(c)
	require.NoError(t, err)
	assert.Equal(t, uint32(7), s.CumTSNAck)
	c, ok = it.Next()
	require.True(t, ok)
	assert.Equal(t, ChunkCookieAck, c.Type)
	_, ok = it.Next()
	assert.False(t, ok)
	assert.Equal(t, b[HeaderLen:], p.ChunkBytes())

	b[HeaderLen+5] ^= 1
	_, err = ParsePacket(b)
	assert.ErrorIs(t, err, ErrChecksum, "RFC 9260 §6.8: discarded")
	p, err = ParsePacketNoChecksum(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(3), p.Header.VerificationTag)

	_, err = ParsePacket(b[:8])
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = ParsePacketNoChecksum(b[:8])
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestPacketValidate(t *testing.T) {
	b := AppendHeader(nil, Header{})
	b = append(b, hx(t, "0b000004 07000010 00000001")...)
	p, err := ParsePacketNoChecksum(b)
	require.NoError(t, err)
	n, err := p.Validate()
	assert.Equal(t, 1, n)
	assert.ErrorIs(t, err, ErrChunkLength)
}
