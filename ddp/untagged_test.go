package ddp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand-built wire images of RFC 5041 §4.3, Figure 5.
func TestUntaggedHeaderWire_RFC5041_4_3_Figure5(t *testing.T) {
	tests := []struct {
		name string
		h    UntaggedHeader
		wire []byte
	}{
		{
			name: "RDMAP Send L=1 QN0 MSN1 MO0",
			h:    UntaggedHeader{Last: true, RsvdULP: [5]byte{0x43}, QN: 0, MSN: 1, MO: 0},
			wire: []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
		},
		{
			// RFC 5040 §4.1: Send with Invalidate carries the STag in RsvdULP[1:5].
			name: "Send with Invalidate STag 0xdeadbeef",
			h:    UntaggedHeader{Last: false, RsvdULP: [5]byte{0x45, 0xde, 0xad, 0xbe, 0xef}, QN: 0, MSN: 7, MO: 1482},
			wire: []byte{0x01, 0x45, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0x05, 0xca},
		},
		{
			name: "QN/MSN/MO byte order",
			h:    UntaggedHeader{Last: true, QN: 0x01020304, MSN: 0x05060708, MO: 0x090a0b0c},
			wire: []byte{0x41, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		},
		{
			name: "MSN wrap value",
			h:    UntaggedHeader{QN: 2, MSN: 0xffffffff, MO: 0xffffffff},
			wire: []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wire, tt.h.Append(nil))
			assert.Equal(t, iwarpwire.DDPUntaggedHeaderLen, tt.h.Len())
			got, n, err := ParseUntaggedHeader(append(append([]byte{}, tt.wire...), 0x99))
			require.NoError(t, err)
			assert.Equal(t, iwarpwire.DDPUntaggedHeaderLen, n)
			assert.Equal(t, tt.h, got)
		})
	}
}

func TestUntaggedHeaderAppendNoAlloc(t *testing.T) {
	h := UntaggedHeader{Last: true, QN: 1, MSN: 2, MO: 3}
	buf := make([]byte, 0, iwarpwire.DDPUntaggedHeaderLen)
	allocs := testing.AllocsPerRun(100, func() { buf = h.Append(buf[:0]) })
	assert.Zero(t, allocs)
}

func TestParseUntaggedHeaderErrors(t *testing.T) {
	good := (&UntaggedHeader{MSN: 1}).Append(nil)
	for n := 1; n < iwarpwire.DDPUntaggedHeaderLen; n++ {
		_, c, err := ParseUntaggedHeader(good[:n])
		assert.ErrorIs(t, err, errTruncated, "len %d", n)
		assert.Zero(t, c)
	}
	// RFC 5041 §7.2: Type 2 Code 0x06 for an untagged header with DV != 1.
	bad := append([]byte{}, good...)
	bad[0] = 0x00
	_, _, err := ParseUntaggedHeader(bad)
	assert.ErrorIs(t, err, errUntaggedVersion)

	_, _, err = ParseUntaggedHeader((&TaggedHeader{}).Append(nil))
	assert.ErrorIs(t, err, errNotUntagged)
}

func FuzzParseUntaggedHeader(f *testing.F) {
	f.Add((&UntaggedHeader{Last: true, RsvdULP: [5]byte{0x43}, MSN: 1}).Append(nil))
	f.Add((&UntaggedHeader{RsvdULP: [5]byte{1, 2, 3, 4, 5}, QN: 3, MSN: 0xffffffff, MO: 7}).Append(nil))
	f.Add([]byte{0x41, 0})
	f.Add([]byte{0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add((&TaggedHeader{}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseUntaggedHeader(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("consumed %d on error", n)
			}
			var e *Error
			if !errors.Is(err, errNotUntagged) && (!errors.As(err, &e) || !iwarpwire.ValidDDPCode(e.Type, e.Code)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n != iwarpwire.DDPUntaggedHeaderLen {
			t.Fatalf("consumed %d", n)
		}
		want := append([]byte{}, b[:n]...)
		want[0] &^= byte(iwarpwire.DDPControlRsvdMask)
		if got := h.Append(nil); !bytes.Equal(got, want) {
			t.Fatalf("round trip %x -> %x", b[:n], got)
		}
	})
}
