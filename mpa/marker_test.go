package mpa

import (
	"bytes"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarkerWire checks RFC 5044 §4.2 Figure 3.
func TestMarkerWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire []byte
		m    marker
		out  []byte
	}{
		{"between FPDUs", []byte{0, 0, 0, 0}, marker{}, nil},
		{"Figure 4 FPDUPTR 0x000C", []byte{0, 0, 0x00, 0x0c}, marker{FPDUPTR: 12}, nil},
		{"Figure 6 FPDUPTR 0x0014", []byte{0, 0, 0x00, 0x14}, marker{FPDUPTR: 0x14}, nil},
		{"reserved ignored on receive", []byte{0xde, 0xad, 0x01, 0x00}, marker{FPDUPTR: 0x100}, []byte{0, 0, 0x01, 0x00}},
		{"low two bits treated as zero", []byte{0, 0, 0x02, 0x07}, marker{FPDUPTR: 0x204}, []byte{0, 0, 0x02, 0x04}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, n, err := parseMarker(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, iwarpwire.MPAMarkerLen, n)
			assert.Equal(t, tc.m, m)
			out := tc.out
			if out == nil {
				out = tc.wire
			}
			assert.Equal(t, out, m.Append(nil))
			assert.Equal(t, iwarpwire.MPAMarkerLen, m.Len())
		})
	}
	_, _, err := parseMarker([]byte{0, 0, 0})
	assert.ErrorIs(t, err, errTruncated)
	assert.True(t, markerDue(0))
	assert.True(t, markerDue(1024))
	assert.False(t, markerDue(4))
}

// TestInsertMarkersFigure4 reproduces RFC 5044 §4.3 Figure 4: a 16-octet
// ULPDU whose FPDU contains a Marker 12 octets after the length field.
func TestInsertMarkersFigure4(t *testing.T) {
	ulpdu := []byte("0123456789ABCDEF")
	unmarked := (&FPDU{ULPDU: ulpdu}).append(nil) // no CRC: field zero
	pos := uint64(iwarpwire.MPAMarkerInterval - 12)
	got, err := insertMarkers(nil, unmarked, pos, false)
	require.NoError(t, err)
	want := cat([]byte{0x00, 0x10}, ulpdu[:10], []byte{0, 0, 0x00, 0x0c}, ulpdu[10:], []byte{0, 0}, []byte{0, 0, 0, 0})
	assert.Equal(t, want, got)

	back, n, err := removeMarkers(nil, got, pos)
	require.NoError(t, err)
	assert.Equal(t, len(got), n)
	assert.Equal(t, unmarked, back)
}

// TestInsertMarkersFigure6 inserts the Marker of RFC 5044 Figure 6 into the
// unmarked FPDU and recomputes the CRC over the marked octets (§4.4).
func TestInsertMarkersFigure6(t *testing.T) {
	unmarked := (&FPDU{ULPDU: ddpSend(2), CRC: true}).append(nil)
	got, err := insertMarkers(nil, unmarked, 0x1ec, true)
	require.NoError(t, err)
	assert.Equal(t, rfc5044Figure6(), got)

	got, err = insertMarkers(nil, unmarked[:len(unmarked)-1], 0x1ec, true)
	assert.ErrorIs(t, err, errTruncated)
	assert.Empty(t, got)
}

