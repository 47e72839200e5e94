package ring

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ring keeps FIFO order across growth and wrap-around, At sees the
// same order, a popped slot keeps no reference, and Reset empties it.
func TestRing_OrderAcrossGrowthAndWrap(t *testing.T) {
	var q Ring[*int]
	assert.Zero(t, q.Len())
	assert.False(t, q.Allocated(), "no storage before the first push")
	q.Reset() // a no-op on a ring that never held anything
	assert.False(t, q.Allocated())
	vals := make([]int, 2000)
	next, want := 0, 0
	// Push a few, pop fewer, so that the head walks round the ring while
	// it grows.
	for round := range 200 {
		for range round%7 + 1 {
			vals[next] = next
			q.Push(&vals[next])
			next++
		}
		for range round % 5 {
			if q.Len() == 0 {
				break
			}
			require.Equal(t, want, *q.Front())
			head := q.s.head
			if round%2 == 0 {
				require.Equal(t, want, *q.Pop())
			} else {
				var got *int
				q.PopTo(&got)
				require.Equal(t, want, *got)
			}
			require.Nil(t, q.s.buf[head], "the popped slot keeps no reference")
			want++
		}
		require.Equal(t, next-want, q.Len())
		n := len(q.s.buf)
		require.Zero(t, n&(n-1), "the storage's length is a power of two (indexes wrap with a mask): %d", n)
		for i := range q.Len() {
			require.Equal(t, want+i, *q.At(i))
		}
	}
	for q.Len() > 0 {
		require.Equal(t, want, *q.Pop())
		want++
	}
	assert.Equal(t, next, want)
	q.Push(&vals[0])
	q.Reset()
	assert.Zero(t, q.Len())
	assert.True(t, q.Allocated(), "Reset keeps the storage")
	for _, p := range q.s.buf {
		assert.Nil(t, p, "Reset drops the references")
	}
}

// An idle queue is one pointer.
func TestRing_ZeroIsOnePointer(t *testing.T) {
	assert.Equal(t, unsafe.Sizeof(uintptr(0)), unsafe.Sizeof(Ring[[64]byte]{}))
}

// BenchmarkRingPushPop is one push and one pop of a 72-octet element, the
// steady state of a CQ (0 allocs).
func BenchmarkRingPushPop(b *testing.B) {
	type completion struct{ a, b, c, d, e, f, g, h, i uint64 }
	var q Ring[completion]
	for range 5 {
		q.Push(completion{})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Push(completion{a: uint64(i)})
		_ = q.Pop()
	}
}
