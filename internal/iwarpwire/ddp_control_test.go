package iwarpwire

import (
	"errors"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5041 §4.1, Figure 3: |T|L| Rsvd |DV|.
func TestControlField_RFC5041_4_1(t *testing.T) {
	tests := []struct {
		name         string
		tagged, last bool
		want         byte
	}{
		{"untagged middle", false, false, 0x01},
		{"untagged last", false, true, 0x41},
		{"tagged middle", true, false, 0x81},
		{"tagged last", true, true, 0xc1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewDDPControl(tt.tagged, tt.last)
			assert.Equal(t, tt.want, byte(c))
			assert.Equal(t, []byte{tt.want}, c.Append(nil))
			assert.Equal(t, 1, c.Len())
			got, n, err := parseDDPControl([]byte{tt.want})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, tt.tagged, got.Tagged())
			assert.Equal(t, tt.last, got.Last())
			assert.Equal(t, uint8(DDPVersion), got.DV())
		})
	}
}

// RFC 5041 §4.1: reserved bits are "set to zero on transmit, and not checked
// on receive".
func TestControlReservedBits_NotCheckedOnReceive_ZeroOnTransmit(t *testing.T) {
	c, n, err := parseDDPControl([]byte{0xfd}) // T L rsvd=1111 DV=01
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, c.Tagged())
	assert.True(t, c.Last())
	assert.Equal(t, []byte{0xc1}, c.Append(nil), "reserved bits cleared on transmit")
}

// RFC 5041 §4.1 DV, §7.2: tagged DV error Type 1 Code 0x04, untagged Type 2
// Code 0x06.
func TestControlVersion_RFC5041_7_2(t *testing.T) {
	tests := []struct {
		b    byte
		typ  iwarp.DDPErrorType
		code uint8
	}{
		{0x80, iwarp.DDPTypeTagged, iwarp.Term.DDPTaggedVersion.Code},
		{0xc2, iwarp.DDPTypeTagged, iwarp.Term.DDPTaggedVersion.Code},
		{0x83, iwarp.DDPTypeTagged, iwarp.Term.DDPTaggedVersion.Code},
		{0x00, iwarp.DDPTypeUntagged, iwarp.Term.DDPUntaggedVersion.Code},
		{0x42, iwarp.DDPTypeUntagged, iwarp.Term.DDPUntaggedVersion.Code},
		{0x03, iwarp.DDPTypeUntagged, iwarp.Term.DDPUntaggedVersion.Code},
	}
	for _, tt := range tests {
		_, _, err := parseDDPControl([]byte{tt.b})
		var e *DDPError
		require.ErrorAs(t, err, &e, "%#x", tt.b)
		assert.Equal(t, tt.typ, e.Type)
		assert.Equal(t, tt.code, e.Code)
		assert.ErrorIs(t, err, ErrDDPVersion)
	}
}

func TestControlEmpty(t *testing.T) {
	_, n, err := parseDDPControl(nil)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, ErrDDPTruncated)
	assert.ErrorIs(t, err, errLocalCatastrophic)
}

func TestControlHeaderLen(t *testing.T) {
	assert.Equal(t, DDPTaggedHeaderLen, NewDDPControl(true, false).HeaderLen())
	assert.Equal(t, DDPUntaggedHeaderLen, NewDDPControl(false, true).HeaderLen())
}

func FuzzParseControl(f *testing.F) {
	for _, b := range []byte{0x01, 0x41, 0x81, 0xc1, 0x00, 0xff} {
		f.Add([]byte{b})
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := parseDDPControl(b)
		if err != nil {
			var e *DDPError
			if !errors.As(err, &e) || !ValidDDPCode(e.Type, e.Code) {
				t.Fatalf("untyped or invalid error %v", err)
			}
			if n != 0 {
				t.Fatalf("consumed %d on error", n)
			}
			return
		}
		if n != 1 || c.DV() != DDPVersion {
			t.Fatalf("n=%d dv=%d", n, c.DV())
		}
		if got := c.Append(nil); got[0] != b[0]&^byte(DDPControlRsvdMask) {
			t.Fatalf("round trip %#x -> %#x", b[0], got[0])
		}
	})
}
