package sctp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A full packet's user data, copied out of a sparse read, is charged
// little more than its octets at the common MTUs (RFC 9260 §6.2: the
// window offers what the buffers hold), so that reads copied and reads
// delivered in place (about 1.05 times) are charged alike.
func TestRxClassFitsFullPackets(t *testing.T) {
	for _, tc := range []struct {
		name string
		mtu  int
		ipv6 bool
		max  float64
	}{
		{"MTU 1500 IPv4", 1500, false, 1.16},
		{"MTU 1500 IPv6", 1500, true, 1.18},
		{"MTU 9000 IPv4", 9000, false, 1.06},
		{"MTU 9000 IPv6", 9000, true, 1.06},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip := 20
			if tc.ipv6 {
				ip = 40
			}
			n := tc.mtu - ip - 8 - 12 - 16 // UDP, common header, DATA header
			c := rxClass(n)
			assert.GreaterOrEqual(t, c, n)
			assert.LessOrEqual(t, float64(c+msgOverhead)/float64(n), tc.max, "class %d for %d octets", c, n)
		})
	}
}

// Every receive class comes from a pool and goes back to it: getting and
// putting a buffer of any class allocates nothing.
func TestRxBuffersPooled(t *testing.T) {
	for _, c := range rxClasses {
		bp := getRxBuf(c)
		require.Len(t, *bp, c)
		putBuf(bp)
		allocs := testing.AllocsPerRun(100, func() { putBuf(getRxBuf(c)) })
		assert.Zero(t, allocs, "class %d", c)
	}
}
