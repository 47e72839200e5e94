package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Zero Checksum Acceptable parameter is type 0x8001, length 8, then
// the EDMID (RFC 9653 §4), written after the other parameters and read
// back; 0 (reserved) is not written.
func TestZeroChecksumParam_RFC9653_4(t *testing.T) {
	i := Init{InitiateTag: 0x11223344, ARwnd: 1 << 20, OutboundStreams: 10, InboundStreams: 10, InitialTSN: 100,
		Params: InitParams{HasAdaptation: true, Adaptation: AdaptationDDP, ZeroChecksumEDMID: EDMIDDTLS}}
	b := build(t, i.Len(), i.Append)
	assert.Equal(t, initChunk(t, ChunkInit, initFixed, "c006 0008 00000001"+"8001 0008 00000001"), b)
	c, _, err := ParseChunk(b)
	require.NoError(t, err)
	got, err := ParseInit(c)
	require.NoError(t, err)
	assert.Equal(t, EDMIDDTLS, got.Params.ZeroChecksumEDMID)
	assert.Zero(t, got.Params.Unrecognized, "a recognized parameter")

	i.Params.ZeroChecksumEDMID = 0
	assert.NotContains(t, string(build(t, i.Len(), i.Append)), string(hx(t, "8001 0008")))

	// Another method's identifier is kept as sent; the caller compares it.
	c, _, err = ParseChunk(initChunk(t, ChunkInitAck, initFixed, "0007 0008 01020304"+"8001 0008 00000002"))
	require.NoError(t, err)
	got, err = ParseInit(c)
	require.NoError(t, err)
	assert.Equal(t, uint32(2), got.Params.ZeroChecksumEDMID)
}

// A Zero Checksum Acceptable parameter of another length is malformed.
func TestZeroChecksumParamLength_RFC9653_4(t *testing.T) {
	for _, v := range []string{"8001 0004", "8001 0006 0001 0000", "8001 000c 00000001 00000000"} {
		c, _, err := ParseChunk(initChunk(t, ChunkInit, initFixed, v))
		require.NoError(t, err, v)
		_, err = ParseInit(c)
		assert.ErrorIs(t, err, ErrParamLength, v)
	}
}

// A receiver that announced the parameter takes a zero checksum, except
// on a packet that starts with an INIT or a COOKIE ECHO (RFC 9653 §5.2,
// §5.3); a non-zero checksum is for ChecksumOK.
func TestZeroChecksumOK_RFC9653_5_3(t *testing.T) {
	for _, tc := range []struct {
		pkt  string
		want bool
	}{
		{"1388 1388 01020304 00000000 00030010 00000001 00010000 00000000", true}, // DATA
		{"1388 1388 01020304 00000000 03000010 00000001 00010000 00000000", true}, // SACK
		{"1388 1388 01020304 00000000 0b000004", true},                            // COOKIE ACK
		{"1388 1388 00000000 00000000 01000014 11223344 00100000 000a 000a 00000064", false},
		{"1388 1388 01020304 00000000 0a000008 01020304", false}, // COOKIE ECHO
		{"1388 1388 01020304 00000001 00030010 00000001 00010000 00000000", false},
		{"1388 1388 01020304 00000000", false}, // no chunk
	} {
		assert.Equal(t, tc.want, ZeroChecksumOK(hx(t, tc.pkt)), tc.pkt)
	}
	pkt := hx(t, "1388 1388 01020304 deadbeef 0b000004")
	SetZeroChecksum(pkt)
	assert.True(t, ZeroChecksumOK(pkt))
	assert.False(t, ChecksumOK(pkt))
	SetZeroChecksum(make([]byte, 5)) // too short: nothing to clear, no panic
}
