package mpa

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rfc5044Figure5 is the annotated FPDU of RFC 5044 §4.4 Figure 5: the first
// FPDU of a stream with Markers, so it starts with an FPDUPTR-0 Marker, and
// carries a 42-octet DDP Send (MSN 1, 24 octets of zeros).
func rfc5044Figure5() []byte {
	b := []byte{
		0x00, 0x00, 0x00, 0x00, // Marker: Reserved, FPDUPTR 0
		0x00, 0x2a, // ULPDU Length 42
		0x41, 0x43, // DDP control: Send, Last
		0x00, 0x00, 0x00, 0x00, // reserved (no STag)
		0x00, 0x00, 0x00, 0x00, // QN 0
		0x00, 0x00, 0x00, 0x01, // MSN 1
		0x00, 0x00, 0x00, 0x00, // MO 0
	}
	b = append(b, make([]byte, 24)...)
	return append(b, 0x52, 0x23, 0x99, 0x83) // CRC32c
}

// rfc5044Figure6 is the FPDU of RFC 5044 §4.4 Figure 6: the second FPDU of
// the stream at offset 0x1ec, with a Marker (FPDUPTR 0x14) at offset 0x200.
func rfc5044Figure6() []byte {
	b := []byte{
		0x00, 0x2a, 0x41, 0x43,
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x02, // MSN 2
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x14, // Marker at stream offset 0x200
	}
	b = append(b, make([]byte, 24)...)
	return append(b, 0x84, 0x92, 0x58, 0x98)
}

func ddpSend(msn byte) []byte {
	u := []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, msn, 0, 0, 0, 0} // 18-octet untagged header
	return append(u, make([]byte, 24)...)
}

// TestFPDURFC5044Figures reproduces the annotated hex dumps of RFC 5044
// §4.4, Markers and CRC32c included, both ways.
func TestFPDURFC5044Figures(t *testing.T) {
	for _, tc := range []struct {
		name string
		pos  uint64
		wire []byte
		msn  byte
		crc  uint32
	}{
		{"Figure 5 first FPDU", 0, rfc5044Figure5(), 1, 0x83992352},
		{"Figure 6 FPDU with Marker", 0x1ec, rfc5044Figure6(), 2, 0x98589284},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FPDU{ULPDU: ddpSend(tc.msn), Pos: tc.pos, Markers: true, CRC: true}
			assert.Equal(t, tc.wire, f.append(nil))
			assert.Equal(t, tc.crc, f.CRCValue)
			assert.Equal(t, len(tc.wire), f.len())

			got, n, err := ParseFPDU(tc.wire, tc.pos, true, true, nil)
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
			assert.Equal(t, ddpSend(tc.msn), got.ULPDU)
			assert.Equal(t, tc.crc, got.CRCValue)
		})
	}
	// Figure 6's stream began with a 492-octet FPDU (leading Marker
	// included), for example one carrying a 480-octet ULPDU.
	assert.Equal(t, 0x1ec, wireLen(0, 492-4-6-2, true))
}

// TestFPDUWireNoMarkers checks hand-built Figure 2 images.
func TestFPDUWireNoMarkers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ulpdu []byte
		crc   bool
		wire  []byte
	}{
		{"empty ULPDU pad 2 no CRC", nil, false, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"1 octet pad 1", []byte{0xab}, false, []byte{0, 1, 0xab, 0, 0, 0, 0, 0}},
		{"2 octets pad 0", []byte{1, 2}, false, []byte{0, 2, 1, 2, 0, 0, 0, 0}},
		{"3 octets pad 3", []byte{1, 2, 3}, false, []byte{0, 3, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0}},
		{"30 zeros with CRC", make([]byte, 30), true, appendCRC(append([]byte{0, 30}, make([]byte, 30)...), 0xc452d409)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FPDU{ULPDU: tc.ulpdu, CRC: tc.crc}
			assert.Equal(t, tc.wire, f.append(nil))
			assert.Equal(t, len(tc.wire), f.len())
			assert.Zero(t, len(tc.wire)%4)
			got, n, err := ParseFPDU(tc.wire, 12345, false, tc.crc, nil)
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
			assert.Equal(t, len(tc.ulpdu), len(got.ULPDU))
			assert.True(t, bytes.Equal(tc.ulpdu, got.ULPDU))
		})
	}
}

