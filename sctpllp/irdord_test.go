package sctpllp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 6581 §9 figure: |A|B| IRD (14) |C|D| ORD (14)|, network byte order.
func TestIRDORD_RFC6581_9(t *testing.T) {
	tests := []struct {
		wire []byte
		want IRDORD
	}{
		{[]byte{0x00, 0x00, 0x00, 0x00}, IRDORD{}},
		{[]byte{0x80, 0x00, 0x00, 0x00}, IRDORD{PeerToPeer: true}},
		{[]byte{0x40, 0x00, 0x00, 0x00}, IRDORD{SendRTR: true}},
		{[]byte{0x00, 0x00, 0x80, 0x00}, IRDORD{WriteRTR: true}},
		{[]byte{0x00, 0x00, 0x40, 0x00}, IRDORD{ReadRTR: true}},
		{[]byte{0x3F, 0xFF, 0x3F, 0xFF}, IRDORD{IRD: IRDORDNoNegotiation, ORD: IRDORDNoNegotiation}},
		{[]byte{0xC0, 0x80, 0xC1, 0x00}, IRDORD{PeerToPeer: true, SendRTR: true, WriteRTR: true, ReadRTR: true, IRD: 128, ORD: 256}},
	}
	for _, tc := range tests {
		got, n, err := ParseIRDORD(tc.wire)
		require.NoError(t, err)
		assert.Equal(t, 4, n)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.wire, got.Append(nil))
		assert.Equal(t, 4, got.Len())
	}
	_, _, err := ParseIRDORD([]byte{1, 2, 3})
	assert.ErrorIs(t, err, ErrTruncated)
	assert.ErrorIs(t, IRDORD{ORD: 0x4000}.Validate(), ErrInvalidIRDORD)
}

func FuzzIRDORD(f *testing.F) {
	f.Add([]byte{0xC0, 0x80, 0xC1, 0x00})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, n, err := ParseIRDORD(b)
		if err != nil {
			return
		}
		if w.Validate() != nil || string(w.Append(nil)) != string(b[:n]) {
			t.Fatalf("round trip mismatch")
		}
	})
}
