package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initChunk assembles an INIT (or INIT ACK) chunk from the hex of its fixed
// fields and parameters, setting the Chunk Length and padding the chunk.
func initChunk(t testing.TB, typ ChunkType, fixed, params string) []byte {
	t.Helper()
	b := append([]byte{byte(typ), 0, 0, 0}, hx(t, fixed+params)...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return Pad(b)
}

const initFixed = "11223344 00100000 000a 000a 00000064"

func TestParseInit_RFC9260_3_3_2(t *testing.T) {
	params := "0005 0008 c0a80001" + // IPv4 Address
		"0006 0014 20010db8000000000000000000000001" + // IPv6 Address
		"0009 0008 00002710" + // Cookie Preservative: 10 s
		"000c 0006 0005 0000" + // Supported Address Types: IPv4
		"c000 0004" + // Forward-TSN-Supported
		"8008 0006 c082 0000" + // Supported Extensions: FORWARD TSN, RE-CONFIG
		"c006 0008 00000001" + // Adaptation Layer Indication: DDP
		"8000 0004" // ECN Capable: not recognized, skipped silently
	i, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, params)))
	require.NoError(t, err)
	assert.False(t, i.Ack)
	assert.Equal(t, uint32(0x11223344), i.InitiateTag)
	assert.Equal(t, uint32(1<<20), i.ARwnd)
	assert.Equal(t, uint16(10), i.OutboundStreams)
	assert.Equal(t, uint16(10), i.InboundStreams)
	assert.Equal(t, uint32(100), i.InitialTSN)
	p := i.Params
	assert.Equal(t, 2, p.NumAddrs)
	assert.Equal(t, netip.MustParseAddr("192.168.0.1"), p.Addrs[0])
	assert.Equal(t, netip.MustParseAddr("2001:db8::1"), p.Addrs[1])
	assert.Equal(t, uint32(10000), p.CookiePreservative)
	assert.True(t, p.HasSupportedAddrTypes)
	assert.Equal(t, AddrTypeIPv4, p.SupportedAddrTypes)
	assert.True(t, p.Supports(AddrTypeIPv4))
	assert.False(t, p.Supports(AddrTypeIPv6), "RFC 9260 §5.1.2: only the listed types")
	assert.True(t, p.ForwardTSN)
	assert.Equal(t, []byte{0xc0, 0x82}, p.Extensions)
	assert.True(t, p.HasExtension(ChunkReconfig))
	assert.True(t, p.HasExtension(ChunkForwardTSN))
	assert.False(t, p.HasExtension(ChunkIData))
	assert.True(t, p.HasAdaptation)
	assert.Equal(t, AdaptationDDP, p.Adaptation)
	assert.Equal(t, 1, p.Unrecognized)
	assert.False(t, p.Report)
	assert.False(t, p.Stopped)
	assert.Nil(t, p.StateCookie)
	assert.Nil(t, p.HostName)
	assert.Len(t, p.Raw, len(hx(t, params)))

	_, err = ParseInit(Chunk{Type: ChunkSACK})
	assert.ErrorIs(t, err, ErrChunkType)
}

func TestParseInitNoParams_RFC9260_5_1_2(t *testing.T) {
	i, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, "")))
	require.NoError(t, err)
	assert.Zero(t, i.Params.NumAddrs)
	assert.True(t, i.Params.Supports(AddrTypeIPv6), "no Supported Address Types: any")
	assert.False(t, i.Params.HasAdaptation)
}

func TestParseInitAck_RFC9260_3_3_3(t *testing.T) {
	params := "0007 0009 0102030405" + "000000" + // State Cookie
		"0008 000c 4001 0008 00000000" + // Unrecognized Parameter: one of ours
		"c006 0008 00000001"
	i, err := ParseInit(chunkOf(t, initChunk(t, ChunkInitAck, initFixed, params)))
	require.NoError(t, err)
	assert.True(t, i.Ack)
	assert.Equal(t, []byte{1, 2, 3, 4, 5}, i.Params.StateCookie)
	assert.Equal(t, 1, i.Params.PeerUnrecognized)
	assert.True(t, i.Params.HasAdaptation)

	_, err = ParseInit(chunkOf(t, initChunk(t, ChunkInitAck, initFixed, "c006 0008 00000001")))
	assert.ErrorIs(t, err, ErrMissingStateCookie, "mandatory in an INIT ACK")
	i, err = ParseInit(chunkOf(t, initChunk(t, ChunkInitAck, initFixed, "0007 0004")))
	require.NoError(t, err, "an empty cookie is present; its MAC check fails later")
	assert.Equal(t, []byte{}, i.Params.StateCookie)
}

