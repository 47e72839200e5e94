package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShutdown_RFC9260_3_3_8(t *testing.T) {
	s, err := ParseShutdown(chunkOf(t, hx(t, "07 00 0008 fffffffe")))
	require.NoError(t, err)
	assert.Equal(t, uint32(0xfffffffe), s.CumTSNAck)
	assert.Equal(t, hx(t, "07 00 0008 fffffffe"), build(t, s.Len(), s.Append))
	_, err = ParseShutdown(chunkOf(t, hx(t, "07 00 0007 ffffff 00")))
	assert.ErrorIs(t, err, ErrChunkLength)
	_, err = ParseShutdown(Chunk{Type: ChunkShutdownAck})
	assert.ErrorIs(t, err, ErrChunkType)
}

func TestShutdownAck_RFC9260_3_3_9(t *testing.T) {
	_, err := ParseShutdownAck(chunkOf(t, hx(t, "08 00 0004")))
	require.NoError(t, err)
	_, err = ParseShutdownAck(chunkOf(t, hx(t, "08 ff 0008 01020304")))
	require.NoError(t, err, "flags and a value are ignored")
	assert.Equal(t, hx(t, "08 00 0004"), build(t, ShutdownAck{}.Len(), ShutdownAck{}.Append))
	_, err = ParseShutdownAck(Chunk{Type: ChunkShutdown})
	assert.ErrorIs(t, err, ErrChunkType)
}

func TestShutdownComplete_RFC9260_3_3_13(t *testing.T) {
	s, err := ParseShutdownComplete(chunkOf(t, hx(t, "0e 01 0004")))
	require.NoError(t, err)
	assert.True(t, s.T)
	assert.Equal(t, hx(t, "0e 01 0004"), build(t, s.Len(), s.Append))
	s, err = ParseShutdownComplete(chunkOf(t, hx(t, "0e 00 0004")))
	require.NoError(t, err)
	assert.False(t, s.T)
	assert.Equal(t, hx(t, "0e 00 0004"), build(t, s.Len(), s.Append))
	_, err = ParseShutdownComplete(Chunk{Type: ChunkShutdown})
	assert.ErrorIs(t, err, ErrChunkType)
}
