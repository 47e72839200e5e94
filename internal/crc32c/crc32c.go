// Package crc32c computes the CRC32c (Castagnoli) checksum that SCTP
// (RFC 9260 §6.8, Appendix B) and MPA (RFC 5044 §8) put on every packet
// and FPDU, with the same results as hash/crc32 and its Castagnoli table.
package crc32c

// hash/crc32 runs the SSE4.2 CRC32 instruction on three streams at once,
// at most 8 octets per cycle. On CPUs with AVX-512 and VPCLMULQDQ this
// package folds long buffers with carry-less multiplication instead, 256
// octets per step in four 512-bit accumulators (the folding method of
// Gopal et al., "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ Instruction", Intel, 2009), then one 16-octet block at a
// time, and takes the CRC of the last 16 folded octets and of the 0-15
// octets after them with the CRC32 instruction. Shorter buffers (packet
// headers) go straight to that instruction. The folding constants are computed
// at start from the polynomial (xpow), not copied from tables. On a
// 64 KiB packet the checksum was the largest cost of the SCTP stack
// after the system calls (a sixth of the CPU on each end).

import "hash/crc32"

// table is the Castagnoli table; hash/crc32 uses the CRC32 instruction
// for it where there is one.
var table = crc32.MakeTable(crc32.Castagnoli)

// foldMin is the shortest buffer folded with VPCLMULQDQ, the four
// accumulators' 256 octets (BenchmarkUpdate on this project's host: 256
// octets 1.7x, 1 KiB 2.8x, 64 KiB 4.2x hash/crc32).
const foldMin = 256

// Update returns the CRC32c of p appended to a buffer whose CRC32c was
// crc, like crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), p).
func Update(crc uint32, p []byte) uint32 {
	switch {
	case useFold && len(p) >= foldMin:
		return foldAVX512(crc, p, &foldK)
	case useShort && len(p) < foldMin:
		return shortSSE42(crc, p)
	}
	return crc32.Update(crc, table, p)
}

// Checksum returns the CRC32c of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Table returns the Castagnoli table, for code that needs a hash.Hash32
// (crc32.New).
func Table() *crc32.Table { return table }

// poly is the Castagnoli polynomial in normal form, x^32 implied
// (RFC 9260 Appendix B: 0x1EDC6F41).
const poly = 0x1EDC6F41

// xpow returns x^n modulo the polynomial, in normal form.
func xpow(n int) uint32 {
	r := uint32(1)
	for range n {
		carry := r & 0x80000000
		r <<= 1
		if carry != 0 {
			r ^= poly
		}
	}
	return r
}

// foldConst is the multiplier, in the bit-reflected form the registers
// hold, that moves a 64-bit half of a 128-bit lane n bits further on:
// x^n mod P, reflected into the upper half of a quadword.
func foldConst(n int) uint64 { return uint64(reverse32(xpow(n))) << 32 }

func reverse32(v uint32) uint32 {
	var r uint32
	for range 32 {
		r = r<<1 | v&1
		v >>= 1
	}
	return r
}

// foldPair returns the two multipliers that fold a 128-bit lane d octets
// further: its first (higher-degree) quadword is multiplied by
// x^(8d+64) and its second by x^(8d), each divided by x because a
// carry-less product of two reflected quadwords comes out shifted by one
// bit.
func foldPair(d int) [2]uint64 { return [2]uint64{foldConst(8*d + 63), foldConst(8*d - 1)} }

// foldK holds the multiplier pairs for 256, 64 and 16 octets, the layout
// foldAVX512 reads.
var foldK = func() [6]uint64 {
	var k [6]uint64
	for i, d := range []int{256, 64, 16} {
		p := foldPair(d)
		k[2*i], k[2*i+1] = p[0], p[1]
	}
	return k
}()

// reflected is the polynomial bit-reflected, as the CRC's registers hold
// it (the bit for x^0 on the left).
const reflected = 0x82F63B78

// mulModP returns a·b modulo the polynomial, both and the result
// bit-reflected (the representation a CRC32c value is in).
func mulModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ reflected
		} else {
			b >>= 1
		}
	}
	return p
}

// x2k holds x^(2^k) modulo the polynomial, bit-reflected, for k < 67:
// Shift needs x^(8n) for every bit of a non-negative int n, up to 2^65.
var x2k = func() (t [67]uint32) {
	t[0] = 1 << 30 // x^1: the bit for x^0 is the leftmost
	for k := 1; k < len(t); k++ {
		t[k] = mulModP(t[k-1], t[k-1])
	}
	return t
}()

// Shift returns x^(8n) modulo the polynomial, bit-reflected: the factor
// by which Combine moves a CRC32c past n octets. A caller combining many
// CRCs over the same length computes it once (CombineShift). It panics if
// n is negative (a length, never negative in a correct caller).
func Shift(n int) uint32 {
	if n < 0 {
		panic("crc32c: Shift of a negative length")
	}
	r := uint32(1) << 31 // x^0
	for k, m := 3, uint64(n); m != 0; k, m = k+1, m>>1 {
		if m&1 != 0 {
			r = mulModP(r, x2k[k])
		}
	}
	return r
}

// Combine returns the CRC32c of a buffer A followed by a buffer B of n
// octets, given the CRC32c of each (Checksum(A), Checksum(B)), without
// reading either: the CRC of A moved past n octets of zeros, plus that of
// B (the pre- and post-inversion of the two cancel). So a checksum over
// octets read once while copying them can be completed later with a
// header written after them, in front.
func Combine(crcA, crcB uint32, n int) uint32 { return CombineShift(crcA, crcB, Shift(n)) }

// CombineShift is Combine with the shift of Shift(n) given.
func CombineShift(crcA, crcB, shift uint32) uint32 { return mulModP(shift, crcA) ^ crcB }
