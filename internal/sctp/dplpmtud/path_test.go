package dplpmtud

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathSetAndStats(t *testing.T) {
	p := NewPath(9000, 1200, 8220)
	assert.Equal(t, 8220, p.MTU(), "initial value clamped to the maximum")
	var seen [][2]int
	p.OnChange(func(old, mtu int) { seen = append(seen, [2]int{old, mtu}) })

	assert.False(t, p.Set(8220, SourceProbe), "no change")
	assert.True(t, p.Set(1280, SourceTooBig))
	assert.True(t, p.Set(100, SourceBlackHole), "clamped to 1200")
	assert.Equal(t, 1200, p.MTU())
	assert.True(t, p.Set(1500, SourceProbe))

	s := p.Stats()
	assert.Equal(t, 1500, s.PMTU)
	assert.Equal(t, SourceProbe, s.Source)
	assert.Equal(t, uint64(3), s.Changes)
	assert.Equal(t, uint64(2), s.Decreases)
	assert.Equal(t, uint64(1), s.Increases)
	assert.Equal(t, uint64(1), s.BlackHoles)
	assert.False(t, s.LastChange.IsZero())
	assert.Equal(t, [][2]int{{8220, 1280}, {1280, 1200}, {1200, 1500}}, seen)
	lo, hi := p.Bounds()
	assert.Equal(t, [2]int{1200, 8220}, [2]int{lo, hi})
	assert.Equal(t, "black-hole", SourceBlackHole.String())
	assert.Equal(t, "source(9)", Source(9).String())
}

func TestTablePerPeerAddress(t *testing.T) {
	tb := NewTable(1500, 1200, 9000)
	a := tb.Path(netip.MustParseAddr("10.0.0.1"))
	b := tb.Path(netip.MustParseAddr("::ffff:10.0.0.2"))
	require.Same(t, a, tb.Path(netip.MustParseAddr("::ffff:10.0.0.1")), "v4-mapped is the same peer")
	b.Set(1280, SourceTooBig)
	assert.Equal(t, 1280, tb.Min())
	assert.Equal(t, 1500, a.MTU())
	assert.Len(t, tb.Addrs(), 2)
	assert.Equal(t, 0, NewTable(1500, 0, 0).Min())
}
