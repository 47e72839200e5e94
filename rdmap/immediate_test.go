package rdmap

import (
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 7306 §6.2 Figure 7 and the exact-length rule of §6.3.
func TestImmediate_RFC7306_6_2_Figure7(t *testing.T) {
	img := []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	i, n, err := parseImmediate(img)
	require.NoError(t, err)
	assert.Equal(t, 8, n)
	assert.Equal(t, uint64(0x0123456789abcdef), i.Data)
	assert.Equal(t, img, i.Append(nil))
	assert.Equal(t, immediateLen, i.Len())
	for _, l := range []int{0, 7, 9, 16} {
		_, _, err := parseImmediate(make([]byte, l))
		var pe *protocolError
		require.ErrorAs(t, err, &pe, "length %d", l)
		assert.Equal(t, iwarp.Term.OperationUnspecified, pe.Code)
	}
}

func FuzzImmediate(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		i, n, err := parseImmediate(b)
		if err != nil {
			require.NotEqual(t, immediateLen, len(b))
			return
		}
		require.Equal(t, b[:n], i.Append(nil))
	})
}
