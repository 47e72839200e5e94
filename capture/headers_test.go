package capture

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sumRef is RFC 1071's reference loop: 16-bit big-endian words.
func sumRef(b []byte) uint16 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return fold(s)
}

// TestSum_RFC1071 compares the eight-octet sum with the reference on
// random data of every length up to 300 and on all-ones data (the carry
// cases), with and without a starting partial sum.
func TestSum_RFC1071(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 300; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		assert.Equal(t, sumRef(b), fold(sum(0, b)), "random, %d octets", n)
		for i := range b {
			b[i] = 0xff
		}
		assert.Equal(t, sumRef(b), fold(sum(0, b)), "ones, %d octets", n)
		pre := append([]byte{0x12, 0x34, 0xff, 0xff}, b...)
		assert.Equal(t, sumRef(pre), fold(sum(0x1234+0xffff, b)), "with a partial sum, %d octets", n)
	}
}

func BenchmarkSum64K(b *testing.B) {
	buf := make([]byte, 65536)
	b.SetBytes(int64(len(buf)))
	for range b.N {
		_ = sum(0, buf)
	}
}
