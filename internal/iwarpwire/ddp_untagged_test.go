package iwarpwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand-built wire images of RFC 5041 §4.3, Figure 5.
func TestUntaggedHeaderWire_RFC5041_4_3_Figure5(t *testing.T) {
	tests := []struct {
		name string
		h    DDPUntaggedHeader
		wire []byte
	}{
		{
			name: "RDMAP Send L=1 QN0 MSN1 MO0",
			h:    DDPUntaggedHeader{Last: true, RsvdULP: [5]byte{0x43}, QN: 0, MSN: 1, MO: 0},
			wire: []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
		},
		{
			// RFC 5040 §4.1: Send with Invalidate carries the STag in RsvdULP[1:5].
			name: "Send with Invalidate STag 0xdeadbeef",
			h:    DDPUntaggedHeader{Last: false, RsvdULP: [5]byte{0x45, 0xde, 0xad, 0xbe, 0xef}, QN: 0, MSN: 7, MO: 1482},
			wire: []byte{0x01, 0x45, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0x05, 0xca},
		},
		{
			name: "QN/MSN/MO byte order",
			h:    DDPUntaggedHeader{Last: true, QN: 0x01020304, MSN: 0x05060708, MO: 0x090a0b0c},
			wire: []byte{0x41, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		},
		{
			name: "MSN wrap value",
			h:    DDPUntaggedHeader{QN: 2, MSN: 0xffffffff, MO: 0xffffffff},
			wire: []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wire, tt.h.Append(nil))
			assert.Equal(t, DDPUntaggedHeaderLen, tt.h.Len())
			got, n, err := ParseDDPUntaggedHeader(append(append([]byte{}, tt.wire...), 0x99))
			require.NoError(t, err)
			assert.Equal(t, DDPUntaggedHeaderLen, n)
			assert.Equal(t, tt.h, got)
		})
	}
}

func TestUntaggedHeaderAppendNoAlloc(t *testing.T) {
	h := DDPUntaggedHeader{Last: true, QN: 1, MSN: 2, MO: 3}
	buf := make([]byte, 0, DDPUntaggedHeaderLen)
	allocs := testing.AllocsPerRun(100, func() { buf = h.Append(buf[:0]) })
	assert.Zero(t, allocs)
}

func TestParseUntaggedHeaderErrors(t *testing.T) {
	good := (&DDPUntaggedHeader{MSN: 1}).Append(nil)
	for n := 1; n < DDPUntaggedHeaderLen; n++ {
		_, c, err := ParseDDPUntaggedHeader(good[:n])
		assert.ErrorIs(t, err, ErrDDPTruncated, "len %d", n)
		assert.Zero(t, c)
	}
	// RFC 5041 §7.2: Type 2 Code 0x06 for an untagged header with DV != 1.
	bad := append([]byte{}, good...)
	bad[0] = 0x00
	_, _, err := ParseDDPUntaggedHeader(bad)
	assert.ErrorIs(t, err, errUntaggedVersion)

	_, _, err = ParseDDPUntaggedHeader((&DDPTaggedHeader{}).Append(nil))
	assert.ErrorIs(t, err, ErrNotUntagged)
}

func FuzzParseUntaggedHeader(f *testing.F) {
	f.Add((&DDPUntaggedHeader{Last: true, RsvdULP: [5]byte{0x43}, MSN: 1}).Append(nil))
	f.Add((&DDPUntaggedHeader{RsvdULP: [5]byte{1, 2, 3, 4, 5}, QN: 3, MSN: 0xffffffff, MO: 7}).Append(nil))
	f.Add([]byte{0x41, 0})
	f.Add([]byte{0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add((&DDPTaggedHeader{}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseDDPUntaggedHeader(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("consumed %d on error", n)
			}
			var e *DDPError
			if !errors.Is(err, ErrNotUntagged) && (!errors.As(err, &e) || !ValidDDPCode(e.Type, e.Code)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n != DDPUntaggedHeaderLen {
			t.Fatalf("consumed %d", n)
		}
		want := append([]byte{}, b[:n]...)
		want[0] &^= byte(DDPControlRsvdMask)
		if got := h.Append(nil); !bytes.Equal(got, want) {
			t.Fatalf("round trip %x -> %x", b[:n], got)
		}
	})
}
