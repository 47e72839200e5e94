package rdmap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5040 §4.4 Figure 6, octet by octet.
var readReqImage = []byte{
	0x11, 0x22, 0x33, 0x44, // Data Sink STag
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, // Data Sink Tagged Offset
	0x00, 0x01, 0x00, 0x00, // RDMA Read Message Size
	0xaa, 0xbb, 0xcc, 0xdd, // Data Source STag
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0x00, // Data Source Tagged Offset
}

func TestReadRequest_RFC5040_4_4_Figure6(t *testing.T) {
	want := readRequest{SinkSTag: 0x11223344, SinkTO: 0x100001000, Size: 65536, SrcSTag: 0xaabbccdd, SrcTO: 0xfffffffffffff000}
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"exact", readReqImage, true},
		{"trailing octets not consumed", append(append([]byte{}, readReqImage...), 0xee), true},
		{"short by one", readReqImage[:27], false},
		{"empty", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, n, err := parseReadRequest(tc.in)
			if !tc.ok {
				require.ErrorIs(t, err, errTruncated)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, readRequestLen, n)
			assert.Equal(t, want, r)
			assert.Equal(t, readReqImage, r.append(nil))
			assert.Equal(t, readRequestLen, r.len())
		})
	}
}

// RFC 5040 §4.8: after 2048 octets sent, offsets move and size shrinks.
func TestReadRequest_Advance_RFC5040_4_8(t *testing.T) {
	r := readRequest{SinkSTag: 1, SinkTO: 100, Size: 5000, SrcSTag: 2, SrcTO: 200}
	a := r.advance(2048)
	assert.Equal(t, readRequest{SinkSTag: 1, SinkTO: 2148, Size: 2952, SrcSTag: 2, SrcTO: 2248}, a)
	assert.Equal(t, uint32(0), r.advance(9999).Size)
}

func TestReadRequest_AppendNoAlloc(t *testing.T) {
	r := readRequest{SinkSTag: 1, Size: 2}
	buf := make([]byte, 0, readRequestLen)
	allocs := testing.AllocsPerRun(100, func() { _ = r.append(buf[:0]) })
	assert.Zero(t, allocs)
}

func FuzzReadRequest(f *testing.F) {
	f.Add(readReqImage)
	f.Add(make([]byte, 28))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := parseReadRequest(b)
		if err != nil {
			require.Less(t, len(b), readRequestLen)
			return
		}
		require.Equal(t, b[:n], r.append(nil))
	})
}