func TestParseInitInvalid_RFC9260_3_3_2(t *testing.T) {
	cases := []struct {
		name    string
		typ     ChunkType
		fixed   string
		params  string
		wantErr error
	}{
		{"Initiate Tag 0", ChunkInit, "00000000 00100000 000a 000a 00000064", "", ErrZeroInitiateTag},
		{"Initiate Tag 0 in an INIT ACK", ChunkInitAck, "00000000 00100000 000a 000a 00000064", "0007 0005 01", ErrZeroInitiateTag},
		{"OS 0", ChunkInit, "11223344 00100000 0000 000a 00000064", "", ErrZeroStreams},
		{"MIS 0", ChunkInit, "11223344 00100000 000a 0000 00000064", "", ErrZeroStreams},
		{"a_rwnd 1499", ChunkInit, "11223344 000005db 000a 000a 00000064", "", ErrSmallARwnd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, err := ParseInit(chunkOf(t, initChunk(t, tc.typ, tc.fixed, tc.params)))
			require.ErrorIs(t, err, tc.wantErr)
			assert.NotErrorIs(t, err, ErrMalformed)
			assert.Equal(t, uint32(100), i.InitialTSN, "the fields come with the error, for the ABORT")
		})
	}
	i, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, "11223344 000005dc 000a 000a 00000064", "")))
	require.NoError(t, err, "1500 is enough")
	assert.Equal(t, uint32(MinARwnd), i.ARwnd)
}

func TestParseInitMalformed_RFC9260_3_2_1(t *testing.T) {
	cases := []struct {
		name   string
		params string
		want   error
	}{
		{"IPv4 address of 6 octets", "0005 000a c0a800010000", ErrParamLength},
		{"IPv6 address of 4 octets", "0006 0008 c0a80001", ErrParamLength},
		{"Cookie Preservative of 2 octets", "0009 0006 0001", ErrParamLength},
		{"Supported Address Types of odd length", "000c 0007 000506", ErrParamLength},
		{"Adaptation Layer Indication of 2 octets", "c006 0006 0001", ErrParamLength},
		{"parameter longer than the chunk", "0007 0040 0102", ErrParamLength},
		{"parameter length 2", "0007 0002", ErrParamLength},
		{"dangling octets", "c000 0004 0007", ErrParamLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, tc.params)))
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
	_, err := ParseInit(chunkOf(t, hx(t, "01 00 0012 11223344 00100000 000a 000a 0000 0000")))
	assert.ErrorIs(t, err, ErrChunkLength)
}

// Unrecognized parameters follow the two highest bits of their type (RFC
// 9260 §3.2.1).
func TestInitUnrecognizedParams_RFC9260_3_2_1(t *testing.T) {
	cases := []struct {
		name     string
		params   string
		report   bool
		stopped  bool
		adapt    bool // the ALI after the unrecognized one was read
		nUnknown int
	}{
		{"00: stop, no report", "3fff 0005 aa000000 c006 0008 00000001", false, true, false, 1},
		{"01: stop and report", "7fff 0005 aa000000 c006 0008 00000001", true, true, false, 1},
		{"10: skip", "bfff 0005 aa000000 c006 0008 00000001", false, false, true, 1},
		{"11: skip and report", "ffff 0005 aa000000 c006 0008 00000001", true, false, true, 1},
		{"stop: the rest is not even read", "3fff 0004 0007 0040", false, true, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, tc.params)))
			require.NoError(t, err)
			assert.Equal(t, tc.report, i.Params.Report)
			assert.Equal(t, tc.stopped, i.Params.Stopped)
			assert.Equal(t, tc.adapt, i.Params.HasAdaptation)
			assert.Equal(t, tc.nUnknown, i.Params.Unrecognized)
		})
	}
}

