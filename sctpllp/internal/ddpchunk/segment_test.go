package ddpchunk

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5043 §5.2.2 figure: DDP-SSN (16 bits) then the DDP segment.
func TestSegmentChunk_RFC5043_5_2_2(t *testing.T) {
	tests := []struct {
		name    string
		wire    []byte
		want    Segment
		wantErr error
	}{
		{name: "ssn 0, untagged header start", wire: []byte{0x00, 0x00, 0x41, 0x00, 0x00, 0x00},
			want: Segment{SSN: 0, Segment: []byte{0x41, 0x00, 0x00, 0x00}}},
		{name: "ssn 0xBEEF", wire: []byte{0xBE, 0xEF, 0xFF},
			want: Segment{SSN: 0xBEEF, Segment: []byte{0xFF}}},
		{name: "ssn only", wire: []byte{0x7F, 0xFF}, want: Segment{SSN: 0x7FFF, Segment: []byte{}}},
		{name: "one octet", wire: []byte{0x01}, wantErr: ErrTruncated},
		{name: "empty", wire: nil, wantErr: ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ParseSegment(tc.wire)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Zero(t, n)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
			assert.Equal(t, tc.want.SSN, got.SSN)
			assert.Equal(t, tc.want.Segment, got.Segment)
			assert.Equal(t, len(tc.wire), got.Len())
			assert.Equal(t, tc.wire, got.Append(nil))
			if len(got.Segment) > 0 {
				assert.Same(t, &tc.wire[2], &got.Segment[0], "segment aliases the input")
			}
		})
	}
}

func TestSegmentChunk_AppendNoAlloc(t *testing.T) {
	c := Segment{SSN: 7, Segment: bytes.Repeat([]byte{1}, 100)}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() { buf = c.Append(buf[:0]) })
	assert.Zero(t, allocs)
}

func FuzzSegmentChunk(f *testing.F) {
	f.Add([]byte{0, 0, 0x41, 0, 0, 0})
	f.Add([]byte{0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := ParseSegment(b)
		if err != nil {
			return
		}
		if n != len(b) || c.Len() != len(b) || !bytes.Equal(c.Append(nil), b) {
			t.Fatalf("round trip mismatch")
		}
	})
}
