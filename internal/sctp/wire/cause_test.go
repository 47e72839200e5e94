package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCauses_RFC9260_3_3_10(t *testing.T) {
	cases := []struct {
		name   string
		append func([]byte) []byte
		want   string
		check  func(t *testing.T, c Cause)
	}{
		{"Invalid Stream Identifier (§3.3.10.1)", func(b []byte) []byte { return AppendCauseInvalidStream(b, 0x1234) },
			"0001 0008 1234 0000", func(t *testing.T, c Cause) {
				s, err := c.InvalidStream()
				require.NoError(t, err)
				assert.Equal(t, uint16(0x1234), s)
			}},
		{"Missing Mandatory Parameter (§3.3.10.2)", func(b []byte) []byte {
			return AppendCauseMissingParams(b, ParamStateCookie, ParamAdaptationLayer)
		}, "0002 000c 00000002 0007 c006", func(t *testing.T, c Cause) {
			ps, err := c.MissingParams(nil)
			require.NoError(t, err)
			assert.Equal(t, []ParamType{ParamStateCookie, ParamAdaptationLayer}, ps)
		}},
		{"Stale Cookie Error (§3.3.10.3)", func(b []byte) []byte { return AppendCauseStaleCookie(b, 2500000) },
			"0003 0008 002625a0", func(t *testing.T, c Cause) {
				s, err := c.Staleness()
				require.NoError(t, err)
				assert.Equal(t, uint32(2500000), s)
			}},
		{"Out of Resource (§3.3.10.4)", func(b []byte) []byte { return AppendCause(b, CauseOutOfResource, nil) },
			"0004 0004", nil},
		{"Unresolvable Address (§3.3.10.5)", func(b []byte) []byte {
			return AppendCauseUnresolvableAddress(b, Param{Type: ParamHostNameAddress, Value: []byte("h\x00")})
		}, "0005 000a 000b 0006 6800", func(t *testing.T, c Cause) {
			it := c.Params()
			p, ok := it.Next()
			require.True(t, ok)
			assert.Equal(t, Param{Type: ParamHostNameAddress, Value: []byte("h\x00")}, p)
		}},
		{"Unrecognized Chunk Type (§3.3.10.6)", func(b []byte) []byte {
			return AppendCauseUnrecognizedChunk(b, Chunk{Type: 0xff, Flags: 1, Value: []byte{9}})
		}, "0006 0009 ff01 0005 09", func(t *testing.T, c Cause) {
			ch, err := c.UnrecognizedChunk()
			require.NoError(t, err)
			assert.Equal(t, Chunk{Type: 0xff, Flags: 1, Value: []byte{9}}, ch)
		}},
		{"No User Data (§3.3.10.9)", func(b []byte) []byte { return AppendCauseNoUserData(b, 77) },
			"0009 0008 0000004d", func(t *testing.T, c Cause) {
				tsn, err := c.NoUserDataTSN()
				require.NoError(t, err)
				assert.Equal(t, uint32(77), tsn)
			}},
		{"User-Initiated Abort (§3.3.10.12)", func(b []byte) []byte { return AppendCause(b, CauseUserInitiatedAbort, []byte("x")) },
			"000c 0005 78", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.append(nil)
			assert.Equal(t, hx(t, tc.want), b)
			c, n, err := ParseCause(b)
			require.NoError(t, err)
			assert.Equal(t, len(b), n)
			if tc.check != nil {
				tc.check(t, c)
			}
			// Followed by another cause, it is padded first.
			b = AppendCause(b, CauseProtocolViolation, nil)
			assert.Equal(t, hx(t, "000d 0004"), b[len(b)-4:])
			assert.Zero(t, (len(b)-4)%4)
		})
	}
}

