package seq

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// rfc1982Less32 is RFC 1982 §3.2 written out literally, as the oracle.
func rfc1982Less32(a, b uint32) bool {
	const half = uint64(1) << 31
	x, y := uint64(a), uint64(b)
	return (x < y && y-x < half) || (x > y && x-y > half)
}

func rfc1982Less16(a, b uint16) bool {
	const half = uint32(1) << 15
	x, y := uint32(a), uint32(b)
	return (x < y && y-x < half) || (x > y && x-y > half)
}

func TestTSNCompare_RFC9260_1_6_Table(t *testing.T) {
	cases := []struct {
		a, b          uint32
		less, greater bool
		name          string
	}{
		{0, 1, true, false, "adjacent"},
		{1, 0, false, true, "adjacent reversed"},
		{5, 5, false, false, "equal"},
		{math.MaxUint32, 0, true, false, "across the wrap"},
		{0, math.MaxUint32, false, true, "across the wrap reversed"},
		{math.MaxUint32 - 10, 10, true, false, "21 apart across the wrap"},
		{0, 1<<31 - 1, true, false, "just under half the space"},
		{0, 1 << 31, false, false, "exactly half: undefined"},
		{1 << 31, 0, false, false, "exactly half reversed: undefined"},
		{0, 1<<31 + 1, false, true, "just over half: b precedes a"},
		{100, 1<<31 + 99, true, false, "just under half from a nonzero start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.less, TSNLess(c.a, c.b), "less")
			assert.Equal(t, c.greater, TSNGreater(c.a, c.b), "greater")
			assert.Equal(t, c.less || c.a == c.b, TSNLessEq(c.a, c.b), "lessEq")
			assert.Equal(t, c.greater || c.a == c.b, TSNGreaterEq(c.a, c.b), "greaterEq")
			assert.Equal(t, c.greater, TSNLess(c.b, c.a), "antisymmetry")
		})
	}
}

func TestSSNCompare_RFC9260_1_6_Table(t *testing.T) {
	cases := []struct {
		a, b          uint16
		less, greater bool
		name          string
	}{
		{0, 1, true, false, "adjacent"},
		{7, 7, false, false, "equal"},
		{math.MaxUint16, 0, true, false, "across the wrap"},
		{0, math.MaxUint16, false, true, "across the wrap reversed"},
		{65530, 4, true, false, "10 apart across the wrap"},
		{0, 1<<15 - 1, true, false, "just under half"},
		{0, 1 << 15, false, false, "exactly half: undefined"},
		{1 << 15, 0, false, false, "exactly half reversed: undefined"},
		{0, 1<<15 + 1, false, true, "just over half"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.less, SSNLess(c.a, c.b), "less")
			assert.Equal(t, c.greater, SSNGreater(c.a, c.b), "greater")
			assert.Equal(t, c.less || c.a == c.b, SSNLessEq(c.a, c.b), "lessEq")
			assert.Equal(t, c.greater || c.a == c.b, SSNGreaterEq(c.a, c.b), "greaterEq")
		})
	}
}

// Every 16-bit pair against the literal RFC 1982 definition.
func TestSSNCompare_RFC1982_3_2_Exhaustive(t *testing.T) {
	for a := 0; a <= math.MaxUint16; a += 257 {
		for b := 0; b <= math.MaxUint16; b++ {
			x, y := uint16(a), uint16(b)
			if SSNLess(x, y) != rfc1982Less16(x, y) || SSNGreater(x, y) != rfc1982Less16(y, x) {
				t.Fatalf("SSN %d vs %d: less=%v greater=%v, RFC 1982 says less=%v greater=%v",
					x, y, SSNLess(x, y), SSNGreater(x, y), rfc1982Less16(x, y), rfc1982Less16(y, x))
			}
		}
	}
}

func TestTSNCompare_RFC1982_3_2_Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		a := r.Uint32()
		b := a + uint32(r.IntN(1<<16)) - 1<<15 // near a, across the wrap often
		if i%2 == 1 {
			b = r.Uint32()
		}
		if TSNLess(a, b) != rfc1982Less32(a, b) || TSNGreater(a, b) != rfc1982Less32(b, a) {
			t.Fatalf("TSN %d vs %d disagrees with RFC 1982", a, b)
		}
	}
}

func TestTSNMax_RFC9260_1_6(t *testing.T) {
	assert.Equal(t, uint32(3), TSNMax(math.MaxUint32, 3))
	assert.Equal(t, uint32(3), TSNMax(3, math.MaxUint32))
	assert.Equal(t, uint32(9), TSNMax(9, 9))
	assert.Equal(t, uint32(0), TSNMax(0, 1<<31), "undefined order keeps the first")
}