// TestMarkerBeforeCRC: a Marker falling between the pad and the CRC is
// inside the FPDU and covered by its CRC (RFC 5044 §4.4 rule 1); one
// falling right after the CRC belongs to the next FPDU with FPDUPTR 0.
func TestMarkerBeforeCRC(t *testing.T) {
	// A 2-octet ULPDU makes a 4-octet body and a 4-octet CRC; starting at
	// position 508, the CRC would begin at 512, where a Marker is due.
	f := FPDU{ULPDU: []byte{0xab, 0xcd}, Pos: 508, Markers: true, CRC: true}
	w := f.append(nil)
	require.Len(t, w, 12)
	assert.Equal(t, []byte{0, 2, 0xab, 0xcd}, w[:4])
	assert.Equal(t, []byte{0, 0, 0, 4}, w[4:8], "Marker before the CRC points back 4 octets")
	assert.Equal(t, appendCRC(nil, crcOf(w[:8])), w[8:])

	// At pos 504 the FPDU ends exactly at 512: no Marker inside it.
	f = FPDU{ULPDU: []byte{0xab, 0xcd}, Pos: 504, Markers: true, CRC: true}
	w = f.append(nil)
	require.Len(t, w, 8)
	next := FPDU{ULPDU: []byte{1, 2}, Pos: 512, Markers: true, CRC: true}
	w2 := next.append(nil)
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 2, 1, 2}, w2[:8])
	assert.Equal(t, appendCRC(nil, crcOf(w2[:8])), w2[8:], "the leading Marker is in the CRC")
}

func TestStripMarkersErrors(t *testing.T) {
	ulpdu := bytes.Repeat([]byte{0x5a}, 1500)
	for _, pos := range []uint64{0, 100, 508} {
		w := (&FPDU{ULPDU: ulpdu, Pos: pos, Markers: true, CRC: true}).append(nil)
		for off := int(-pos % iwarpwire.MPAMarkerInterval); off < len(w); off += iwarpwire.MPAMarkerInterval {
			bad := bytes.Clone(w)
			bad[off+3] ^= 0x04 // FPDUPTR off by 4
			_, _, err := removeMarkers(nil, bad, pos)
			require.ErrorIs(t, err, errMarker, "pos %d off %d", pos, off)
			var le *llp.Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, uint8(iwarp.Term.MPAMarker.Code), le.Code)
			// ParseFPDU reports the CRC first (RFC 5044 §8 code 3 applies
			// only when the CRC is valid)...
			_, _, err = ParseFPDU(bad, pos, true, true, nil)
			assert.ErrorIs(t, err, errCRC)
			// ...and the Marker when CRCs are off.
			_, _, err = ParseFPDU(bad, pos, true, false, nil)
			assert.ErrorIs(t, err, errMarker)
			// Bits the receiver ignores do not matter.
			ok := bytes.Clone(w)
			ok[off] ^= 0xff
			ok[off+3] ^= 0x03
			_, _, err = removeMarkers(nil, ok, pos)
			assert.NoError(t, err)
		}
		for i := range len(w) {
			_, _, err := removeMarkers(nil, w[:i], pos)
			require.ErrorIs(t, err, errTruncated)
		}
	}
}

// FuzzMarkerStrip: StripMarkers never panics on arbitrary input; when it
// succeeds, re-inserting the Markers reproduces the input up to the bits
// receivers ignore.
func FuzzMarkerStrip(f *testing.F) {
	f.Add(rfc5044Figure5(), uint16(0))
	f.Add(rfc5044Figure6(), uint16(0x1ec))
	f.Add((&FPDU{ULPDU: make([]byte, 1200), Pos: 300, Markers: true}).append(nil), uint16(300))
	f.Add([]byte{0, 0, 0, 8, 0, 2}, uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, pos16 uint16) {
		pos := uint64(pos16) &^ 3
		un, n, err := removeMarkers(nil, b, pos)
		if err != nil {
			if err != errTruncated {
				require.ErrorIs(t, err, errMarker)
			}
			return
		}
		require.LessOrEqual(t, n, len(b))
		re, err := insertMarkers(nil, un, pos, false)
		require.NoError(t, err)
		require.Len(t, re, n)
		un2, _, err := removeMarkers(nil, re, pos)
		require.NoError(t, err)
		require.Equal(t, un, un2)
	})
}

func FuzzParseMarker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x14})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := parseMarker(b)
		if err != nil {
			require.ErrorIs(t, err, errTruncated)
			return
		}
		w := m.Append(nil)
		require.Len(t, w, n)
		require.Equal(t, b[2]&0xff, w[2])
		require.Equal(t, b[3]&^3, w[3])
		m2, _, err := parseMarker(w)
		require.NoError(t, err)
		require.Equal(t, m, m2)
	})
}
