// Package bufpool pools byte buffers in power-of-two size classes for the
// SCTP adaptation (sctpllp) and the pion backend (sctpllp/pion): received
// messages, re-sequenced segments and demultiplexed datagrams. (Package
// sctp keeps its own classes, sized with headroom for its packet layout.)
package bufpool

import "sync"

// Pooled buffers in power-of-two size classes from 512 octets to 64 KiB.
// Larger requests are allocated and dropped on release. Buffers travel as
// *[]byte so that returning them to a sync.Pool allocates nothing.
const (
	minBufShift = 9  // 512
	maxBufShift = 16 // 65536
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

func bufClass(n int) int {
	c := 0
	for size := 1 << minBufShift; size < n; size <<= 1 {
		c++
	}
	return c
}

// Get returns a buffer of length n.
func Get(n int) *[]byte {
	c := bufClass(n)
	if c >= len(bufPools) {
		b := make([]byte, n)
		return &b
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<(minBufShift+c))
	return &b
}

// Put returns a buffer obtained from Get; other buffers are dropped.
func Put(p *[]byte) {
	c := cap(*p)
	if c < 1<<minBufShift || c > 1<<maxBufShift || c&(c-1) != 0 {
		return
	}
	*p = (*p)[:0]
	bufPools[bufClass(c)].Put(p)
}
