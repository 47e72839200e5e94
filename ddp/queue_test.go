package ddp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A queue's posted buffers keep FIFO order across the ring's growth and
// wrap-around, and an idle queue holds no storage. (That a popped slot no
// longer holds the ULP's buffer is asserted on the ring itself,
// internal/ring TestRing_OrderAcrossGrowthAndWrap.)
func TestBufRing_OrderAcrossGrowthAndWrap(t *testing.T) {
	var q rxQueue
	r := &q.bufs
	assert.Zero(t, r.Len())
	assert.False(t, r.Allocated(), "no storage before the first push")
	var next, want uint64
	for round := range 200 {
		for range round%7 + 1 {
			r.Push(postedBuf{buf: make([]byte, 1), cookie: next})
			next++
		}
		for range round % 5 {
			if r.Len() == 0 {
				break
			}
			require.Equal(t, want, r.Front().cookie)
			require.Equal(t, want, r.Pop().cookie)
			want++
		}
		require.Equal(t, int(next-want), r.Len())
	}
	for r.Len() > 0 {
		require.Equal(t, want, r.Pop().cookie)
		want++
	}
	assert.Equal(t, next, want)
}
