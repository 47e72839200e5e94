package mpa

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIRDORDWire checks the RFC 6581 §9 layout: A|B|IRD(14) C|D|ORD(14),
// network byte order.
func TestIRDORDWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire []byte
		v    IRDORD
	}{
		// Linux siw rping (captures/rping-siw.pcap): IRD 1, ORD 1, no flags.
		{"siw rping", []byte{0x00, 0x01, 0x00, 0x01}, IRDORD{IRD: 1, ORD: 1}},
		{"no negotiation", []byte{0x3f, 0xff, 0x3f, 0xff}, IRDORD{IRD: NoNegotiation, ORD: NoNegotiation}},
		{"A only", []byte{0x80, 0x10, 0x00, 0x20}, IRDORD{PeerToPeer: true, IRD: 16, ORD: 32}},
		{"A B", []byte{0xc0, 0x00, 0x00, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRSend}},
		{"A C", []byte{0x80, 0x00, 0x80, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRWrite}},
		{"A D", []byte{0x80, 0x00, 0x40, 0x00}, IRDORD{PeerToPeer: true, RTR: RTRRead}},
		{"A B C D max", []byte{0xff, 0xff, 0xff, 0xff}, IRDORD{PeerToPeer: true, RTR: RTRAll, IRD: 0x3fff, ORD: 0x3fff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := ParseIRDORD(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, IRDORDLen, n)
			assert.Equal(t, tc.v, v)
			assert.Equal(t, tc.wire, tc.v.Append(nil))
			assert.Equal(t, IRDORDLen, tc.v.Len())
		})
	}
}

// TestIRDORDFlagsIgnoredWithoutA: RFC 6581 §9.2, "if Control Flag A is set
// to 0, then Control Flags B, C, and D MUST be ignored" on reception and
// sent as 0.
func TestIRDORDFlagsIgnoredWithoutA(t *testing.T) {
	v, _, err := ParseIRDORD([]byte{0x40, 0x05, 0xc0, 0x06})
	require.NoError(t, err)
	assert.Equal(t, IRDORD{IRD: 5, ORD: 6}, v)
	assert.Equal(t, []byte{0x00, 0x05, 0x00, 0x06}, IRDORD{RTR: RTRAll, IRD: 5, ORD: 6}.Append(nil))
}

func TestIRDORDTruncated(t *testing.T) {
	_, _, err := ParseIRDORD([]byte{0, 1, 0})
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestRTRFlags(t *testing.T) {
	assert.Equal(t, RTRWrite, RTRAll.Pick())
	assert.Equal(t, RTRRead, (RTRRead | RTRSend).Pick())
	assert.Equal(t, RTRSend, RTRSend.Pick())
	assert.Equal(t, RTRFlags(0), RTRFlags(0).Pick())
	assert.Equal(t, "send|write|read", RTRAll.String())
	assert.Equal(t, "none", RTRFlags(0).String())
	assert.True(t, RTRAll.Has(RTRRead|RTRSend))
	assert.False(t, RTRWrite.Has(RTRRead))
}

func FuzzParseIRDORD(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := ParseIRDORD(b)
		if err != nil {
			return
		}
		w := v.Append(nil)
		require.Len(t, w, n)
		v2, _, err := ParseIRDORD(w)
		require.NoError(t, err)
		require.Equal(t, v, v2)
	})
}
