package goid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIDTellsGoroutinesApart(t *testing.T) {
	me := ID()
	assert.NotZero(t, me)
	assert.Equal(t, me, ID(), "stable within a goroutine")
	other := make(chan uint64)
	go func() { other <- ID() }()
	o := <-other
	assert.NotZero(t, o)
	assert.NotEqual(t, me, o)
}
