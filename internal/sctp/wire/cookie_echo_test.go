package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCookieEcho_RFC9260_3_3_11(t *testing.T) {
	e, err := ParseCookieEcho(chunkOf(t, hx(t, "0a 00 0007 010203 00")))
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, e.Cookie)
	assert.Equal(t, hx(t, "0a 00 0007 010203 00"), build(t, e.Len(), e.Append))
	e, err = ParseCookieEcho(chunkOf(t, hx(t, "0a 00 0004")))
	require.NoError(t, err, "judged by the MAC check, not here")
	assert.Empty(t, e.Cookie)
	_, err = ParseCookieEcho(Chunk{Type: ChunkCookieAck})
	assert.ErrorIs(t, err, ErrChunkType)
	assert.Panics(t, func() { (&CookieEcho{Cookie: make([]byte, MaxCookie+1)}).Append(nil) })
}

func TestCookieAck_RFC9260_3_3_12(t *testing.T) {
	_, err := ParseCookieAck(chunkOf(t, hx(t, "0b 00 0004")))
	require.NoError(t, err)
	assert.Equal(t, hx(t, "0b 00 0004"), build(t, CookieAck{}.Len(), CookieAck{}.Append))
	_, err = ParseCookieAck(Chunk{Type: ChunkCookieEcho})
	assert.ErrorIs(t, err, ErrChunkType)
}
