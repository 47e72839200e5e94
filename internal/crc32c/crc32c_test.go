package crc32c

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var std = crc32.MakeTable(crc32.Castagnoli)

// RFC 3720 §B.4 (the CRC32c of RFC 9260 Appendix B): 32 zero octets.
func TestVector_RFC9260_AppendixB(t *testing.T) {
	assert.Equal(t, uint32(0x8A9136AA), Checksum(make([]byte, 32)))
	ff := make([]byte, 32)
	for i := range ff {
		ff[i] = 0xff
	}
	assert.Equal(t, uint32(0x62A8AB43), Checksum(ff))
	long := make([]byte, 4096) // folded where the CPU can
	assert.Equal(t, crc32.Checksum(long, std), Checksum(long))
}

// Every short length, every length around the folding threshold and its
// 16- and 64-octet steps, every alignment, random initial CRCs: the same
// as hash/crc32.
func TestMatchesHashCRC32(t *testing.T) {
	t.Logf("folding with VPCLMULQDQ: %v", useFold)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 70000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lengths := []int{1000, 1444, 1472, 8972, 65476, 65507, 69999}
	for n := 0; n < 48; n++ { // the CRC32 instruction's 8, 4 and 1 octet steps
		lengths = append(lengths, n)
	}
	for n := foldMin - 70; n < foldMin+600; n++ { // every 16- and 64-octet step after a fold
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, off := range []int{0, 1, 7, 13} {
			if off+n > len(buf) {
				continue
			}
			p := buf[off : off+n]
			init := rng.Uint32()
			require.Equal(t, crc32.Update(init, std, p), Update(init, p), "len %d offset %d", n, off)
			require.Equal(t, crc32.Checksum(p, std), Checksum(p), "len %d offset %d", n, off)
		}
	}
}

// Updating in pieces is updating at once (SCTP checksums a packet in
// three pieces, the Checksum field taken as zero).
func TestUpdateInPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := make([]byte, 9000)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	for range 200 {
		a, b := rng.IntN(len(p)), rng.IntN(len(p))
		a, b = min(a, b), max(a, b)
		c := Update(Update(Update(0, p[:a]), p[a:b]), p[b:])
		require.Equal(t, crc32.Checksum(p, std), c, "cut at %d and %d", a, b)
	}
}

// The folding constants, checked against a bit-serial model of the fold
// in Go (no assembly): a lane moved d octets on with foldPair(d) keeps the
// CRC of the buffer.
func TestFoldConstantsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{16, 64, 256} {
		for range 50 {
			n := d * (2 + rng.IntN(8))
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			init := rng.Uint32()
			require.Equal(t, crc32.Update(init, std, p), modelFold(init, p, d), "d=%d n=%d", d, n)
		}
	}
	assert.Equal(t, [2]uint64{foldK[0], foldK[1]}, foldPair(256))
	assert.Equal(t, [2]uint64{foldK[4], foldK[5]}, foldPair(16))
}

// modelFold folds p (a multiple of d octets) d octets at a time, one
// 128-bit lane per 16 octets of a d-octet block, as the assembly does.
func modelFold(crc uint32, p []byte, d int) uint32 {
	lanes := d / 16
	acc := make([][2]uint64, lanes)
	for l := range lanes {
		acc[l] = [2]uint64{binary.LittleEndian.Uint64(p[16*l:]), binary.LittleEndian.Uint64(p[16*l+8:])}
	}
	acc[0][0] ^= uint64(^crc)
	k := foldPair(d)
	for o := d; o < len(p); o += d {
		for l := range lanes {
			acc[l] = foldLane(acc[l], k)
			acc[l][0] ^= binary.LittleEndian.Uint64(p[o+16*l:])
			acc[l][1] ^= binary.LittleEndian.Uint64(p[o+16*l+8:])
		}
	}
	k16 := foldPair(16)
	r := acc[0]
	for l := 1; l < lanes; l++ {
		r = foldLane(r, k16)
		r[0] ^= acc[l][0]
		r[1] ^= acc[l][1]
	}
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:], r[0])
	binary.LittleEndian.PutUint64(out[8:], r[1])
	return crc32.Update(0xFFFFFFFF, std, out[:]) // the raw CRC from a zero register, inverted
}

func foldLane(a [2]uint64, k [2]uint64) [2]uint64 {
	l1, h1 := clmul(a[0], k[0])
	l2, h2 := clmul(a[1], k[1])
	return [2]uint64{l1 ^ l2, h1 ^ h2}
}

func clmul(a, b uint64) (lo, hi uint64) {
	for i := range 64 {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return lo, hi
}

func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 2000))
	f.Add(uint32(0xdeadbeef), []byte("123456789"))
	f.Fuzz(func(t *testing.T, init uint32, p []byte) {
		if got, want := Update(init, p), crc32.Update(init, std, p); got != want {
			t.Fatalf("len %d: %#x, hash/crc32 %#x", len(p), got, want)
		}
	})
}

// BenchmarkUpdate compares this package with hash/crc32 per size.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{28, 256, 1024, 1452, 8192, 65476} {
		p := make([]byte, n)
		b.Run(fmt.Sprintf("crc32c/size=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				Update(0, p)
			}
		})
		b.Run(fmt.Sprintf("hash-crc32/size=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				crc32.Update(0, std, p)
			}
		})
	}
}

// The data path checksums every packet: nothing may allocate.
func TestNoAllocs(t *testing.T) {
	p := make([]byte, 65476)
	assert.Zero(t, testing.AllocsPerRun(100, func() { Update(1, p); Checksum(p[:1500]); Checksum(p[:100]) }))
}

// Combine(Checksum(a), Checksum(b), len(b)) is the CRC32c of a followed
// by b, for empty and long pieces alike.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {28, 65448}, {12, 1452}, {300, 7}, {4096, 4096}, {1, 1 << 17}} {
		a, b := make([]byte, c[0]), make([]byte, c[1])
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := Checksum(append(append([]byte(nil), a...), b...))
		assert.Equal(t, want, Combine(Checksum(a), Checksum(b), len(b)), "%d+%d", c[0], c[1])
		assert.Equal(t, want, CombineShift(Checksum(a), Checksum(b), Shift(len(b))), "%d+%d", c[0], c[1])
	}
}

// Shift of a length beyond 2^31 still works (the table covers every bit
// of an int); a negative length is a caller's bug and panics with a
// message, not an index out of range.
func TestShiftBounds(t *testing.T) {
	const c = 0x89abcdef
	for _, n := range [][2]int{{1 << 40, 12345}, {math.MaxInt / 2, math.MaxInt / 2}, {math.MaxInt - 7, 7}} {
		twice := CombineShift(CombineShift(c, 0, Shift(n[0])), 0, Shift(n[1]))
		assert.Equal(t, CombineShift(c, 0, Shift(n[0]+n[1])), twice, "%d+%d octets of zeros", n[0], n[1])
	}
	assert.NotPanics(t, func() { Shift(math.MaxInt) })
	assert.PanicsWithValue(t, "crc32c: Shift of a negative length", func() { Shift(-1) })
}

func FuzzCombine(f *testing.F) {
	f.Add([]byte("SCTP common header and DATA"), []byte("user data"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := Checksum(append(append([]byte(nil), a...), b...))
		if got := Combine(Checksum(a), Checksum(b), len(b)); got != want {
			t.Fatalf("Combine = %08x, want %08x", got, want)
		}
	})
}
