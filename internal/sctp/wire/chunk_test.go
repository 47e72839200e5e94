package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseChunk_RFC9260_3_2(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Chunk
		wantN   int
		wantErr error
	}{
		{"empty value", "0b 00 0004", Chunk{Type: ChunkCookieAck, Value: []byte{}}, 4, nil},
		{"value, padded", "00 03 0005 aa 000000", Chunk{Type: ChunkData, Flags: 3, Value: []byte{0xaa}}, 8, nil},
		{"padding of the last chunk missing", "00 03 0005 aa", Chunk{Type: ChunkData, Flags: 3, Value: []byte{0xaa}}, 5, nil},
		{"padding partly present", "00 03 0005 aa 00", Chunk{Type: ChunkData, Flags: 3, Value: []byte{0xaa}}, 6, nil},
		{"non-zero padding is ignored", "09 00 0006 0102 ffff", Chunk{Type: ChunkError, Value: []byte{1, 2}}, 8, nil},
		{"next chunk follows", "07 00 0008 00000001 0b000004", Chunk{Type: ChunkShutdown, Value: []byte{0, 0, 0, 1}}, 8, nil},
		{"three octets", "0b 00 00", Chunk{}, 0, ErrTruncated},
		{"nothing", "", Chunk{}, 0, ErrTruncated},
		{"length below the header", "0b 00 0003 00", Chunk{}, 0, ErrChunkLength},
		{"length 0", "0b 00 0000 00000000", Chunk{}, 0, ErrChunkLength},
		{"length beyond the packet", "07 00 0009 00000001", Chunk{}, 0, ErrChunkLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, n, err := ParseChunk(hx(t, tc.in))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.ErrorIs(t, err, ErrMalformed)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c)
			assert.Equal(t, tc.wantN, n)
			assert.Equal(t, len(c.Value), cap(c.Value), "the value cannot be appended to over the next chunk")
		})
	}
}

func TestChunkIter_RFC9260_3_2(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		wantTypes []ChunkType
		wantErr   error
	}{
		{"none", "", nil, nil},
		{"bundle", "0b000004 07000008 00000001 00030005 aa000000 0e010004", []ChunkType{ChunkCookieAck, ChunkShutdown, ChunkData, ChunkShutdownComplete}, nil},
		{"unpadded last chunk", "0b000004 00030005 aa", []ChunkType{ChunkCookieAck, ChunkData}, nil},
		{"malformed second chunk ends the walk", "0b000004 07000003 00000000", []ChunkType{ChunkCookieAck}, ErrChunkLength},
		{"trailing octets after the padding", "00030005 aa000000 0000", []ChunkType{ChunkData}, ErrTruncated},
		{"length running past the end", "0b000004 0700000c 00000001", []ChunkType{ChunkCookieAck}, ErrChunkLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := NewChunkIter(hx(t, tc.in))
			var got []ChunkType
			for c, ok := it.Next(); ok; c, ok = it.Next() {
				got = append(got, c.Type)
			}
			assert.Equal(t, tc.wantTypes, got)
			if tc.wantErr == nil {
				assert.NoError(t, it.Err())
			} else {
				assert.ErrorIs(t, it.Err(), tc.wantErr)
			}
			_, ok := it.Next()
			assert.False(t, ok, "stays ended")
			assert.Empty(t, it.Rest())
		})
	}
}

