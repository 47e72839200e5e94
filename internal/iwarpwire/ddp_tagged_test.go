package iwarpwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand-built wire images of RFC 5041 §4.2, Figure 4.
func TestTaggedHeaderWire_RFC5041_4_2_Figure4(t *testing.T) {
	tests := []struct {
		name string
		h    DDPTaggedHeader
		wire []byte
	}{
		{
			name: "T=1 L=1 DV=1 RsvdULP=0x40",
			h:    DDPTaggedHeader{Last: true, RsvdULP: 0x40, STag: 0x12345678, TO: 0x1122334455667788},
			wire: []byte{0xc1, 0x40, 0x12, 0x34, 0x56, 0x78, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88},
		},
		{
			name: "T=1 L=0 RDMA Write RsvdULP=0x40",
			h:    DDPTaggedHeader{Last: false, RsvdULP: 0x40, STag: 0x00000001, TO: 0},
			wire: []byte{0x81, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			name: "all ones",
			h:    DDPTaggedHeader{Last: true, RsvdULP: 0xff, STag: 0xffffffff, TO: 0xffffffffffffffff},
			wire: []byte{0xc1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		},
		{
			name: "RFC 5041 §5.2 example second segment TO=17870",
			h:    DDPTaggedHeader{Last: true, RsvdULP: 0x41, STag: 0xcafe, TO: 17870},
			wire: []byte{0xc1, 0x41, 0, 0, 0xca, 0xfe, 0, 0, 0, 0, 0, 0, 0x45, 0xce},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wire, tt.h.Append(nil))
			assert.Equal(t, DDPTaggedHeaderLen, tt.h.Len())
			got, n, err := ParseDDPTaggedHeader(append(append([]byte{}, tt.wire...), 0xaa, 0xbb))
			require.NoError(t, err)
			assert.Equal(t, DDPTaggedHeaderLen, n)
			assert.Equal(t, tt.h, got)
		})
	}
}

func TestTaggedHeaderAppendKeepsPrefix(t *testing.T) {
	h := DDPTaggedHeader{STag: 7, TO: 9}
	b := h.Append([]byte{1, 2, 3})
	assert.Equal(t, []byte{1, 2, 3}, b[:3])
	assert.Len(t, b, 3+DDPTaggedHeaderLen)
}

func TestTaggedHeaderAppendNoAlloc(t *testing.T) {
	h := DDPTaggedHeader{Last: true, RsvdULP: 1, STag: 2, TO: 3}
	buf := make([]byte, 0, DDPTaggedHeaderLen)
	allocs := testing.AllocsPerRun(100, func() { buf = h.Append(buf[:0]) })
	assert.Zero(t, allocs)
}

func TestParseTaggedHeaderErrors(t *testing.T) {
	good := (&DDPTaggedHeader{STag: 1}).Append(nil)
	for n := 1; n < DDPTaggedHeaderLen; n++ {
		_, c, err := ParseDDPTaggedHeader(good[:n])
		assert.ErrorIs(t, err, ErrDDPTruncated, "len %d", n)
		assert.ErrorIs(t, err, errLocalCatastrophic)
		assert.Zero(t, c)
	}
	_, _, err := ParseDDPTaggedHeader(nil)
	assert.ErrorIs(t, err, ErrDDPTruncated)

	// RFC 5041 §7.2: Type 1 Code 0x04 for a tagged header with DV != 1.
	bad := append([]byte{}, good...)
	bad[0] = 0x82
	_, _, err = ParseDDPTaggedHeader(bad)
	assert.ErrorIs(t, err, errTaggedVersion)

	untagged := (&DDPUntaggedHeader{}).Append(nil)
	_, _, err = ParseDDPTaggedHeader(untagged)
	assert.ErrorIs(t, err, ErrNotTagged)
}

func FuzzParseTaggedHeader(f *testing.F) {
	f.Add((&DDPTaggedHeader{Last: true, RsvdULP: 0x40, STag: 0x12345678, TO: 0x1122334455667788}).Append(nil))
	f.Add((&DDPTaggedHeader{}).Append(nil))
	f.Add([]byte{0xc1})
	f.Add([]byte{0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add((&DDPUntaggedHeader{}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseDDPTaggedHeader(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("consumed %d on error", n)
			}
			var e *DDPError
			if !errors.Is(err, ErrNotTagged) && (!errors.As(err, &e) || !ValidDDPCode(e.Type, e.Code)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n != DDPTaggedHeaderLen {
			t.Fatalf("consumed %d", n)
		}
		want := append([]byte{}, b[:n]...)
		want[0] &^= byte(DDPControlRsvdMask)
		if got := h.Append(nil); !bytes.Equal(got, want) {
			t.Fatalf("round trip %x -> %x", b[:n], got)
		}
	})
}
