package iwarpwire

import (
	"github.com/sctp-rdma/sctp-rdma/iwarp"
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
		v    iwarp.IRDORD
	}{
		{"zero", []byte{0, 0, 0, 0}, iwarp.IRDORD{}},
		// Linux siw rping (../shared/spec/captures): IRD 1, ORD 1, no flags.
		{"siw rping", []byte{0x00, 0x01, 0x00, 0x01}, iwarp.IRDORD{IRD: 1, ORD: 1}},
		{"no negotiation", []byte{0x3f, 0xff, 0x3f, 0xff}, iwarp.IRDORD{IRD: iwarp.NoNegotiation, ORD: iwarp.NoNegotiation}},
		{"A only", []byte{0x80, 0x10, 0x00, 0x20}, iwarp.IRDORD{PeerToPeer: true, IRD: 16, ORD: 32}},
		{"A B", []byte{0xc0, 0x00, 0x00, 0x00}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRSend}},
		{"A C", []byte{0x80, 0x00, 0x80, 0x00}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite}},
		{"A D", []byte{0x80, 0x00, 0x40, 0x00}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead}},
		{"A B C D 128 256", []byte{0xC0, 0x80, 0xC1, 0x00}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRAll, IRD: 128, ORD: 256}},
		{"A B C D max", []byte{0xff, 0xff, 0xff, 0xff}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRAll, IRD: 0x3fff, ORD: 0x3fff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := ParseIRDORD(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, IRDORDLen, n)
			assert.Equal(t, tc.v, v)
			assert.Equal(t, tc.wire, AppendIRDORD(nil, tc.v))
			assert.NoError(t, v.Validate())
			assert.Equal(t, tc.v, WireIRDORD(tc.v))
		})
	}
}

// TestIRDORD_FlagsWithoutA_RFC6581_9_2: "If Control Flag A is set to 0, then
// Control Flags B, C, and D MUST also be set to 0. On reception, if Control
// Flag A is set to 0, then Control Flags B, C, and D MUST be ignored."
func TestIRDORD_FlagsWithoutA_RFC6581_9_2(t *testing.T) {
	v, _, err := ParseIRDORD([]byte{0x40, 0x05, 0xc0, 0x06})
	require.NoError(t, err, "ignored, not rejected")
	assert.Equal(t, iwarp.IRDORD{IRD: 5, ORD: 6}, v)
	w := iwarp.IRDORD{RTR: iwarp.RTRAll, IRD: 5, ORD: 6}
	assert.Equal(t, []byte{0x00, 0x05, 0x00, 0x06}, AppendIRDORD(nil, w))
	assert.Equal(t, iwarp.IRDORD{IRD: 5, ORD: 6}, WireIRDORD(w))
	w.PeerToPeer = true
	assert.Equal(t, []byte{0xC0, 0x05, 0xC0, 0x06}, AppendIRDORD(nil, w))
}

func TestIRDORD_Errors(t *testing.T) {
	_, _, err := ParseIRDORD([]byte{0, 1, 0})
	assert.ErrorIs(t, err, ErrTruncated)
	assert.ErrorIs(t, iwarp.IRDORD{ORD: 0x4000}.Validate(), iwarp.ErrInvalidIRDORD)
	assert.ErrorIs(t, iwarp.IRDORD{IRD: 0x4000}.Validate(), iwarp.ErrInvalidIRDORD)
	assert.Equal(t, iwarp.IRDORD{IRD: 0, ORD: 1}, WireIRDORD(iwarp.IRDORD{IRD: 0x4000, ORD: 0x4001}), "cut to 14 bits")
}

func TestIRDORD_AppendNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 8)
	w := iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 3, ORD: 4}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = AppendIRDORD(buf[:0], w) }))
}

func TestPickRTR(t *testing.T) {
	assert.Equal(t, iwarp.RTRWrite, PickRTR(iwarp.RTRAll), "siw's default first")
	assert.Equal(t, iwarp.RTRRead, PickRTR(iwarp.RTRRead|iwarp.RTRSend))
	assert.Equal(t, iwarp.RTRSend, PickRTR(iwarp.RTRSend))
	assert.Equal(t, iwarp.RTR(0), PickRTR(iwarp.RTR(0)))
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
			require.ErrorIs(t, err, ErrTruncated)
			return
		}
		require.NoError(t, err)
		require.NoError(t, v.Validate())
		want := append([]byte(nil), b[:n]...)
		if want[0]&0x80 == 0 {
			want[0] &^= 0x40
			want[2] &^= 0xC0
		}
		require.Equal(t, want, AppendIRDORD(nil, v))
		v2, _, err := ParseIRDORD(AppendIRDORD(nil, v))
		require.NoError(t, err)
		require.Equal(t, v, v2)
	})
}
