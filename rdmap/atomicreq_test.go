package rdmap

import (
	"math/rand/v2"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 7306 §5.2.1 Figure 4.
var atomicReqImage = []byte{
	0x00, 0x00, 0x00, 0x02, // Reserved | AOpCode = CmpSwap
	0x00, 0x00, 0x00, 0x07, // Request Identifier
	0xde, 0xad, 0xbe, 0xef, // Remote STag
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, // Remote Tagged Offset
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // Swap Data
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // Swap Mask
	0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // Compare Data
	0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // Compare Mask
}

func TestAtomicRequest_RFC7306_5_2_1_Figure4(t *testing.T) {
	want := atomicRequest{Op: atomicCmpSwap, ReqID: 7, STag: 0xdeadbeef, TO: 8,
		Data: 0x0102030405060708, Mask: ^uint64(0), Compare: 0x1112131415161718, CompareMask: 0xffffffff}
	a, n, err := parseAtomicRequest(atomicReqImage)
	require.NoError(t, err)
	assert.Equal(t, atomicRequestLen, n)
	assert.Equal(t, want, a)
	assert.Equal(t, atomicReqImage, a.Append(nil))
	assert.Equal(t, atomicRequestLen, a.Len())

	// Reserved bits are ignored on receive and sent as zero.
	img := append([]byte{}, atomicReqImage...)
	img[0], img[3] = 0xff, 0xf0 // AOpCode 0 = FetchAdd, reserved all ones
	a, _, err = parseAtomicRequest(img)
	require.NoError(t, err)
	assert.Equal(t, atomicFetchAdd, a.Op)
	assert.Equal(t, []byte{0, 0, 0, 0}, a.Append(nil)[:4])
}

func TestAtomicRequest_Invalid(t *testing.T) {
	_, _, err := parseAtomicRequest(atomicReqImage[:51])
	require.ErrorIs(t, err, errTruncated)
	for _, op := range []byte{0x1, 0x3, 0xf} { // 0x1: the draft's Swap, reserved in RFC 7306
		img := append([]byte{}, atomicReqImage...)
		img[3] = op
		a, _, err := parseAtomicRequest(img)
		var pe *protocolError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, iwarp.Term.UnexpectedOpcode, pe.Code)
		assert.Equal(t, atomicOp(op), a.Op)
	}
}

// refFetchAdd is the RFC 7306 §5.1.1 pseudocode, bit by bit.
func refFetchAdd(orig, add, mask uint64) uint64 {
	var carry, res uint64
	for bit := 0; bit < 64; bit++ {
		loc := uint64(1) << bit
		v1 := (orig & loc) >> bit
		v2 := (add & loc) >> bit
		sum := carry + v1 + v2
		carry = (sum & 2) >> 1
		if sum&1 != 0 {
			res |= loc
		}
		if carry != 0 && mask&loc == 0 {
			carry = 1
		} else {
			carry = 0
		}
	}
	return res
}

func TestAtomic_FetchAdd_RFC7306_5_1_1_Pseudocode(t *testing.T) {
	tests := []struct{ orig, add, mask, want uint64 }{
		{1, 2, 0, 3},
		{^uint64(0), 1, 0, 0}, // 64-bit wrap
		// Two 32-bit fields: mask bits 31 and 63; carry out of the low field dropped.
		{0x00000001_ffffffff, 0x00000001_00000001, 1<<31 | 1<<63, 0x00000002_00000000},
		// Eight 8-bit fields.
		{0xff01ff01ff01ff01, 0x0101010101010101, 0x8080808080808080, 0x0002000200020002},
	}
	for _, tc := range tests {
		a := atomicRequest{Op: atomicFetchAdd, Data: tc.add, Mask: tc.mask}
		assert.Equal(t, tc.want, a.apply(tc.orig))
		assert.Equal(t, tc.want, refFetchAdd(tc.orig, tc.add, tc.mask))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		o, d, m := r.Uint64(), r.Uint64(), r.Uint64()
		if r.IntN(4) == 0 {
			m = 0
		}
		a := atomicRequest{Op: atomicFetchAdd, Data: d, Mask: m}
		require.Equal(t, refFetchAdd(o, d, m), a.apply(o), "orig %x add %x mask %x", o, d, m)
	}
}

func TestAtomic_CmpSwap_RFC7306_5_1_2_Pseudocode(t *testing.T) {
	tests := []struct {
		name                             string
		orig, cmp, cmpMask, swap, swMask uint64
		want                             uint64
	}{
		{"equal full masks", 5, 5, ^uint64(0), 9, ^uint64(0), 9},
		{"not equal", 5, 6, ^uint64(0), 9, ^uint64(0), 5},
		{"masked compare matches low half", 0xaaaa_0005, 0xbbbb_0005, 0xffff, 0x1234_5678, ^uint64(0), 0x1234_5678},
		{"masked swap keeps other bits", 0xff00, 0xff00, ^uint64(0), 0x00ff, 0x0f0f, 0xf00f},
		{"zero compare mask is unconditional swap", 1, 2, 0, 3, ^uint64(0), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := atomicRequest{Op: atomicCmpSwap, Compare: tc.cmp, CompareMask: tc.cmpMask, Data: tc.swap, Mask: tc.swMask}
			assert.Equal(t, tc.want, a.apply(tc.orig))
		})
	}
}

func FuzzAtomicRequest(f *testing.F) {
	f.Add(atomicReqImage)
	f.Add(make([]byte, 52))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, n, err := parseAtomicRequest(b)
		if err != nil {
			return
		}
		out := a.Append(nil)
		require.Equal(t, n, len(out))
		require.Equal(t, b[4:n], out[4:])
		require.Equal(t, b[3]&0x0f, out[3])
	})
}
