package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSACK_RFC9260_3_3_4(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    SACK
		wantErr error
	}{
		{"no gaps, no duplicates", "03 00 0010 0000000c 00010000 0000 0000",
			SACK{CumTSNAck: 12, ARwnd: 65536}, nil},
		{"RFC 9260 §3.3.4 example: 12 acked, 14-15 and 17 received, 13 twice",
			"03 00 001c 0000000c 00004000 0002 0001 0002 0003 0005 0005 0000000d",
			SACK{CumTSNAck: 12, ARwnd: 0x4000, Gaps: []GapAckBlock{{2, 3}, {5, 5}}, Dups: []uint32{13}}, nil},
		{"octets beyond the counts ignored", "03 00 0018 00000001 00000000 0000 0001 00000001 ffffffff",
			SACK{CumTSNAck: 1, Dups: []uint32{1}}, nil},
		{"counts beyond the chunk", "03 00 0014 00000001 00000000 0001 0001 00020003", SACK{}, ErrChunkLength},
		{"huge counts", "03 00 0010 00000001 00000000 ffff ffff", SACK{}, ErrChunkLength},
		{"shorter than the fixed fields", "03 00 000c 00000001 00000000", SACK{}, ErrChunkLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSACK(chunkOf(t, hx(t, tc.in)), nil, nil)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s)
		})
	}
	_, err := ParseSACK(Chunk{Type: ChunkData}, nil, nil)
	assert.ErrorIs(t, err, ErrChunkType)
}

func TestParseSACKReusesBuffers(t *testing.T) {
	gaps := make([]GapAckBlock, 3, 8)
	dups := make([]uint32, 1, 4)
	s, err := ParseSACK(chunkOf(t, hx(t, "03 00 001c 0000000c 00004000 0002 0001 0002 0003 0005 0005 0000000d")), gaps, dups)
	require.NoError(t, err)
	assert.Equal(t, []GapAckBlock{{2, 3}, {5, 5}}, s.Gaps)
	assert.Same(t, &gaps[0], &s.Gaps[0], "written into the caller's storage")
	assert.Same(t, &dups[:1][0], &s.Dups[0])
}

func TestSACKAppend_RFC9260_3_3_4(t *testing.T) {
	s := SACK{CumTSNAck: 12, ARwnd: 0x4000, Gaps: []GapAckBlock{{2, 3}, {5, 5}}, Dups: []uint32{13}}
	b := build(t, s.Len(), s.Append)
	assert.Equal(t, hx(t, "03 00 001c 0000000c 00004000 0002 0001 0002 0003 0005 0005 0000000d"), b)
	assert.Equal(t, 16, (&SACK{}).Len())
	assert.Panics(t, func() { (&SACK{Dups: make([]uint32, MaxSACKEntries+1)}).Append(nil) })
	assert.Panics(t, func() { (&SACK{Gaps: make([]GapAckBlock, 65536)}).Append(nil) })
	assert.NotPanics(t, func() { (&SACK{Dups: make([]uint32, MaxSACKEntries)}).Append(nil) })
}
