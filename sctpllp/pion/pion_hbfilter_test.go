package pion

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// sctpPacket builds a packet with a valid CRC32c from raw chunks.
func sctpPacket(chunks ...[]byte) []byte {
	p := make([]byte, wire.HeaderLen)
	binary.BigEndian.PutUint16(p[0:], 5000)
	binary.BigEndian.PutUint16(p[2:], 5000)
	binary.BigEndian.PutUint32(p[4:], 0x7124769e)
	for _, c := range chunks {
		p = append(p, c...)
	}
	wire.SetChecksum(p)
	return p
}

// TestStripBareHeartbeats: pion's 4-octet HEARTBEAT (no Heartbeat Info,
// RFC 9260 §3.3.5) is removed, everything else is kept byte for byte, the
// CRC32c is recomputed, and a packet of nothing else is not sent.
func TestStripBareHeartbeats(t *testing.T) {
	bare := []byte{4, 0, 0, 4}
	good := []byte{4, 0, 0, 16, 0, 1, 0, 12, 1, 2, 3, 4, 5, 6, 7, 8} // with info
	sack := []byte{3, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0, 0}
	data := []byte{0, 7, 0, 21, 0, 0, 0, 9, 0, 1, 0, 0, 0, 0, 0, 16, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 0}
	tests := []struct {
		name    string
		in      []byte
		want    []byte // nil: unchanged
		dropped bool
	}{
		{"bare heartbeat alone: not sent", sctpPacket(bare), nil, true},
		{"bare heartbeat bundled with a SACK", sctpPacket(sack, bare), sctpPacket(sack), false},
		{"bare heartbeat between DATA chunks", sctpPacket(data, bare, data), sctpPacket(data, data), false},
		{"heartbeat with info: untouched", sctpPacket(good), nil, false},
		{"DATA and SACK: untouched", sctpPacket(data, sack), nil, false},
		{"malformed chunk: untouched", append(sctpPacket(sack), 4, 0, 0), nil, false},
		{"short packet: untouched", []byte{1, 2, 3}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := stripBareHeartbeats(tc.in)
			switch {
			case tc.dropped:
				require.True(t, changed)
				assert.Empty(t, out)
			case tc.want == nil:
				assert.False(t, changed)
				assert.Equal(t, tc.in, out)
			default:
				require.True(t, changed)
				assert.Equal(t, tc.want, out)
				assert.True(t, wire.ChecksumOK(out))
			}
		})
	}
}

// FuzzStripBareHeartbeats: any input leaves either the same packet or a
// shorter one with a good checksum and no bare HEARTBEAT.
func FuzzStripBareHeartbeats(f *testing.F) {
	f.Add(sctpPacket([]byte{4, 0, 0, 4}))
	f.Add(sctpPacket([]byte{3, 0, 0, 4}, []byte{4, 0, 0, 4}))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		out, changed := stripBareHeartbeats(pkt)
		if !changed {
			require.Equal(t, pkt, out)
			return
		}
		require.Less(t, len(out), len(pkt))
		if len(out) == 0 {
			return
		}
		require.True(t, wire.ChecksumOK(out))
		again, changed2 := stripBareHeartbeats(out)
		require.False(t, changed2)
		require.Equal(t, out, again)
	})
}