// TestSiwCaptureFPDUs parses every FPDU Linux siw sent in the capture: CRC
// not negotiated, so the CRC field is present and zero (RFC 5044 §4.1).
func TestSiwCaptureFPDUs(t *testing.T) {
	streams := tcpStreams(t, siwPcap)
	for port, first := range map[uint16][2]byte{0xd5f7: {0x41, 0x43}, 7174: {0x41, 0x41}} {
		b := streams[port][24:] // after the startup frame
		count := 0
		for len(b) > 0 {
			f, n, err := ParseFPDU(b, 0, false, false, nil)
			require.NoError(t, err)
			assert.Zero(t, f.CRCValue)
			if count == 0 {
				assert.Equal(t, first[:], f.ULPDU[:2])
			}
			// Enabling the check must fail: the zero field is no CRC32c.
			_, _, err = ParseFPDU(b, 0, false, true, nil)
			assert.ErrorIs(t, err, errCRC)
			b = b[n:]
			count++
		}
		assert.Greater(t, count, 5, "port %d", port)
	}
}

func TestFPDUErrors(t *testing.T) {
	f := FPDU{ULPDU: []byte("hello, world"), CRC: true}
	wire := f.append(nil)
	t.Run("truncated", func(t *testing.T) {
		for i := range len(wire) {
			_, _, err := ParseFPDU(wire[:i], 0, false, true, nil)
			assert.ErrorIs(t, err, errTruncated)
		}
	})
	t.Run("CRC mismatch is code 2", func(t *testing.T) {
		for i := range len(wire) {
			bad := bytes.Clone(wire)
			bad[i] ^= 0x10
			if i < 2 {
				continue // a corrupted length is a framing matter
			}
			_, _, err := ParseFPDU(bad, 0, false, true, nil)
			require.ErrorIs(t, err, errCRC)
			var le *llp.Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, uint8(iwarp.Term.MPACRC.Code), le.Code)
			// Without CRC checking the field may hold any value.
			if i >= len(wire)-4 {
				_, _, err = ParseFPDU(bad, 0, false, false, nil)
				assert.NoError(t, err)
			}
		}
	})
}

func TestPadAndMULPDU(t *testing.T) {
	for n, want := range map[int]int{0: 2, 1: 1, 2: 0, 3: 3, 4: 2, 1458: 0} {
		assert.Equal(t, want, padLen(n), "PadLen(%d)", n)
	}
	// RFC 5044 §4.5 formulas.
	assert.Equal(t, 1460-(6+0), iwarpwire.MPAMULPDU(1460, false))
	assert.Equal(t, 1448-(6+0), iwarpwire.MPAMULPDU(1448, false))
	assert.Equal(t, 1450-(6+2), iwarpwire.MPAMULPDU(1450, false))
	assert.Equal(t, 1460-(6+4*3+0), iwarpwire.MPAMULPDU(1460, true))
	assert.Equal(t, 1024-(6+4*2), iwarpwire.MPAMULPDU(1024, true))
	assert.Equal(t, iwarpwire.MPAMinMULPDU, iwarpwire.MPAMULPDU(100, true))
	assert.Equal(t, iwarpwire.MPAMaxULPDU, iwarpwire.MPAMULPDU(65483, false))
	assert.Equal(t, iwarpwire.MPAMaxULPDU, iwarpwire.MPAMULPDU(65483, true))
	// The formula is a worst case: an FPDU of MULPDU octets fits EMSS at
	// every stream position.
	for _, emss := range []int{536, 1220, 1448, 1460, 8948, 9000} {
		m := iwarpwire.MPAMULPDU(emss, true)
		for pos := uint64(0); pos < iwarpwire.MPAMarkerInterval; pos += 4 {
			assert.LessOrEqual(t, wireLen(pos, m, true), emss, "emss %d pos %d", emss, pos)
		}
		assert.LessOrEqual(t, wireLen(0, iwarpwire.MPAMULPDU(emss, false), false), emss)
	}
}

// TestWireLenMatchesLayout compares WireLen with the octets Append emits
// and with a brute-force placement of Markers.
func TestWireLenMatchesLayout(t *testing.T) {
	for pos := uint64(0); pos < 2*iwarpwire.MPAMarkerInterval; pos += 4 {
		for _, ulen := range []int{0, 1, 2, 3, 4, 500, 502, 503, 504, 505, 506, 507, 508, 509, 510, 1014, 1020, 2048, 4093, iwarpwire.MPAMaxULPDU, 0xFFFF} {
			body := iwarpwire.MPAFPDUHeaderLen + ulen + padLen(ulen) + iwarpwire.MPACRCLen
			// brute force
			n, p, left := 0, pos, body
			if p%iwarpwire.MPAMarkerInterval == 0 {
				n, p = 4, p+4
			}
			for left > 0 {
				if p%iwarpwire.MPAMarkerInterval == 0 {
					n, p = n+4, p+4
					continue
				}
				n, p, left = n+1, p+1, left-1
			}
			require.Equal(t, n, wireLen(pos, ulen, true), "pos %d ulen %d", pos, ulen)
			require.LessOrEqual(t, n, maxWireLen)
			if ulen < 5000 {
				f := FPDU{ULPDU: make([]byte, ulen), Pos: pos, Markers: true, CRC: true}
				require.Len(t, f.append(nil), n)
			}
		}
	}
}

