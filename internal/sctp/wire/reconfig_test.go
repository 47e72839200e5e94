package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 6525 §4.1: an Outgoing SSN Reset Request (type 13) with request
// sequence 7, response sequence 3, last TSN 0x100, streams 1 and 2, as
// pion sends it when it closes a stream.
func TestParseReconfig_OutgoingRequest(t *testing.T) {
	c := Chunk{Type: ChunkReconfig, Value: hx(t, "000d 0014 00000007 00000003 00000100 0001 0002")}
	var reqs []ReconfigRequest
	require.NoError(t, ParseReconfig(c, func(r ReconfigRequest) { reqs = append(reqs, r) }, nil))
	require.Len(t, reqs, 1)
	assert.Equal(t, ParamOutgoingSSNReset, reqs[0].Type)
	assert.Equal(t, uint32(7), reqs[0].SeqNum)
	assert.Len(t, reqs[0].Rest, 12)
	last, streams, err := reqs[0].OutgoingSSNReset()
	require.NoError(t, err)
	assert.Equal(t, uint32(0x100), last)
	assert.Equal(t, []byte{0, 1, 0, 2}, streams)
	_, _, err = ReconfigRequest{Type: ParamOutgoingSSNReset, Rest: make([]byte, 9)}.OutgoingSSNReset()
	assert.Error(t, err, "half a stream number")
}

// RFC 6525 §4.1, §4.2: the Outgoing SSN Reset Request this stack sends
// in answer to an Incoming one parses back, padded to a word; an
// Incoming request's streams are read.
func TestOutgoingSSNReset_RoundTrip(t *testing.T) {
	b := AppendOutgoingSSNReset(nil, 9, 7, 0x100, []byte{0, 3})
	assert.Equal(t, hx(t, "82000016 000d0012 00000009 00000007 00000100 0003 0000"), b)
	c, n, err := ParseChunk(b)
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	var reqs []ReconfigRequest
	require.NoError(t, ParseReconfig(c, func(r ReconfigRequest) { reqs = append(reqs, r) }, nil))
	require.Len(t, reqs, 1)
	last, streams, err := reqs[0].OutgoingSSNReset()
	require.NoError(t, err)
	assert.Equal(t, uint32(0x100), last)
	assert.Equal(t, []byte{0, 3}, streams)

	in := ReconfigRequest{Type: ParamIncomingSSNReset, SeqNum: 7, Rest: []byte{0, 1, 0, 2}}
	streams, err = in.IncomingSSNReset()
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 0, 2}, streams)
	_, err = ReconfigRequest{Type: ParamIncomingSSNReset, Rest: []byte{1}}.IncomingSSNReset()
	assert.Error(t, err)
}

func TestReconfigResponse_RoundTrip(t *testing.T) {
	b := AppendReconfigResponses(nil, ReconfigResponse{SeqNum: 7, Result: ReconfigSuccessPerformed},
		ReconfigResponse{SeqNum: 8, Result: ReconfigDenied})
	assert.Equal(t, hx(t, "8200001c 0010000c 00000007 00000001 0010000c 00000008 00000002"), b)
	c, n, err := ParseChunk(b)
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	var got []ReconfigResponse
	require.NoError(t, ParseReconfig(c, nil, func(r ReconfigResponse) { got = append(got, r) }))
	assert.Equal(t, []ReconfigResponse{{7, ReconfigSuccessPerformed}, {8, ReconfigDenied}}, got)
}

func TestParseReconfig_Malformed(t *testing.T) {
	for name, v := range map[string]string{
		"short request":  "000d 0006 0000",
		"short response": "0010 0008 00000001",
		"overrun":        "000d 0020 00000001",
	} {
		t.Run(name, func(t *testing.T) {
			err := ParseReconfig(Chunk{Type: ChunkReconfig, Value: hx(t, v)}, func(ReconfigRequest) {}, func(ReconfigResponse) {})
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
	assert.ErrorIs(t, ParseReconfig(Chunk{Type: ChunkSACK}, nil, nil), ErrChunkType)
}

// FuzzReconfig: any RE-CONFIG value parses without panic, and the
// requests it yields answer into a chunk that parses back.
func FuzzReconfig(f *testing.F) {
	f.Add(hx(f, "000d 0014 00000007 00000003 00000100 0001 0002"))
	f.Add(hx(f, "0010 000c 00000007 00000001"))
	f.Add(hx(f, "000e 000c 00000001 0005 0000"))
	f.Fuzz(func(t *testing.T, v []byte) {
		var rs []ReconfigResponse
		err := ParseReconfig(Chunk{Type: ChunkReconfig, Value: v}, func(r ReconfigRequest) {
			if last, streams, err := r.OutgoingSSNReset(); err == nil {
				require.Equal(t, r.Type, ParamOutgoingSSNReset)
				require.Zero(t, len(streams)%2)
				_ = last
			}
			if streams, err := r.IncomingSSNReset(); err == nil {
				b := AppendOutgoingSSNReset(nil, r.SeqNum, r.SeqNum, 1, streams)
				c, _, err := ParseChunk(b)
				require.NoError(t, err)
				require.NoError(t, ParseReconfig(c, nil, nil))
			}
			rs = append(rs, ReconfigResponse{SeqNum: r.SeqNum, Result: ReconfigDenied})
		}, func(ReconfigResponse) {})
		if err != nil || len(rs) == 0 || len(rs) > 100 {
			return
		}
		b := AppendReconfigResponses(nil, rs...)
		c, _, err := ParseChunk(b)
		require.NoError(t, err)
		n := 0
		require.NoError(t, ParseReconfig(c, nil, func(ReconfigResponse) { n++ }))
		require.Equal(t, len(rs), n)
	})
}
