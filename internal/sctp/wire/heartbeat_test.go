package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeartbeat_RFC9260_3_3_5(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Heartbeat
		wantErr error
	}{
		{"HEARTBEAT", "04 00 000d 0001 0009 0102030405 000000", Heartbeat{Info: []byte{1, 2, 3, 4, 5}}, nil},
		{"HEARTBEAT ACK", "05 00 0008 0001 0004", Heartbeat{Ack: true, Info: []byte{}}, nil},
		{"octets after the info ignored", "04 00 0010 0001 0005 aa000000 c0000004", Heartbeat{Info: []byte{0xaa}}, nil},
		{"no info (what pion's ActiveHeartbeat sends)", "04 00 0004", Heartbeat{}, ErrMissingHeartbeatInfo},
		{"another parameter", "04 00 0008 0007 0004", Heartbeat{}, ErrMissingHeartbeatInfo},
		{"info overruns the chunk", "04 00 000c 0001 0010 01020304", Heartbeat{}, ErrParamLength},
		{"three octets", "04 00 0007 000100", Heartbeat{}, ErrMissingHeartbeatInfo},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHeartbeat(chunkOf(t, hx(t, tc.in)))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, h)
		})
	}
	_, err := ParseHeartbeat(Chunk{Type: ChunkData})
	assert.ErrorIs(t, err, ErrChunkType)
}

// The HEARTBEAT ACK returns the Heartbeat Info unchanged (RFC 9260 §8.3).
func TestHeartbeatEcho_RFC9260_8_3(t *testing.T) {
	in := hx(t, "04 00 000d 0001 0009 0102030405 000000")
	h, err := ParseHeartbeat(chunkOf(t, in))
	require.NoError(t, err)
	h.Ack = true
	b := build(t, h.Len(), h.Append)
	assert.Equal(t, hx(t, "05 00 000d 0001 0009 0102030405 000000"), b)
	assert.Panics(t, func() { (&Heartbeat{Info: make([]byte, MaxHeartbeatInfo+1)}).Append(nil) })
	assert.NotPanics(t, func() { (&Heartbeat{Info: make([]byte, MaxHeartbeatInfo)}).Append(nil) })
}