func TestCauseAccessorsReject(t *testing.T) {
	c := Cause{Code: CauseProtocolViolation, Info: []byte{1, 2, 3, 4}}
	_, err := c.InvalidStream()
	assert.ErrorIs(t, err, ErrCauseCode)
	_, err = c.Staleness()
	assert.ErrorIs(t, err, ErrCauseCode)
	_, err = c.NoUserDataTSN()
	assert.ErrorIs(t, err, ErrCauseCode)
	_, err = c.MissingParams(nil)
	assert.ErrorIs(t, err, ErrCauseCode)
	_, err = c.UnrecognizedChunk()
	assert.ErrorIs(t, err, ErrCauseCode)
	it := c.Params()
	_, ok := it.Next()
	assert.False(t, ok)
	assert.ErrorIs(t, it.Err(), ErrCauseCode)

	short := []Cause{{Code: CauseInvalidStream, Info: []byte{1}}, {Code: CauseStaleCookie}, {Code: CauseNoUserData, Info: []byte{1, 2, 3}}}
	_, err = short[0].InvalidStream()
	assert.ErrorIs(t, err, ErrCauseLength)
	_, err = short[1].Staleness()
	assert.ErrorIs(t, err, ErrCauseLength)
	_, err = short[2].NoUserDataTSN()
	assert.ErrorIs(t, err, ErrCauseLength)
	_, err = Cause{Code: CauseMissingParam, Info: hx(t, "ffffffff 0007")}.MissingParams(nil)
	assert.ErrorIs(t, err, ErrCauseLength, "a count beyond the cause")
	_, err = Cause{Code: CauseMissingParam, Info: hx(t, "0000")}.MissingParams(nil)
	assert.ErrorIs(t, err, ErrCauseLength)
	_, err = Cause{Code: CauseUnrecognizedChunk, Info: hx(t, "ff00 0009")}.UnrecognizedChunk()
	assert.ErrorIs(t, err, ErrChunkLength)
}

func TestCauseIter(t *testing.T) {
	it := NewCauseIter(hx(t, "0004 0004 000c 0005 78 000000 0001 0003"))
	n := 0
	for _, ok := it.Next(); ok; _, ok = it.Next() {
		n++
	}
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, it.Err(), ErrCauseLength)
	assert.ErrorIs(t, it.Err(), ErrMalformed)
}

func TestCauseCodeString(t *testing.T) {
	assert.Equal(t, "Invalid Stream Identifier", CauseInvalidStream.String())
	assert.Equal(t, "Protocol Violation", CauseProtocolViolation.String())
	assert.Equal(t, "cause code 0", CauseCode(0).String())
	assert.Equal(t, "cause code 14", CauseCode(14).String())
}

// An INIT ACK's unrecognized parameters that ask for a report go back in
// one Unrecognized Parameters cause of an ERROR chunk (RFC 9260 §3.2.1,
// §3.3.10.8).
func TestCauseUnrecognizedParams_RFC9260_3_3_10_8(t *testing.T) {
	raw := hx(t, "0007 0005 01 000000"+ // State Cookie: recognized
		"ffff 0005 aa 000000"+ // skip and report
		"bfff 0004"+ // skip silently
		"4001 0008 01020304"+ // stop and report
		"ffff 0004") // not read
	b := AppendCauseUnrecognizedParams(nil, raw)
	assert.Equal(t, hx(t, "0008 0014 ffff 0005 aa000000 4001 0008 01020304"), b)
	c, _, err := ParseCause(b)
	require.NoError(t, err)
	it := c.Params()
	var got []ParamType
	for p, ok := it.Next(); ok; p, ok = it.Next() {
		got = append(got, p.Type)
	}
	assert.Equal(t, []ParamType{0xffff, 0x4001}, got)

	// The Cause Length leaves out the padding of the last parameter only.
	b = AppendCauseUnrecognizedParams(nil, hx(t, "ffff 0005 aa 000000 ffff 0006 bbcc"))
	assert.Equal(t, hx(t, "0008 0012 ffff 0005 aa000000 ffff 0006 bbcc"), b)

	assert.Empty(t, AppendCauseUnrecognizedParams(nil, hx(t, "bfff 0004 0007 0004")), "nothing to report")
	assert.Empty(t, AppendCauseUnrecognizedParams(nil, hx(t, "ffff 0010")), "malformed: nothing")
}

func TestCauseTooLongNotReported(t *testing.T) {
	big := Chunk{Type: 0xff, Value: make([]byte, MaxChunkLen-ChunkHeaderLen)}
	assert.Empty(t, AppendCauseUnrecognizedChunk(nil, big))
	fits := Chunk{Type: 0xff, Value: make([]byte, maxTLVValue-ChunkHeaderLen)}
	assert.Len(t, AppendCauseUnrecognizedChunk(nil, fits), 65535)
	assert.Empty(t, AppendCauseUnresolvableAddress(nil, Param{Type: ParamHostNameAddress, Value: make([]byte, 65531)}))
	assert.Panics(t, func() { AppendCause(nil, CauseProtocolViolation, make([]byte, 65532)) })
}