// TestFPDURoundTripRandom sends random ULPDUs back to back through
// Append/ParseFPDU with and without Markers and CRC.
func TestFPDURoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mk := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			var stream []byte
			var want [][]byte
			for range 300 {
				u := make([]byte, rng.IntN(3000))
				for i := range u {
					u[i] = byte(rng.Uint32())
				}
				want = append(want, u)
				f := FPDU{ULPDU: u, Pos: uint64(len(stream)), Markers: mk, CRC: crc}
				stream = f.append(stream)
			}
			dst := make([]byte, 0, 70000)
			pos := uint64(0)
			for i, w := range want {
				f, n, err := ParseFPDU(stream[pos:], pos, mk, crc, dst)
				require.NoError(t, err, "FPDU %d", i)
				require.Equal(t, w, append([]byte{}, f.ULPDU...), "FPDU %d", i)
				pos += uint64(n)
			}
			require.Equal(t, uint64(len(stream)), pos)
			if mk {
				// Every 512th octet is a Marker pointing at its FPDU.
				for off := 0; off < len(stream); off += iwarpwire.MPAMarkerInterval {
					assert.Equal(t, []byte{0, 0}, stream[off:off+2])
				}
			}
		}
	}
}

func TestFPDUAppendNoAlloc(t *testing.T) {
	u := make([]byte, 4000)
	b := make([]byte, 0, 8000)
	for _, mk := range []bool{false, true} {
		f := FPDU{ULPDU: u, Pos: 100, Markers: mk, CRC: true}
		assert.Zero(t, testing.AllocsPerRun(50, func() { b = f.append(b[:0]) }))
		dst := make([]byte, 0, 8000)
		assert.Zero(t, testing.AllocsPerRun(50, func() { _, _, _ = ParseFPDU(b, 100, mk, true, dst) }))
	}
}

// FuzzParseFPDU: arbitrary octets, positions and modes never panic; errors
// are ErrTruncated or typed *llp.Error; a parsed FPDU re-encodes (with its
// CRC recomputed when checked) to the same octets.
func FuzzParseFPDU(f *testing.F) {
	f.Add(rfc5044Figure5(), uint16(0), true, true)
	f.Add(rfc5044Figure6(), uint16(0x1ec), true, true)
	f.Add((&FPDU{ULPDU: []byte("abc"), CRC: true}).append(nil), uint16(0), false, true)
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff}, uint16(0), true, false)
	f.Add([]byte{0, 0, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0}, uint16(508), true, false)
	f.Fuzz(func(t *testing.T, b []byte, pos16 uint16, mk, crc bool) {
		pos := uint64(pos16) &^ 3 // stream positions of FPDUs are multiples of 4
		fp, n, err := ParseFPDU(b, pos, mk, crc, nil)
		if err != nil {
			if err != errTruncated {
				var le *llp.Error
				require.ErrorAs(t, err, &le)
				require.Contains(t, []uint8{iwarp.Term.MPACRC.Code, iwarp.Term.MPAMarker.Code}, le.Code)
			}
			return
		}
		require.LessOrEqual(t, n, len(b))
		require.Equal(t, wireLen(pos, len(fp.ULPDU), mk), n)
		re := FPDU{ULPDU: fp.ULPDU, Pos: pos, Markers: mk, CRC: crc}
		w := re.append(nil)
		require.Len(t, w, n)
		if crc {
			// CRC verified: every octet is reproduced except ignored ones
			// (pad, Marker RESERVED and FPDUPTR low bits) — so re-parse.
			_, n2, err := ParseFPDU(w, pos, mk, true, nil)
			require.NoError(t, err)
			require.Equal(t, n, n2)
		}
		fp2, _, err := ParseFPDU(w, pos, mk, false, nil)
		require.NoError(t, err)
		require.True(t, bytes.Equal(fp.ULPDU, fp2.ULPDU))
	})
}
