package rdmap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 7306 §5.2.2 Figure 6.
var atomicRespImage = []byte{
	0x00, 0x00, 0x00, 0x07, // Original Request Identifier
	0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // Original Remote Data Value
}

func TestAtomicResponse_RFC7306_5_2_2_Figure6(t *testing.T) {
	a, n, err := parseAtomicResponse(atomicRespImage)
	require.NoError(t, err)
	assert.Equal(t, atomicResponseLen, n)
	assert.Equal(t, atomicResponse{ReqID: 7, Orig: 1<<63 | 1}, a)
	assert.Equal(t, atomicRespImage, a.Append(nil))
	assert.Equal(t, 12, a.Len())
	_, _, err = parseAtomicResponse(atomicRespImage[:11])
	require.ErrorIs(t, err, errTruncated)
}

func FuzzAtomicResponse(f *testing.F) {
	f.Add(atomicRespImage)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, n, err := parseAtomicResponse(b)
		if err != nil {
			return
		}
		require.Equal(t, b[:n], a.Append(nil))
	})
}
