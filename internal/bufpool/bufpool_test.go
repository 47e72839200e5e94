package bufpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetPut(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 65536} {
		p := Get(n)
		assert.Len(t, *p, n)
		c := cap(*p)
		assert.GreaterOrEqual(t, c, 512)
		assert.Zero(t, c&(c-1), "power-of-two class for %d", n)
		Put(p)
	}
	big := Get(65537)
	assert.Len(t, *big, 65537, "beyond the largest class: allocated")
	Put(big) // dropped, not pooled
	odd := make([]byte, 700)
	Put(&odd) // not a class size: dropped
}

func TestPooledGetAllocatesNothing(t *testing.T) {
	Put(Get(8192))
	allocs := testing.AllocsPerRun(100, func() { Put(Get(8000)) })
	limit := 0.1
	if raceOn {
		limit = 0.5
	}
	assert.LessOrEqual(t, allocs, limit)
}