func TestChunkTypeAction_RFC9260_3_2(t *testing.T) {
	cases := []struct {
		t      ChunkType
		want   Action
		skip   bool
		report bool
	}{
		{0x3f, ActionStop, false, false},
		{ChunkData, ActionStop, false, false},
		{ChunkIData, ActionStopReport, false, true},
		{0x7f, ActionStopReport, false, true},
		{ChunkReconfig, ActionSkip, true, false},
		{ChunkPad, ActionSkip, true, false},
		{ChunkForwardTSN, ActionSkipReport, true, true},
		{0xff, ActionSkipReport, true, true},
	}
	for _, tc := range cases {
		a := tc.t.Action()
		assert.Equal(t, tc.want, a, "%v", tc.t)
		assert.Equal(t, tc.skip, a.Skip(), "%v", tc.t)
		assert.Equal(t, tc.report, a.Report(), "%v", tc.t)
	}
	assert.Equal(t, "stop", ActionStop.String())
	assert.Equal(t, "stop and report", ActionStopReport.String())
	assert.Equal(t, "skip", ActionSkip.String())
	assert.Equal(t, "skip and report", ActionSkipReport.String())
}

func TestChunkTypeString(t *testing.T) {
	assert.Equal(t, "DATA", ChunkData.String())
	assert.Equal(t, "INIT ACK", ChunkInitAck.String())
	assert.Equal(t, "SHUTDOWN COMPLETE", ChunkShutdownComplete.String())
	assert.Equal(t, "FORWARD TSN", ChunkForwardTSN.String())
	assert.Equal(t, "RE-CONFIG", ChunkReconfig.String())
	assert.Equal(t, "chunk type 99", ChunkType(99).String())
}

func TestChunkAppend(t *testing.T) {
	c := Chunk{Type: ChunkType(0xbf), Flags: 0x5a, Value: []byte{1, 2, 3, 4, 5}}
	b := build(t, 12, c.Append)
	assert.Equal(t, hx(t, "bf 5a 0009 0102030405 000000"), b)
	assert.Equal(t, c, chunkOf(t, b))
	assert.Equal(t, 9, c.Len())
}

func TestBeginEndChunk_RFC9260_3_2(t *testing.T) {
	b := []byte{0xee, 0xee, 0xee, 0xee} // an earlier chunk
	start := len(b)
	b = BeginChunk(b, ChunkError, 0)
	b = AppendCause(b, CauseUserInitiatedAbort, []byte("bye"))
	b, err := EndChunk(b, start)
	require.NoError(t, err)
	// The Chunk Length leaves out the padding of the last cause; the chunk
	// is padded all the same.
	assert.Equal(t, hx(t, "eeeeeeee 09 00 000b 000c 0007 627965 00"), b)

	// Too long for the 16-bit length: cut back, ErrTooLong.
	b = BeginChunk(b[:8], ChunkError, 0)
	b = append(b, make([]byte, MaxChunkLen)...)
	b, err = EndChunk(b, 8)
	assert.ErrorIs(t, err, ErrTooLong)
	assert.NotErrorIs(t, err, ErrMalformed)
	assert.Len(t, b, 8)

	_, err = EndChunk([]byte{1, 2}, 0)
	assert.ErrorIs(t, err, ErrChunkLength, "no header to complete")
	_, err = EndChunk([]byte{1, 2, 3, 4}, -1)
	assert.ErrorIs(t, err, ErrChunkLength)
}

func TestPad_RFC9260_3_2(t *testing.T) {
	for n := 0; n < 9; n++ {
		b := Pad(make([]byte, n))
		assert.Len(t, b, (n+3)/4*4)
		assert.Len(t, Pad(b), len(b), "aligned: nothing to add")
	}
}

func TestErrorsIs(t *testing.T) {
	for _, e := range []error{ErrTruncated, ErrChunkLength, ErrParamLength, ErrCauseLength} {
		assert.ErrorIs(t, e, ErrMalformed, e.Error())
	}
	for _, e := range []error{ErrChecksum, ErrChunkType, ErrCauseCode, ErrTooLong, ErrNoUserData,
		ErrZeroInitiateTag, ErrZeroStreams, ErrSmallARwnd, ErrMissingStateCookie, ErrMissingHeartbeatInfo} {
		assert.NotErrorIs(t, e, ErrMalformed, e.Error())
	}
	assert.Equal(t, "internal/sctp/wire: bad checksum", ErrChecksum.Error())
}
