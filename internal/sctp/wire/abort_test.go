package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAbort_RFC9260_3_3_7(t *testing.T) {
	a, err := ParseAbort(chunkOf(t, hx(t, "06 01 0004")))
	require.NoError(t, err)
	assert.True(t, a.T, "T bit: the tag is reflected (§8.4)")
	assert.Empty(t, a.Causes)

	a, err = ParseAbort(chunkOf(t, hx(t, "06 00 0010 000c 0007 627965 00 000d 0004")))
	require.NoError(t, err)
	assert.False(t, a.T)
	it := a.CauseIter()
	c, ok := it.Next()
	require.True(t, ok)
	assert.Equal(t, Cause{Code: CauseUserInitiatedAbort, Info: []byte("bye")}, c)
	c, ok = it.Next()
	require.True(t, ok)
	assert.Equal(t, Cause{Code: CauseProtocolViolation, Info: []byte{}}, c)
	_, ok = it.Next()
	assert.False(t, ok)
	require.NoError(t, it.Err())

	// Malformed causes do not stop the ABORT (RFC 9260 §9.1): only the
	// iterator reports them.
	a, err = ParseAbort(chunkOf(t, hx(t, "06 00 0008 000c 0040")))
	require.NoError(t, err)
	it = a.CauseIter()
	_, ok = it.Next()
	assert.False(t, ok)
	assert.ErrorIs(t, it.Err(), ErrCauseLength)

	_, err = ParseAbort(Chunk{Type: ChunkError})
	assert.ErrorIs(t, err, ErrChunkType)
}

func TestAbortAppend_RFC9260_3_3_7(t *testing.T) {
	causes := AppendCause(nil, CauseUserInitiatedAbort, []byte("bye"))
	a := Abort{T: true, Causes: causes}
	b := build(t, a.Len(), a.Append)
	assert.Equal(t, hx(t, "06 01 000b 000c 0007 627965 00"), b)
	got, err := ParseAbort(chunkOf(t, b))
	require.NoError(t, err)
	assert.Equal(t, a, got)
	b = build(t, 4, (&Abort{}).Append)
	assert.Equal(t, hx(t, "06 00 0004"), b)
}

func TestErrorChunk_RFC9260_3_3_10(t *testing.T) {
	in := hx(t, "09 00 000c 0006 0008 bf000004")
	e, err := ParseError(chunkOf(t, in))
	require.NoError(t, err)
	it := e.CauseIter()
	c, ok := it.Next()
	require.True(t, ok)
	ch, err := c.UnrecognizedChunk()
	require.NoError(t, err)
	assert.Equal(t, Chunk{Type: 0xbf, Value: []byte{}}, ch)
	assert.Equal(t, in, build(t, e.Len(), e.Append))
	_, err = ParseError(Chunk{Type: ChunkAbort})
	assert.ErrorIs(t, err, ErrChunkType)
}