func TestInitAppend_RFC9260_3_3_2(t *testing.T) {
	i := Init{InitiateTag: 0x11223344, ARwnd: 1 << 20, OutboundStreams: 10, InboundStreams: 10, InitialTSN: 100,
		Params: InitParams{
			NumAddrs: 2, Addrs: [MaxInitAddrs]netip.Addr{netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("2001:db8::1")},
			CookiePreservative: 10000, HasSupportedAddrTypes: true, SupportedAddrTypes: AddrTypeIPv4,
			ForwardTSN: true, Extensions: []byte{0xc0, 0x82}, HasAdaptation: true, Adaptation: AdaptationDDP,
		}}
	b := build(t, i.Len(), i.Append)
	want := initChunk(t, ChunkInit, initFixed, "0005 0008 c0a80001"+
		"0006 0014 20010db8000000000000000000000001"+
		"0009 0008 00002710"+
		"000c 0006 0005 0000"+
		"c000 0004"+
		"8008 0006 c082 0000"+
		"c006 0008 00000001")
	assert.Equal(t, want, b)

	// The Chunk Length leaves out the padding of the last parameter (RFC
	// 9260 §3.2).
	j := Init{Ack: true, InitiateTag: 1, ARwnd: 1500, OutboundStreams: 1, InboundStreams: 1,
		Params: InitParams{StateCookie: []byte{1, 2, 3}}}
	b = build(t, j.Len(), j.Append)
	assert.Equal(t, hx(t, "02 00 001b 00000001 000005dc 0001 0001 00000000 0007 0007 010203 00"), b)
}

func TestInitAckEchoesUnrecognized_RFC9260_3_3_3_1(t *testing.T) {
	initParams := "c006 0008 00000001" +
		"bfff 0004" + // skip, no report
		"ffff 0005 aa000000" + // skip and report
		"8000 0004" + // ECN: skip, no report
		"7ffe 0006 bbcc 0000" + // stop and report
		"ffff 0005 dd" // after the stop: not read
	in, err := ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, initParams)))
	require.NoError(t, err)
	require.True(t, in.Params.Report)

	ack := Init{Ack: true, InitiateTag: 5, ARwnd: 1 << 16, OutboundStreams: 1, InboundStreams: 1, InitialTSN: 9,
		Params: InitParams{StateCookie: []byte{7, 7, 7, 7}, EchoUnrecognized: in.Params.Raw}}
	b := build(t, ack.Len(), ack.Append)
	assert.Equal(t, initChunk(t, ChunkInitAck, "00000005 00010000 0001 0001 00000009",
		"0007 0008 07070707"+
			"0008 0009 ffff 0005 aa 000000"+
			"0008 000a 7ffe 0006 bbcc"), b)
	got, err := ParseInit(chunkOf(t, b))
	require.NoError(t, err)
	assert.Equal(t, 2, got.Params.PeerUnrecognized)
}

func TestInitAppendHostNameAndAllAddrTypes(t *testing.T) {
	i := Init{InitiateTag: 1, ARwnd: 1500, OutboundStreams: 1, InboundStreams: 1,
		Params: InitParams{HostName: []byte("a.example\x00"), HasSupportedAddrTypes: true,
			SupportedAddrTypes: AddrTypeIPv4 | AddrTypeIPv6 | AddrTypeHostName}}
	b := build(t, i.Len(), i.Append)
	got, err := ParseInit(chunkOf(t, b))
	require.NoError(t, err)
	assert.Equal(t, []byte("a.example\x00"), got.Params.HostName)
	assert.Equal(t, AddrTypeIPv4|AddrTypeIPv6|AddrTypeHostName, got.Params.SupportedAddrTypes)
	assert.Equal(t, hx(t, "000c 000a 0005 0006 000b"), b[InitHeaderLen+16:InitHeaderLen+26])

	// More addresses than kept: counted, the first MaxInitAddrs kept.
	var params string
	for k := 0; k < MaxInitAddrs+2; k++ {
		params += fmt.Sprintf("0005 0008 0a0000%02x", k)
	}
	got, err = ParseInit(chunkOf(t, initChunk(t, ChunkInit, initFixed, params)))
	require.NoError(t, err)
	assert.Equal(t, MaxInitAddrs+2, got.Params.NumAddrs)
	assert.Equal(t, netip.MustParseAddr("10.0.0.7"), got.Params.Addrs[MaxInitAddrs-1])
	assert.Len(t, got.Params.addrs(), MaxInitAddrs)
}
