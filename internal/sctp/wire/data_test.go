package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseData_RFC9260_3_3_1(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Data
		wantErr error
	}{
		{"unordered, unfragmented DDP segment", "00 07 0013 00000064 0003 0000 00000010 aabbcc 00",
			Data{Unordered: true, Beginning: true, Ending: true, TSN: 100, StreamID: 3, PPID: 16, UserData: []byte{0xaa, 0xbb, 0xcc}}, nil},
		{"ordered middle fragment", "00 00 0014 ffffffff 0001 0102 00000011 01020304",
			Data{TSN: 0xffffffff, StreamID: 1, SSN: 0x102, PPID: 17, UserData: []byte{1, 2, 3, 4}}, nil},
		{"I bit, first fragment", "00 0a 0011 00000001 0000 0000 00000000 ff 000000",
			Data{Immediate: true, Beginning: true, TSN: 1, UserData: []byte{0xff}}, nil},
		{"reserved flags ignored", "00 f1 0011 00000001 0000 0000 00000000 ff 000000",
			Data{Ending: true, TSN: 1, UserData: []byte{0xff}}, nil},
		{"no user data: fields and ErrNoUserData", "00 03 0010 0000002a 0005 0000 00000010",
			Data{Beginning: true, Ending: true, TSN: 42, StreamID: 5, PPID: 16, UserData: []byte{}}, ErrNoUserData},
		{"shorter than the fixed fields", "00 03 000f 0000002a 0005 0000 000000", Data{}, ErrChunkLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseData(chunkOf(t, hx(t, tc.in)))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, d)
		})
	}
	_, err := ParseData(Chunk{Type: ChunkSACK})
	assert.ErrorIs(t, err, ErrChunkType)
	_, err = ParseData(chunkOf(t, hx(t, "00 03 000f 0000002a 0005 0000 000000")))
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = ParseData(chunkOf(t, hx(t, "00 03 0010 0000002a 0005 0000 00000010")))
	assert.NotErrorIs(t, err, ErrMalformed, "a well-formed chunk the RFC answers with an ABORT")
}

func TestDataAppend_RFC9260_3_3_1(t *testing.T) {
	d := Data{Unordered: true, Beginning: true, Ending: true, TSN: 0x01020304, StreamID: 9, SSN: 0, PPID: 16, UserData: []byte("hello")}
	b := build(t, d.Len(), d.Append)
	assert.Equal(t, hx(t, "00 07 0015 01020304 0009 0000 00000010 68656c6c6f 000000"), b)
	assert.Equal(t, DataFlagBeginning|DataFlagEnding|DataFlagUnordered, d.Flags())
	assert.Equal(t, DataFlagImmediate, (&Data{Immediate: true}).Flags())

	// In pieces: header, the user data from two slices, padding.
	b2 := d.AppendHeader(nil, 5)
	b2 = append(append(b2, "he"...), "llo"...)
	assert.Equal(t, b, Pad(b2))

	assert.Panics(t, func() { (&Data{UserData: make([]byte, MaxUserData+1)}).Append(nil) })
	assert.Panics(t, func() { (&Data{}).AppendHeader(nil, -1) })
	assert.NotPanics(t, func() { (&Data{UserData: make([]byte, MaxUserData)}).Append(nil) })
}
