package ddp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The posted-buffer ring keeps FIFO order across growth and wrap-around,
// and a popped slot no longer holds the ULP's buffer.
func TestBufRing_OrderAcrossGrowthAndWrap(t *testing.T) {
	var r bufRing
	assert.Zero(t, r.len())
	assert.Nil(t, r.s, "no storage before the first push")
	var next, want uint64
	for round := range 200 {
		for range round%7 + 1 {
			r.push(postedBuf{buf: make([]byte, 1), cookie: next})
			next++
		}
		for range round % 5 {
			if r.len() == 0 {
				break
			}
			require.Equal(t, want, r.front().cookie)
			head := r.s.head
			require.Equal(t, want, r.pop().cookie)
			require.Nil(t, r.s.items[head].buf, "the popped slot keeps no buffer")
			want++
		}
		require.Equal(t, int(next-want), r.len())
	}
	for r.len() > 0 {
		require.Equal(t, want, r.pop().cookie)
		want++
	}
	assert.Equal(t, next, want)
}
