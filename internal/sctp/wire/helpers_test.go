package wire

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hx decodes hex written with spaces and newlines for readability.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// chunkOf parses b, which must hold exactly one chunk (and its padding).
func chunkOf(t testing.TB, b []byte) Chunk {
	t.Helper()
	c, n, err := ParseChunk(b)
	require.NoError(t, err)
	require.Equal(t, len(b), n, "one chunk, padded")
	return c
}

// build returns what append writes into a fresh buffer, after checking
// that it wrote as many octets as the Len method says and kept 4-octet
// alignment.
func build(t testing.TB, n int, appendFn func([]byte) []byte) []byte {
	t.Helper()
	b := appendFn(nil)
	require.Len(t, b, n, "Len() is what Append writes")
	require.Zero(t, len(b)%4, "chunks end 4-aligned")
	return b
}
