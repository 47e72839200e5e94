package rdmap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ring keeps FIFO order across growth and wrap-around.
func TestFifo_OrderAcrossGrowthAndWrap(t *testing.T) {
	var q fifo[int]
	next, want := 0, 0
	// Push a few, pop fewer, so that the head walks round the ring while
	// it grows to 64.
	for round := range 200 {
		for range round%7 + 1 {
			q.push(next)
			next++
		}
		for range round % 5 {
			if q.len() == 0 {
				break
			}
			require.Equal(t, want, q.front())
			require.Equal(t, want, q.pop())
			want++
		}
		require.Equal(t, next-want, q.len())
		for i := range q.len() {
			require.Equal(t, want+i, q.at(i))
		}
	}
	for q.len() > 0 {
		require.Equal(t, want, q.pop())
		want++
	}
	assert.Equal(t, next, want)
	q.push(1)
	q.reset()
	assert.Zero(t, q.len())
}

// BenchmarkFifoPushPop is one push and one pop of a completion, the
// steady state of a CQ (0 allocs).
func BenchmarkFifoPushPop(b *testing.B) {
	var q fifo[Completion]
	for range 5 {
		q.push(Completion{})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.push(Completion{WRID: uint64(i)})
		_ = q.pop()
	}
}
