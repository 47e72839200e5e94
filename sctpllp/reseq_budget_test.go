package sctpllp

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
)

// TestAttack_64AssociationsOneAddress_ProcessBudget (issue 43): as
// TestAttack_64AssociationsOneAddress, but the per-address share lifted
// so that a small process budget (32 MiB, an eighth of the 64 shares of
// 4 MiB) is the bound: the octets charged never exceed it, an association
// whose charge does not fit, or that holds the most when a smaller one
// needs room, is aborted with errMemoryShare and gives back what it held, the live heap grows by at most twice the budget, and a
// fresh association from another address still holds an early chunk and
// completes a session both ways.
func TestAttack_64AssociationsOneAddress_ProcessBudget(t *testing.T) {
	t.Cleanup(dropHeap)
	const share, limit = 4 << 20, 32 << 20
	b := membudget.New(limit)
	cfg := Config{Budget: b, MaxHeldAssocBytes: share, MaxHeldAddrBytes: -1}
	heap0 := liveHeap()
	evil := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	var atk []*reseqAttack
	aborted := 0
	for i := range 64 {
		k := newReseqAttack(t, cfg, evil, uint64(i))
		k.fill(share * 9 / 10)
		atk = append(atk, k)
		// Beyond the limit only by what a reclaimed association is
		// giving back (membudget.Account.ChargeOrReclaim).
		require.LessOrEqual(t, b.Peak(), b.Limit()+share)
	}
	// An association over the budget is aborted, either when its own
	// charge fails or, reclaimed, for a smaller one's; a reclaimed one
	// ends on its own goroutine, so the count is awaited, not read once.
	countAborted := func() int {
		n := 0
		for _, k := range atk {
			if k.over() {
				n++
			}
		}
		return n
	}
	want := 64 - limit/(share*9/10)
	assert.Eventually(t, func() bool { return countAborted() >= want }, 10*time.Second, time.Millisecond, "those beyond the budget aborted")
	for _, k := range atk {
		if k.over() {
			require.ErrorIs(t, k.a.Err(), errMemoryShare)
			require.ErrorIs(t, k.a.Err(), membudget.ErrExhausted)
			aborted++
		}
	}
	growth := liveHeap() - heap0
	t.Logf("64 associations, one address: %d aborted, %d octets charged of %d (peak %d, %d refused); live heap +%d (%.2fx the budget)",
		aborted, b.Used(), b.Limit(), b.Peak(), b.Refused(), growth, float64(growth)/float64(limit))
	assert.GreaterOrEqual(t, aborted, want, "those beyond the budget aborted")
	assert.LessOrEqual(t, growth, int64(2*limit), "live heap within twice the budget")

	ft := newFake(64)
	ft.raddr = &net.UDPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 5000}
	a := NewAssociation(ft, Config{KeepIdle: true, Budget: b})
	defer a.Close()
	s, h := passiveSession(t, a, ft, 5)
	ft.injectSeg(5, 2, []byte("second")) // early: held, charged
	assert.Positive(t, a.Stats().HeldBytes)
	ft.injectSeg(5, 1, []byte("first"))
	h.waitCount(t, 2)
	assert.Equal(t, [][]byte{[]byte("first"), []byte("second")}, h.segs)
	require.NoError(t, s.SendSegment([]byte{0xC0}, []byte("write")))
	m := ft.next(t)
	assert.Equal(t, append([]byte{0, 1, 0xC0}, "write"...), m.b)
	assert.NoError(t, a.Err())

	for _, k := range atk {
		_ = k.a.Abort()
	}
	require.NoError(t, a.Close())
	assert.Zero(t, b.Used(), "the budget back to zero")
}

// TestProcessBudget_ReclaimsTheLargest_RFC5043_10: with the process budget
// full of one peer's early segments, a second association holding less
// than its fair part is not refused: the largest is aborted (its error
// wraps errMemoryShare and membudget.ErrExhausted, counted) and gives its
// memory back, and the second delivers every segment it was sent, in
// order. Data the SCTP layer has acknowledged is never dropped for
// another peer's memory (RFC 5043 §10).
func TestProcessBudget_ReclaimsTheLargest_RFC5043_10(t *testing.T) {
	t.Cleanup(dropHeap)
	const limit = 8 << 20
	b := membudget.New(limit)
	evil := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	k := newReseqAttack(t, Config{Budget: b, MaxHeldAssocBytes: limit, MaxHeldAddrBytes: -1}, evil, 1)
	require.False(t, k.fill(limit*15/16), "alone, the attacker holds up to the budget: %v", k.a.Err())

	ft := newFake(64)
	ft.raddr = &net.UDPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 5000}
	a := NewAssociation(ft, Config{KeepIdle: true, Budget: b, MaxHeldAddrBytes: -1})
	defer a.Close()
	_, h := passiveSession(t, a, ft, 5)
	seg := make([]byte, 4000)
	n := uint16(2)
	for ; a.Stats().HeldBytes < limit/4; n++ { // early: DDP-SSN 1 missing
		seg[0] = byte(n)
		ft.injectSeg(5, n, seg)
		require.NoError(t, a.Err())
	}
	<-k.a.Done()
	require.ErrorIs(t, k.a.Err(), errMemoryShare, "the largest is reclaimed")
	require.ErrorIs(t, k.a.Err(), membudget.ErrExhausted)
	assert.Equal(t, uint64(1), b.Reclaims())
	assert.Equal(t, uint64(1), k.a.Stats().ShareAborts)
	assert.LessOrEqual(t, b.Peak(), int64(2*limit))

	ft.injectSeg(5, 1, []byte("first"))
	h.waitCount(t, int(n)-1)
	require.NoError(t, a.Err())
	assert.Equal(t, []byte("first"), h.segs[0])
	for i, s := range h.segs[1:] {
		require.Equal(t, byte(i+2), s[0], "segment %d in order", i+2)
	}
	require.NoError(t, a.Close())
	assert.Zero(t, b.Used(), "the budget back to zero")
	require.Eventually(t, func() bool { return b.Reclaimable() == 0 }, 10*time.Second, time.Millisecond,
		"an ended association leaves the budget's reclaimable accounts")
}
