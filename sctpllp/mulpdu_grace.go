package sctpllp

import (
	"sync"
	"sync/atomic"
	"time"
)

// shrinkGraceTime is how long after the path shrank a DDP segment built for
// the previous, larger MULPDU is still accepted by Session.SendSegment.
const shrinkGraceTime = 500 * time.Millisecond

// shrinkGrace remembers the last MULPDU reported and, after a decrease,
// the previous value until the grace ends. Every DDP segment passes
// through observe and limit, so the steady state (no change, no grace)
// takes no lock: two atomic loads.
type shrinkGrace struct {
	// Why shrinkGraceTime: a DDP sender reads MULPDU once per segment (RFC 5041 §5.2: segments
	// never exceed the current MULPDU) and then sends; if the path MTU drops
	// between the two calls, the segment in hand was sized correctly when it
	// was built. Rejecting it would break the DDP stream for a race the
	// sender cannot avoid. It is sent instead: the SCTP stack delivers it
	// intact (pion with the DF-clear path of pmtu.Conn, the kernel by SCTP
	// fragmentation), at the cost of one fragmented message, which is what
	// RFC 8899 §5.4 allows while a path shrinks. Segments above the previous
	// MULPDU, and any oversize segment after the grace, are still refused
	// with llp.ErrSegmentTooLarge (RFC 5043 §9).

	last  atomic.Int64 // last MULPDU reported
	grace atomic.Bool  // a decrease is within its grace (prev, until valid)
	mu    sync.Mutex   // guards prev, until and changes of last
	prev  int          // MULPDU before the last decrease
	until time.Time    // end of the grace for prev
	now   func() time.Time
}

// observe records m as the MULPDU just reported.
func (g *shrinkGrace) observe(m int) {
	if g.last.Load() == int64(m) {
		return
	}
	g.mu.Lock()
	if last := int(g.last.Load()); last != 0 && m < last {
		g.prev = max(last, g.prev)
		g.until = g.clock().Add(shrinkGraceTime)
		g.grace.Store(true)
	}
	g.last.Store(int64(m))
	g.mu.Unlock()
}

// limit returns the largest segment accepted now when the current MULPDU
// is m.
func (g *shrinkGrace) limit(m int) int {
	if !g.grace.Load() {
		return m
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prev > m && g.clock().Before(g.until) {
		return g.prev
	}
	g.prev = 0
	g.grace.Store(false)
	return m
}

func (g *shrinkGrace) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}
