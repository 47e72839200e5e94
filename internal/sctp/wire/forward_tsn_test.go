package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForwardTSN_RFC3758_3_2(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    ForwardTSN
		wantErr error
	}{
		{"no streams", "c0 00 0008 00000100", ForwardTSN{NewCumTSN: 256}, nil},
		{"two streams", "c0 00 0010 00000100 0001 0005 0002 ffff",
			ForwardTSN{NewCumTSN: 256, Streams: []ForwardTSNStream{{1, 5}, {2, 0xffff}}}, nil},
		{"no New Cumulative TSN", "c0 00 0004", ForwardTSN{}, ErrChunkLength},
		{"half a stream entry", "c0 00 000a 00000100 0001 00", ForwardTSN{}, ErrChunkLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := hx(t, tc.in)
			f, err := ParseForwardTSN(chunkOf(t, in), nil)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f)
			assert.Equal(t, in, build(t, f.Len(), f.Append))
		})
	}
	_, err := ParseForwardTSN(Chunk{Type: ChunkSACK}, nil)
	assert.ErrorIs(t, err, ErrChunkType)
	buf := make([]ForwardTSNStream, 0, 4)
	f, err := ParseForwardTSN(chunkOf(t, hx(t, "c0 00 000c 00000100 0001 0005")), buf)
	require.NoError(t, err)
	assert.Same(t, &buf[:1][0], &f.Streams[0], "the caller's storage is reused")
}
