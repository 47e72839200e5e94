package mpa

import (
	"encoding/binary"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// siwPcap is a capture of a real Linux siw rping exchange (a copy of the
// project's spec/captures/rping-siw.pcap): server port 7174, CRC not
// negotiated, no Markers, enhanced MPA revision 2.
const siwPcap = "testdata/rping-siw.pcap"

// tcpStreams reads a classic little-endian Ethernet pcap and returns the
// TCP payload of each direction, keyed by source port, reassembled by
// sequence number (duplicates dropped).
func tcpStreams(t *testing.T, path string) map[uint16][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(raw), 24)
	require.Equal(t, uint32(0xa1b2c3d4), binary.LittleEndian.Uint32(raw))
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(raw[20:]), "Ethernet link type")
	type seg struct {
		seq  uint32
		data []byte
	}
	segs := map[uint16][]seg{}
	for off := 24; off+16 <= len(raw); {
		incl := int(binary.LittleEndian.Uint32(raw[off+8:]))
		pkt := raw[off+16 : off+16+incl]
		off += 16 + incl
		if len(pkt) < 14+20 || binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			continue
		}
		ip := pkt[14:]
		ihl := int(ip[0]&0x0f) * 4
		if ip[9] != 6 {
			continue
		}
		total := int(binary.BigEndian.Uint16(ip[2:]))
		tcp := ip[ihl:total]
		doff := int(tcp[12]>>4) * 4
		sport := binary.BigEndian.Uint16(tcp)
		if payload := tcp[doff:]; len(payload) > 0 {
			segs[sport] = append(segs[sport], seg{binary.BigEndian.Uint32(tcp[4:]), payload})
		}
	}
	out := map[uint16][]byte{}
	for port, ss := range segs {
		sort.SliceStable(ss, func(i, j int) bool { return int32(ss[i].seq-ss[j].seq) < 0 })
		var b []byte
		next := ss[0].seq
		for _, s := range ss {
			if int32(s.seq-next) < 0 {
				continue // retransmission
			}
			require.Equal(t, next, s.seq, "gap in capture")
			b = append(b, s.data...)
			next = s.seq + uint32(len(s.data))
		}
		out[port] = b
	}
	return out
}
