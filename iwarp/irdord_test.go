package iwarp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIRDORD_Wire_RFC6581_9 checks the layout A|B|IRD(14) C|D|ORD(14) in
// network byte order, the same over MPA and SCTP (RFC 6581 §7, §9).
func TestIRDORD_Wire_RFC6581_9(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire []byte
		v    IRDORD
	}{
		{"zero", []byte{0, 0, 0, 0}, IRDORD{}},
		// Linux siw rping (../shared/spec/captures): IRD 1, ORD 1, no flags.
		{"siw rping", []byte{0x00, 0x01, 0x00, 0x01}, IRDORD{IRD: 1, ORD: 1}},
		{"no negotiation", []byte{0x3f, 0xff, 0x3f, 0xff}, IRDORD{IRD: NoNegotiation, ORD: NoNegotiation}},
		{"A only", []byte{0x80, 0x10, 0x00, 0x20}, IRDORD{PeerToPeer: true, IRD: 16, ORD: 32}},
		{"A B", []byte{0xc0, 0x00, 0x00, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRSend}},
		{"A C", []byte{0x80, 0x00, 0x80, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRWrite}},
		{"A D", []byte{0x80, 0x00, 0x40, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRRead}},
		{"A B C D 128 256", []byte{0xC0, 0x80, 0xC1, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRAll, IRD: 128, ORD: 256}},
		{"A B C D max", []byte{0xff, 0xff, 0xff, 0xff}, IRDORD{PeerToPeer: true, RTR: RTRAll, IRD: 0x3fff, ORD: 0x3fff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := ParseIRDORD(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, IRDORDLen, n)
			assert.Equal(t, tc.v, v)
			assert.Equal(t, tc.wire, tc.v.Append(nil))
			assert.Equal(t, IRDORDLen, tc.v.len())
			assert.NoError(t, v.Validate())
			assert.Equal(t, tc.v, tc.v.Wire())
		})
	}
}

// TestIRDORD_FlagsWithoutA_RFC6581_9_2: "If Control Flag A is set to 0, then
// Control Flags B, C, and D MUST also be set to 0. On reception, if Control
// Flag A is set to 0, then Control Flags B, C, and D MUST be ignored."
func TestIRDORD_FlagsWithoutA_RFC6581_9_2(t *testing.T) {
	v, _, err := ParseIRDORD([]byte{0x40, 0x05, 0xc0, 0x06})
	require.NoError(t, err, "ignored, not rejected")
	assert.Equal(t, IRDORD{IRD: 5, ORD: 6}, v)
	w := IRDORD{RTR: RTRAll, IRD: 5, ORD: 6}
	assert.Equal(t, []byte{0x00, 0x05, 0x00, 0x06}, w.Append(nil))
	assert.Equal(t, IRDORD{IRD: 5, ORD: 6}, w.Wire())
	w.PeerToPeer = true
	assert.Equal(t, []byte{0xC0, 0x05, 0xC0, 0x06}, w.Append(nil))
}

func TestIRDORD_Errors(t *testing.T) {
	_, _, err := ParseIRDORD([]byte{0, 1, 0})
	assert.ErrorIs(t, err, errTruncated)
	assert.ErrorIs(t, IRDORD{ORD: 0x4000}.Validate(), ErrInvalidIRDORD)
	assert.ErrorIs(t, IRDORD{IRD: 0x4000}.Validate(), ErrInvalidIRDORD)
	assert.Equal(t, IRDORD{IRD: 0, ORD: 1}, IRDORD{IRD: 0x4000, ORD: 0x4001}.Wire(), "cut to 14 bits")
}

func TestIRDORD_AppendNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 8)
	w := IRDORD{PeerToPeer: true, RTR: RTRWrite, IRD: 3, ORD: 4}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = w.Append(buf[:0]) }))
}

func TestRTR(t *testing.T) {
	assert.Equal(t, RTRWrite, RTRAll.Pick(), "siw's default first")
	assert.Equal(t, RTRRead, (RTRRead | RTRSend).Pick())
	assert.Equal(t, RTRSend, RTRSend.Pick())
	assert.Equal(t, RTR(0), RTR(0).Pick())
	assert.Equal(t, "send|write|read", RTRAll.String())
	assert.Equal(t, "none", RTR(0).String())
	assert.Equal(t, "write|0x10", (RTRWrite | 0x10).String())
	assert.True(t, RTRAll.has(RTRRead|RTRSend))
	assert.False(t, RTRWrite.has(RTRRead))
	assert.Equal(t, "IRD 1 ORD 2 p2p rtr=read", IRDORD{PeerToPeer: true, RTR: RTRRead, IRD: 1, ORD: 2}.String())
	assert.Equal(t, "IRD 1 ORD 2", IRDORD{IRD: 1, ORD: 2}.String())
}

// FuzzParseIRDORD: every 4-octet input parses, and re-encoding gives the
// input with B, C and D cleared when A is 0.
func FuzzParseIRDORD(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x40, 0x05, 0xc0, 0x06})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := ParseIRDORD(b)
		if len(b) < IRDORDLen {
			require.ErrorIs(t, err, errTruncated)
			return
		}
		require.NoError(t, err)
		require.NoError(t, v.Validate())
		want := append([]byte(nil), b[:n]...)
		if want[0]&0x80 == 0 {
			want[0] &^= 0x40
			want[2] &^= 0xC0
		}
		require.Equal(t, want, v.Append(nil))
		v2, _, err := ParseIRDORD(v.Append(nil))
		require.NoError(t, err)
		require.Equal(t, v, v2)
	})
}
