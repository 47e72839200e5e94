package sctp

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

type gapList = []wire.GapAckBlock

// sent returns a queue with n chunks of 100 bytes sent at t0, TSNs init..init+n-1.
func sent(t *testing.T, init uint32, n int, t0 time.Time) *outstandingQueue {
	t.Helper()
	q := newOutstandingQueue(init, 64)
	for i := 0; i < n; i++ {
		tsn, ok := q.Add(100, t0)
		require.True(t, ok)
		require.Equal(t, init+uint32(i), tsn)
	}
	return q
}

func stateOf(q *outstandingQueue, tsn uint32) chunkState {
	_, s, _, _ := q.Chunk(tsn)
	return s
}

func missesOf(q *outstandingQueue, tsn uint32) int {
	_, _, m, _ := q.Chunk(tsn)
	return m
}

func TestOutstandingAdd(t *testing.T) {
	t0 := time.Now()
	q := newOutstandingQueue(math.MaxUint32-1, 3)
	assert.Equal(t, 4, q.Cap(), "rounded up to a power of two")
	assert.Equal(t, uint32(math.MaxUint32-2), q.CumTSN())
	_, ok := q.HighestOutstanding()
	assert.False(t, ok)
	seen := map[int]bool{}
	for i, want := range []uint32{math.MaxUint32 - 1, math.MaxUint32, 0, 1} {
		tsn, ok := q.Add(10*(i+1), t0)
		require.True(t, ok)
		assert.Equal(t, want, tsn)
		idx, ok := q.Index(tsn)
		require.True(t, ok)
		assert.False(t, seen[idx], "distinct slots")
		seen[idx] = true
		size, st, misses, ok := q.Chunk(tsn)
		require.True(t, ok)
		assert.Equal(t, 10*(i+1), size)
		assert.Equal(t, chunkInFlight, st)
		assert.Zero(t, misses)
	}
	assert.True(t, q.Full())
	_, ok = q.Add(1, t0)
	assert.False(t, ok, "full")
	assert.Equal(t, 4, q.Len())
	h, ok := q.HighestOutstanding()
	assert.True(t, ok)
	assert.Equal(t, uint32(1), h)
	assert.Equal(t, uint32(2), q.NextTSN())
	_, ok = q.Index(2)
	assert.False(t, ok, "not sent")
	_, _, _, ok = q.Chunk(math.MaxUint32 - 2)
	assert.False(t, ok, "the initial cum ack point is not outstanding")
	assert.Equal(t, 1, newOutstandingQueue(0, 0).Cap())
}

func TestOutstandingCumAck_RFC9260_6_2_1(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 5, t0)
	r := q.OnSACK(3, nil, nil, 5000, false, t0)
	require.Equal(t, sackProcessed, r.Status)
	assert.Equal(t, ackInfo{CumTSNAck: 3, CumAdvanced: true, AckedBytes: 300, FlightAcked: 300, ARwnd: 5000, LatestRTT: 1, HighestSent: 5}, r.Ack)
	assert.Equal(t, uint32(3), q.CumTSN())
	assert.Equal(t, 2, q.Len())
	_, _, _, ok := q.Chunk(3)
	assert.False(t, ok)
	assert.Equal(t, uint32(5), r.HighestOutstanding)

	// The same cum ack again is processed: nothing new, a_rwnd updated.
	r = q.OnSACK(3, nil, nil, 7000, false, t0)
	assert.Equal(t, sackProcessed, r.Status)
	assert.Equal(t, ackInfo{CumTSNAck: 3, ARwnd: 7000, HighestSent: 5}, r.Ack)

	r = q.OnSACK(5, nil, nil, 5000, false, t0)
	assert.True(t, r.Ack.AllAcked)
	assert.Equal(t, 200, r.Ack.AckedBytes)
	assert.Zero(t, q.Len())
}

func TestOutstandingStaleSACK_RFC9260_6_2_1_Di(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 5, t0)
	q.OnSACK(3, nil, nil, 5000, false, t0)
	r := q.OnSACK(2, gapList{gb(1, 1)}, nil, 9999, false, t0)
	assert.Equal(t, sackStale, r.Status)
	assert.Equal(t, ackInfo{}, r.Ack)
	assert.Equal(t, uint32(3), q.CumTSN())
	assert.Equal(t, chunkInFlight, stateOf(q, 4), "nothing applied")
}

func TestOutstandingInvalidSACK(t *testing.T) {
	t0 := time.Now()
	cases := []struct {
		name string
		cum  uint32
		gaps gapList
	}{
		{"cum ack of a TSN never sent", 11, nil},
		{"cum ack far ahead", 1 << 30, nil},
		{"gap block beyond what was sent", 2, gapList{gb(2, 9)}},
		{"gap block start 0", 2, gapList{gb(0, 1)}},
		{"start after end", 2, gapList{gb(3, 2)}},
		{"overlapping blocks", 2, gapList{gb(2, 4), gb(4, 5)}},
		{"descending blocks", 2, gapList{gb(5, 5), gb(2, 3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := sent(t, 1, 10, t0)
			r := q.OnSACK(tc.cum, tc.gaps, nil, 1, false, t0)
			assert.Equal(t, sackInvalid, r.Status)
			assert.Equal(t, uint32(0), q.CumTSN())
			for tsn := uint32(1); tsn <= 10; tsn++ {
				assert.Equal(t, chunkInFlight, stateOf(q, tsn))
			}
		})
	}
	q := sent(t, 1, 10, t0)
	r := q.OnSACK(2, gapList{gb(2, 3), gb(5, 8)}, nil, 1, false, t0)
	assert.Equal(t, sackProcessed, r.Status, "the last block may end at the highest TSN sent")
}

func TestOutstandingGapAckBlocks_RFC9260_6_2_1(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 10, t0)
	// cum 2; blocks 2-3 and 6: TSNs 4, 5 and 8.
	r := q.OnSACK(2, gapList{gb(2, 3), gb(6, 6)}, nil, 1000, false, t0)
	assert.Equal(t, ackInfo{CumTSNAck: 2, CumAdvanced: true, AckedBytes: 500, FlightAcked: 500, ARwnd: 1000, LatestRTT: 1, HighestSent: 10}, r.Ack)
	for tsn, want := range map[uint32]chunkState{3: chunkInFlight, 4: chunkGapAcked, 5: chunkGapAcked,
		6: chunkInFlight, 7: chunkInFlight, 8: chunkGapAcked, 9: chunkInFlight, 10: chunkInFlight} {
		assert.Equal(t, want, stateOf(q, tsn), "TSN %d", tsn)
	}
	// HTNA is 8: TSNs 3, 6, 7 get a miss indication, 9 and 10 do not (§7.2.4).
	for tsn, want := range map[uint32]int{3: 1, 6: 1, 7: 1, 9: 0, 10: 0} {
		assert.Equal(t, want, missesOf(q, tsn), "TSN %d", tsn)
	}
	// The cum ack catching up removes gap-acked chunks without counting them again.
	r = q.OnSACK(5, gapList{gb(3, 3)}, nil, 1000, false, t0)
	assert.Equal(t, 100, r.Ack.AckedBytes, "only TSN 3 is new; 8 was gap-acked before")
	assert.Equal(t, 100, r.Ack.FlightAcked)
	assert.Equal(t, 5, q.Len())
	assert.Equal(t, chunkGapAcked, stateOf(q, 8))
}

// Three miss indications, each from a SACK that newly acknowledges a TSN
// above the hole, mark the chunk for Fast Retransmit (RFC 9260 §7.2.4).
func TestOutstandingFastRetransmit_RFC9260_7_2_4(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 8, t0) // TSN 2 is lost
	r := q.OnSACK(1, gapList{gb(2, 2)}, nil, 1<<20, false, t0)
	assert.False(t, r.FastRetransmit)
	assert.Equal(t, 1, missesOf(q, 2))
	r = q.OnSACK(1, gapList{gb(2, 3)}, nil, 1<<20, false, t0)
	assert.False(t, r.FastRetransmit)
	assert.Equal(t, 2, missesOf(q, 2))
	r = q.OnSACK(1, gapList{gb(2, 4)}, nil, 1<<20, false, t0)
	require.True(t, r.FastRetransmit)
	assert.Equal(t, 100, r.MarkedBytes, "leaves the flight: Congestion.OnRetransmitMarked")
	assert.Equal(t, uint32(8), r.HighestOutstanding, "the Fast Recovery exit point")
	assert.Equal(t, chunkMarked, stateOf(q, 2))
	assert.Zero(t, missesOf(q, 2), "the counter restarts")
	assert.Equal(t, 1, q.Marked())
	tsn, size, ok := q.FirstMarked()
	require.True(t, ok)
	assert.Equal(t, uint32(2), tsn)
	assert.Equal(t, 100, size)

	// Sent again; a fast-retransmitted chunk is not fast retransmitted
	// twice (step 5), however often it is reported missing.
	size, ok = q.OnRetransmit(2, t0)
	require.True(t, ok)
	assert.Equal(t, 100, size)
	assert.Equal(t, chunkInFlight, stateOf(q, 2))
	for end := uint16(5); end <= 7; end++ {
		r = q.OnSACK(1, gapList{gb(2, end)}, nil, 1<<20, false, t0)
		assert.False(t, r.FastRetransmit)
	}
	assert.Equal(t, chunkInFlight, stateOf(q, 2))
	assert.Zero(t, missesOf(q, 2))
}

// A fast retransmission that is lost again is found by SACKs that newly
// acknowledge chunks first sent after it (countLostRetransmit: the
// detection of FreeBSD's SCTP, the idea of RACK, RFC 8985 §2), not left
// to T3-rtx; SACKs acknowledging only chunks sent before it, or nothing
// new, do not count.
func TestOutstandingLostRetransmit(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 8, t0) // TSN 2 is lost
	for end := uint16(2); end <= 4; end++ {
		q.OnSACK(1, gapList{gb(2, end)}, nil, 1<<20, false, t0)
	}
	require.Equal(t, chunkMarked, stateOf(q, 2))
	_, ok := q.OnRetransmit(2, t0) // sent again while TSN 9 is next
	require.True(t, ok)

	// TSNs 6..8 were sent before the retransmission: no indication.
	for end := uint16(5); end <= 7; end++ {
		r := q.OnSACK(1, gapList{gb(2, end)}, nil, 1<<20, true, t0)
		assert.False(t, r.FastRetransmit)
	}
	assert.Zero(t, missesOf(q, 2))

	// New data after the retransmission, TSNs 9..12; the retransmission
	// is lost too. Each SACK newly acknowledging one of them is an
	// indication; a repeated SACK is not.
	for i := 0; i < 4; i++ {
		_, ok := q.Add(100, t0)
		require.True(t, ok)
	}
	r := q.OnSACK(1, gapList{gb(2, 8)}, nil, 1<<20, true, t0) // TSN 9
	assert.False(t, r.FastRetransmit)
	assert.Equal(t, 1, missesOf(q, 2))
	q.OnSACK(1, gapList{gb(2, 8)}, nil, 1<<20, true, t0)
	assert.Equal(t, 1, missesOf(q, 2), "nothing newly acknowledged")
	q.OnSACK(1, gapList{gb(2, 9)}, nil, 1<<20, true, t0) // TSN 10
	assert.Equal(t, 2, missesOf(q, 2))
	r = q.OnSACK(1, gapList{gb(2, 10)}, nil, 1<<20, true, t0) // TSN 11
	require.True(t, r.FastRetransmit, "the retransmission is lost: sent again before T3-rtx")
	assert.Equal(t, 1, r.LostRetransmits)
	assert.Equal(t, 100, r.MarkedBytes, "it leaves the flight")
	assert.Equal(t, chunkMarked, stateOf(q, 2))
	assert.Equal(t, 1, q.Marked())

	// Sent a third time with TSN 13 next; it arrives and the cum ack
	// moves past everything.
	_, ok = q.OnRetransmit(2, t0)
	require.True(t, ok)
	r = q.OnSACK(12, nil, nil, 1<<20, true, t0)
	assert.True(t, r.Ack.AllAcked)
	assert.Zero(t, r.LostRetransmits)
}

// A SACK that newly acknowledges nothing brings no miss indication: the
// HTNA rule of RFC 9260 §7.2.4.
func TestOutstandingMissIndicationsHTNA_RFC9260_7_2_4(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 6, t0)
	q.OnSACK(0, gapList{gb(2, 2)}, nil, 1<<20, false, t0) // TSN 2 acked, HTNA 2
	assert.Equal(t, 1, missesOf(q, 1), "below the HTNA")
	assert.Zero(t, missesOf(q, 3), "above the HTNA")
	for i := 0; i < 5; i++ {
		r := q.OnSACK(0, gapList{gb(2, 2)}, nil, 1<<20, false, t0)
		assert.False(t, r.FastRetransmit)
	}
	assert.Equal(t, 1, missesOf(q, 1), "repeated SACKs acknowledge nothing new")
	// A SACK acknowledging TSN 4 newly: TSNs 1 and 3 are below the HTNA.
	q.OnSACK(0, gapList{gb(2, 2), gb(4, 4)}, nil, 1<<20, false, t0)
	assert.Equal(t, 2, missesOf(q, 1))
	assert.Equal(t, 1, missesOf(q, 3))
	assert.Zero(t, missesOf(q, 5))
}

// In Fast Recovery, a SACK that advances the Cumulative TSN Ack Point
// gives a miss indication to every TSN it reports missing, above the HTNA
// too (RFC 9260 §7.2.4).
func TestOutstandingMissIndicationsFastRecovery_RFC9260_7_2_4(t *testing.T) {
	t0 := time.Now()
	for _, fr := range []bool{false, true} {
		q := sent(t, 1, 10, t0)
		q.OnSACK(2, gapList{gb(3, 4)}, nil, 1<<20, false, t0) // TSNs 5, 6 gap-acked
		require.Equal(t, 1, missesOf(q, 3))
		require.Equal(t, 1, missesOf(q, 4))
		// Cum ack 3 (HTNA 3), the same block: TSN 4 is reported missing.
		q.OnSACK(3, gapList{gb(2, 3)}, nil, 1<<20, fr, t0)
		if fr {
			assert.Equal(t, 2, missesOf(q, 4), "in Fast Recovery: every TSN reported missing")
		} else {
			assert.Equal(t, 1, missesOf(q, 4), "outside: only below the HTNA")
		}
		assert.Zero(t, missesOf(q, 7), "not reported missing: above the highest block")
	}
	// Without an advance of the cum ack the Fast Recovery rule does not apply.
	q := sent(t, 1, 10, t0)
	q.OnSACK(2, gapList{gb(3, 4)}, nil, 1<<20, false, t0)
	q.OnSACK(2, gapList{gb(3, 4)}, nil, 1<<20, true, t0)
	assert.Equal(t, 1, missesOf(q, 3))
}

func TestOutstandingRenege_RFC9260_6_2_1_Diii(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 6, t0)
	r := q.OnSACK(0, gapList{gb(2, 3)}, nil, 1<<20, false, t0) // TSNs 2, 3 gap-acked
	require.Equal(t, 200, r.Ack.FlightAcked)
	r = q.OnSACK(0, nil, nil, 1<<20, false, t0) // the receiver reneged
	assert.True(t, r.Reneged, "start T3-rtx if it is not running")
	assert.Equal(t, chunkReneged, stateOf(q, 2))
	assert.Equal(t, chunkReneged, stateOf(q, 3))
	assert.Equal(t, 1, missesOf(q, 2), "one miss indication toward Fast Retransmit")
	assert.Zero(t, r.Ack.FlightAcked, "a reneged chunk does not come back into the flight")
	assert.Zero(t, r.Ack.AckedBytes)

	// Reported missing again below a newly acknowledged TSN: it reaches the
	// threshold, and it was not in flight, so MarkedBytes leaves it out.
	r = q.OnSACK(0, gapList{gb(4, 4)}, nil, 1<<20, false, t0)
	assert.Equal(t, 2, missesOf(q, 2))
	r = q.OnSACK(0, gapList{gb(4, 5)}, nil, 1<<20, false, t0)
	assert.True(t, r.FastRetransmit)
	assert.Equal(t, chunkMarked, stateOf(q, 2))
	assert.Equal(t, chunkMarked, stateOf(q, 3))
	assert.Equal(t, 100, r.MarkedBytes, "TSN 1 was in flight; the reneged 2 and 3 were not")
	assert.Equal(t, 3, q.Marked())

	// A reneged chunk acknowledged again is not counted twice.
	q2 := sent(t, 1, 4, t0)
	q2.OnSACK(0, gapList{gb(2, 2)}, nil, 1<<20, false, t0)
	q2.OnSACK(0, nil, nil, 1<<20, false, t0)
	r = q2.OnSACK(2, nil, nil, 1<<20, false, t0)
	assert.Equal(t, 100, r.Ack.AckedBytes, "only TSN 1")
}

func TestOutstandingDuplicateBytes_RFC9260_7_2_2(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 6, t0)
	q.OnSACK(1, gapList{gb(2, 2)}, nil, 1<<20, false, t0) // TSN 3 gap-acked
	r := q.OnSACK(1, gapList{gb(2, 2)}, []uint32{3, 1, 0, 99}, 1<<20, false, t0)
	assert.Equal(t, 100, r.Ack.DuplicateBytes, "only TSN 3 still has a known size")
}

func TestOutstandingRTT_RFC9260_6_3_1_C4_C5(t *testing.T) {
	t0 := time.Now()
	q := newOutstandingQueue(1, 16)
	q.Add(100, t0)                          // TSN 1: timed
	q.Add(100, t0.Add(10*time.Millisecond)) // TSN 2: one measurement per round trip
	r := q.OnSACK(1, nil, nil, 1<<20, false, t0.Add(50*time.Millisecond))
	require.True(t, r.RTTValid)
	assert.Equal(t, 50*time.Millisecond, r.RTT)
	r = q.OnSACK(2, nil, nil, 1<<20, false, t0.Add(60*time.Millisecond))
	assert.False(t, r.RTTValid, "TSN 2 was not timed")

	// Karn: a retransmitted chunk gives no measurement.
	q.Add(100, t0.Add(100*time.Millisecond)) // TSN 3: timed
	require.Equal(t, 100, q.MarkAllForRetransmit())
	_, ok := q.OnRetransmit(3, t0.Add(1100*time.Millisecond))
	require.True(t, ok)
	r = q.OnSACK(3, nil, nil, 1<<20, false, t0.Add(1110*time.Millisecond))
	assert.False(t, r.RTTValid)

	// The next new chunk is timed again; a gap ack measures too.
	q.Add(100, t0.Add(2*time.Second)) // TSN 4
	q.Add(100, t0.Add(2*time.Second)) // TSN 5: not timed
	r = q.OnSACK(3, gapList{gb(1, 1)}, nil, 1<<20, false, t0.Add(2*time.Second+30*time.Millisecond))
	require.True(t, r.RTTValid)
	assert.Equal(t, 30*time.Millisecond, r.RTT)

	// C5: no measurement from a chunk sent before a lower chunk was
	// retransmitted.
	q = newOutstandingQueue(1, 16)
	q.Add(100, t0) // TSN 1: timed
	require.True(t, q.OnSACK(1, nil, nil, 1<<20, false, t0.Add(time.Millisecond)).RTTValid)
	for i := 0; i < 4; i++ {
		q.Add(100, t0) // TSNs 2-5, 2 timed
	}
	q.OnSACK(1, gapList{gb(2, 2)}, nil, 1<<20, false, t0)
	q.OnSACK(1, gapList{gb(2, 3)}, nil, 1<<20, false, t0)
	r = q.OnSACK(1, gapList{gb(2, 4)}, nil, 1<<20, false, t0)
	require.True(t, r.FastRetransmit)
	require.Equal(t, chunkMarked, stateOf(q, 2))
	q.Add(100, t0.Add(time.Second)) // TSN 6: timed, the probe is free again
	_, ok = q.OnRetransmit(2, t0.Add(time.Second+time.Millisecond))
	require.True(t, ok)
	r = q.OnSACK(6, nil, nil, 1<<20, false, t0.Add(2*time.Second))
	assert.False(t, r.RTTValid, "TSN 6 was sent before TSN 2, below it, was retransmitted")
	q.Add(100, t0.Add(3*time.Second)) // TSN 7
	r = q.OnSACK(7, nil, nil, 1<<20, false, t0.Add(3*time.Second+5*time.Millisecond))
	require.True(t, r.RTTValid)
	assert.Equal(t, 5*time.Millisecond, r.RTT)
}

func TestOutstandingT3_RFC9260_6_3_3_E3(t *testing.T) {
	t0 := time.Now()
	q := sent(t, 1, 6, t0)
	q.OnSACK(1, gapList{gb(2, 2)}, nil, 1<<20, false, t0) // TSN 3 gap-acked
	assert.Equal(t, 400, q.MarkAllForRetransmit(), "TSNs 2, 4, 5, 6 were in flight")
	assert.Equal(t, 4, q.Marked())
	assert.Equal(t, chunkGapAcked, stateOf(q, 3), "gap-acked chunks are not retransmitted")
	var got []uint32
	for tsn, _, ok := q.FirstMarked(); ok; tsn, _, ok = q.NextMarked(tsn) {
		got = append(got, tsn)
	}
	assert.Equal(t, []uint32{2, 4, 5, 6}, got, "lowest TSN first")
	_, _, ok := q.NextMarked(100)
	assert.False(t, ok)
	tsn, _, ok := q.NextMarked(0)
	assert.True(t, ok, "from below the cum ack: the first marked")
	assert.Equal(t, uint32(2), tsn)

	_, ok = q.OnRetransmit(3, t0)
	assert.False(t, ok, "not marked")
	_, ok = q.OnRetransmit(77, t0)
	assert.False(t, ok, "not outstanding")
	size, ok := q.OnRetransmit(2, t0)
	assert.True(t, ok)
	assert.Equal(t, 100, size)
	assert.Equal(t, 3, q.Marked())
	// A marked chunk acknowledged before it is sent again counts as newly
	// acknowledged but was not in flight.
	r := q.OnSACK(4, nil, nil, 1<<20, false, t0)
	assert.Equal(t, 200, r.Ack.AckedBytes, "TSNs 2 and 4")
	assert.Equal(t, 100, r.Ack.FlightAcked, "TSN 2 was in flight again")
	assert.Equal(t, 2, q.Marked())
	assert.Zero(t, q.MarkAllForRetransmit(), "nothing more in flight")
	assert.Equal(t, 2, q.Marked())
}

func TestOutstandingStrings(t *testing.T) {
	assert.Equal(t, "in-flight", chunkInFlight.String())
	assert.Equal(t, "gap-acked", chunkGapAcked.String())
	assert.Equal(t, "reneged", chunkReneged.String())
	assert.Equal(t, "marked", chunkMarked.String())
	assert.Equal(t, "ChunkState?", chunkState(0).String())
	assert.Equal(t, "processed", sackProcessed.String())
	assert.Equal(t, "stale", sackStale.String())
	assert.Equal(t, "invalid", sackInvalid.String())
	assert.Equal(t, "SACKStatus?", sackStatus(9).String())
}

// sender wires an outstandingQueue to a Congestion the way an association
// does, for the scenario and fuzz tests.
type sender struct {
	q  *outstandingQueue
	cc congestion
}

func (s *sender) send(size int, now time.Time) bool {
	if !s.cc.CanSend(size) {
		return false
	}
	if _, ok := s.q.Add(size, now); !ok {
		return false
	}
	s.cc.OnSend(size)
	return true
}

func (s *sender) sack(cum uint32, gaps gapList, dups []uint32, aRwnd uint32, now time.Time) sackResult {
	_, fr := s.cc.InFastRecovery()
	r := s.q.OnSACK(cum, gaps, dups, aRwnd, fr, now)
	if r.Status != sackProcessed {
		return r
	}
	s.cc.OnAck(r.Ack)
	if r.FastRetransmit {
		s.cc.OnFastRetransmit(r.HighestOutstanding)
	}
	s.cc.OnRetransmitMarked(r.MarkedBytes)
	return r
}

func (s *sender) t3() {
	s.cc.OnRetransmitMarked(s.q.MarkAllForRetransmit())
	s.cc.OnT3Timeout()
}

func (s *sender) retransmitOne(now time.Time) {
	if tsn, size, ok := s.q.FirstMarked(); ok && s.cc.CanRetransmit(size) {
		n, _ := s.q.OnRetransmit(tsn, now)
		s.cc.OnSend(n)
	}
}

// flightOf is the size of the chunks in flight, which Congestion.Flight
// must always equal.
func flightOf(q *outstandingQueue) (flight, marked int) {
	for tsn := q.CumTSN() + 1; tsn != q.NextTSN(); tsn++ {
		size, st, _, _ := q.Chunk(tsn)
		switch st {
		case chunkInFlight:
			flight += size
		case chunkMarked:
			marked++
		}
	}
	return flight, marked
}

// pathFlightOf is the size of the chunks in flight by the destination
// they were last sent to.
func pathFlightOf(q *outstandingQueue) (pf [pathmgr.DefaultMaxPaths]int) {
	for tsn := q.CumTSN() + 1; tsn != q.NextTSN(); tsn++ {
		if c := &q.ring[q.slot(tsn)]; c.state == chunkInFlight {
			pf[c.path] += int(c.size)
		}
	}
	return pf
}

func TestSenderLossAndRecovery_RFC9260_7_2_4(t *testing.T) {
	t0 := time.Now()
	s := &sender{q: newOutstandingQueue(100, 256), cc: newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 20})}
	n := 0
	for s.send(1000, t0) {
		n++
	}
	require.Equal(t, 4, n, "initial cwnd 4000 with MTU 1000")
	// TSN 100 is lost; 101..103 arrive: three SACKs with rising gap blocks.
	s.sack(99, gapList{gb(2, 2)}, nil, 1<<20, t0)
	s.sack(99, gapList{gb(2, 3)}, nil, 1<<20, t0)
	r := s.sack(99, gapList{gb(2, 4)}, nil, 1<<20, t0)
	require.True(t, r.FastRetransmit)
	exit, fr := s.cc.InFastRecovery()
	require.True(t, fr)
	assert.Equal(t, uint32(103), exit)
	assert.Equal(t, 4000, s.cc.Cwnd(), "max(cwnd/2, 4*MTU)")
	f, _ := flightOf(s.q)
	assert.Equal(t, f, s.cc.Flight())
	assert.Zero(t, s.cc.Flight())
	// Fast Retransmit sends the marked chunk regardless of cwnd.
	tsn, _, ok := s.q.FirstMarked()
	require.True(t, ok)
	size, _ := s.q.OnRetransmit(tsn, t0)
	s.cc.OnSend(size)
	assert.Equal(t, 1000, s.cc.Flight())
	// The retransmission arrives: everything acknowledged, recovery over.
	r = s.sack(103, nil, nil, 1<<20, t0)
	assert.True(t, r.Ack.AllAcked)
	_, fr = s.cc.InFastRecovery()
	assert.False(t, fr)
	assert.Zero(t, s.cc.Flight())
}

func TestOutstandingNoAllocs(t *testing.T) {
	t0 := time.Now()
	s := &sender{q: newOutstandingQueue(1, 1024), cc: newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 30})}
	gaps := gapList{gb(2, 3), gb(5, 5)}
	dups := []uint32{1}
	allocs := testing.AllocsPerRun(100, func() {
		base := s.q.NextTSN() - 1
		for i := 0; i < 6; i++ {
			tsn, _ := s.q.Add(1000, t0)
			s.cc.OnSend(1000)
			_ = tsn
		}
		s.sack(base, gaps, dups, 1<<30, t0)
		s.t3()
		for {
			tsn, size, ok := s.q.FirstMarked()
			if !ok {
				break
			}
			s.q.OnRetransmit(tsn, t0)
			s.cc.OnSend(size)
		}
		s.sack(base+6, nil, nil, 1<<30, t0)
	})
	assert.Zero(t, allocs)
}

// FuzzOutstandingSACK drives a sender (outstandingQueue + Congestion) with
// peer-chosen SACKs: arbitrary Cumulative TSN Acks, Gap Ack Blocks and
// Duplicate TSNs, mixed with sends, T3-rtx expiries and retransmissions.
// It never panics, the cum ack point never moves back, and the flight the
// congestion counts is always the size of the chunks in flight.
func FuzzOutstandingSACK(f *testing.F) {
	f.Add(uint32(1), []byte{0, 0, 0, 0, 1, 2, 1, 2, 1, 4, 3, 4, 2, 0, 5})
	f.Add(uint32(math.MaxUint32-2), []byte{0, 0, 0, 0, 0, 0, 1, 0, 3, 1, 2, 2, 5, 5, 3, 4, 4, 1, 6, 0})
	f.Add(uint32(7), []byte{})
	f.Fuzz(func(t *testing.T, init uint32, ops []byte) {
		t0 := time.Unix(1000, 0)
		s := &sender{q: newOutstandingQueue(init, 32), cc: newCongestion(congestionConfig{MTU: 500, PeerARwnd: 1 << 16})}
		var acked, pflight [pathmgr.DefaultMaxPaths]int
		s.q.pathAcked, s.q.pathFlight = &acked, &pflight
		var gaps gapList
		for i := 0; i < len(ops); i++ {
			now := t0.Add(time.Duration(i) * time.Millisecond)
			prevCum := s.q.CumTSN()
			switch ops[i] % 6 {
			case 0:
				size := 1 + int(ops[i]/6)*12
				if s.cc.CanSend(size) {
					s.send(size, now)
				} else if _, ok := s.q.Add(size, now); ok { // a sender that ignores cwnd
					s.cc.OnSend(size)
				}
			case 1, 2: // SACK: cum relative to the cum point, then gap blocks
				if i+2 >= len(ops) {
					break
				}
				cum := s.q.CumTSN() + uint32(int8(ops[i+1]))
				gaps = gaps[:0]
				nb := int(ops[i+2] % 4)
				i += 2
				for b := 0; b < nb && i+2 < len(ops); b++ {
					gaps = append(gaps, wire.GapAckBlock{Start: uint16(ops[i+1]), End: uint16(ops[i+2])})
					i += 2
				}
				dups := []uint32{cum, cum + 1, cum + uint32(ops[i%len(ops)])}
				r := s.sack(cum, gaps, dups, uint32(ops[i%len(ops)])<<8, now)
				switch r.Status {
				case sackProcessed:
					require.Equal(t, cum, s.q.CumTSN())
					require.GreaterOrEqual(t, r.Ack.AckedBytes, r.Ack.FlightAcked)
					require.GreaterOrEqual(t, r.Ack.FlightAcked, 0)
				case sackStale, sackInvalid:
					require.Equal(t, prevCum, s.q.CumTSN())
				}
			case 3:
				if ops[i]&8 != 0 { // one destination's T3-rtx
					marked, _ := s.q.MarkPathForRetransmit(ops[i] / 16 % 3)
					s.cc.OnRetransmitMarked(marked)
					break
				}
				s.t3()
			case 4:
				s.retransmitOne(now)
			case 5:
				s.cc.OnIdle(time.Duration(ops[i])*time.Millisecond, 10*time.Millisecond)
				s.q.path = ops[i] / 6 % 3 // DATA changes destination
				if ops[i]&1 != 0 {
					s.cc.OnRetransmitMarked(s.q.MarkLargerForRetransmit(200))
				}
			}
			require.True(t, seq.TSNGreaterEq(s.q.CumTSN(), prevCum), "the cum ack point never moves back")
			require.LessOrEqual(t, s.q.Len(), s.q.Cap())
			flight, marked := flightOf(s.q)
			require.Equal(t, flight, s.cc.Flight(), "op %d: Congestion's flight is the chunks in flight", i)
			require.Equal(t, marked, s.q.Marked())
			require.Equal(t, pathFlightOf(s.q), pflight, "op %d: each destination's flight is its chunks in flight", i)
			require.GreaterOrEqual(t, s.cc.Rwnd(), 0)
			require.Positive(t, s.cc.Cwnd())
		}
	})
}

// A multihomed queue remembers where each chunk was last sent, sums a
// SACK's newly acknowledged octets per destination and marks the
// destinations of chunks marked for Fast Retransmit (RFC 9260 §7.2: per
// destination windows); a retransmission moves the chunk to the current
// destination. The record costs the descriptor no space.
func TestOutstandingPerPath_RFC9260_7_2(t *testing.T) {
	assert.Equal(t, uintptr(24), unsafe.Sizeof(outChunk{}), "path fits in the padding")
	t0 := time.Now()
	q := newOutstandingQueue(1, 64)
	var acked [pathmgr.DefaultMaxPaths]int
	q.pathAcked = &acked
	add := func(path uint8, n int) {
		q.path = path
		for range n {
			_, ok := q.Add(100, t0)
			require.True(t, ok)
		}
	}
	add(0, 4) // TSNs 1-4
	add(1, 4) // TSNs 5-8
	// cum 2, gap 7-8: TSNs 3-6 missing, one miss each.
	r := q.OnSACK(2, gapList{gb(5, 6)}, nil, 1<<20, false, t0)
	assert.Equal(t, 400, r.Ack.AckedBytes)
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{200, 200}, acked)
	add(2, 2) // TSNs 9-10
	clear(acked[:])
	q.OnSACK(2, gapList{gb(5, 7)}, nil, 1<<20, false, t0)
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{0, 0, 100}, acked)
	assert.Zero(t, q.pathLost, "two miss indications")
	r = q.OnSACK(2, gapList{gb(5, 8)}, nil, 1<<20, false, t0)
	require.True(t, r.FastRetransmit)
	assert.Equal(t, uint16(0b11), q.pathLost, "TSNs 3-4 were sent to path 0, 5-6 to path 1")
	q.path = 3
	for tsn, _, ok := q.FirstMarked(); ok; tsn, _, ok = q.NextMarked(tsn) {
		_, ok := q.OnRetransmit(tsn, t0)
		require.True(t, ok)
	}
	clear(acked[:])
	r = q.OnSACK(10, nil, nil, 1<<20, false, t0)
	assert.Equal(t, 400, r.Ack.AckedBytes)
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{0, 0, 0, 400}, acked, "retransmitted to path 3; 7-10 acknowledged before")
}

// Each destination's flight (RFC 9260 §6.1 rule B per destination, §7.2)
// follows its chunks: sent there, acknowledged, marked for
// retransmission, and retransmitted to another destination.
func TestOutstandingPathFlight_RFC9260_6_1(t *testing.T) {
	t0 := time.Now()
	q := newOutstandingQueue(1, 64)
	var acked, flight [pathmgr.DefaultMaxPaths]int
	q.pathAcked, q.pathFlight = &acked, &flight
	for i := range 8 { // TSNs 1-4 to path 0, 5-8 to path 1
		q.path = uint8(i / 4)
		_, ok := q.Add(100, t0)
		require.True(t, ok)
	}
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{400, 400}, flight)
	q.OnSACK(2, gapList{gb(4, 4)}, nil, 1<<20, false, t0) // 1, 2 and 6 acknowledged
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{200, 300}, flight)
	assert.Equal(t, 300, q.MarkAllForRetransmit()-200, "the T3-rtx expiry takes both paths' flight")
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{}, flight)
	q.path = 1
	for tsn, _, ok := q.FirstMarked(); ok; tsn, _, ok = q.NextMarked(tsn) {
		_, ok := q.OnRetransmit(tsn, t0)
		require.True(t, ok)
	}
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{0, 500}, flight, "retransmitted to path 1, path 0's chunks count there")
	q.OnSACK(8, nil, nil, 1<<20, false, t0)
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{}, flight)
	assert.Equal(t, pathFlightOf(q), flight)
}

// Fast Recovery per destination (RFC 9260 §7.2.4 with §7.2): a SACK that
// advances the Cumulative TSN Ack gives a miss indication to every TSN
// it reports missing only if the chunk's destination is in Fast
// Recovery; the others count misses below the HTNA as outside it.
func TestOutstandingPathFastRecovery_RFC9260_7_2_4(t *testing.T) {
	t0 := time.Now()
	setup := func() *outstandingQueue {
		q := newOutstandingQueue(1, 64)
		var acked, flight [pathmgr.DefaultMaxPaths]int
		q.pathAcked, q.pathFlight = &acked, &flight
		for i := range 8 { // TSNs 1-4 to path 0, 5-8 to path 1
			q.path = uint8(i / 4)
			_, ok := q.Add(100, t0)
			require.True(t, ok)
		}
		q.OnSACK(0, gapList{gb(8, 8)}, nil, 1<<20, false, t0) // 1-7 one miss each
		return q
	}
	misses := func(q *outstandingQueue) (m []int) {
		for tsn := uint32(2); tsn <= 7; tsn++ {
			_, _, n, _ := q.Chunk(tsn)
			m = append(m, n)
		}
		return m
	}
	// TSN 1 acknowledged, 8 still gap-acked: the HTNA is 1.
	q := setup()
	q.pathFR = 1 << 0
	q.OnSACK(1, gapList{gb(7, 7)}, nil, 1<<20, false, t0)
	assert.Equal(t, []int{2, 2, 2, 1, 1, 1}, misses(q), "path 0's chunks (2-4) in Fast Recovery, path 1's not")
	q = setup()
	q.OnSACK(1, gapList{gb(7, 7)}, nil, 1<<20, false, t0)
	assert.Equal(t, []int{1, 1, 1, 1, 1, 1}, misses(q), "no destination in Fast Recovery: none below the HTNA")
	q = setup()
	q.OnSACK(1, gapList{gb(7, 7)}, nil, 1<<20, true, t0)
	assert.Equal(t, []int{2, 2, 2, 2, 2, 2}, misses(q), "the association's Fast Recovery (single path)")
}

// A T3-rtx expiry of one destination (RFC 9260 §6.3.2: a timer per
// destination, §6.3.3 E3) marks only the chunks last sent there, in
// flight or reneged, not those acknowledged by a Gap Ack Block; the RTT
// measurement is dropped only if a marked chunk is at or below it.
func TestOutstandingMarkPath_RFC9260_6_3_3(t *testing.T) {
	t0 := time.Now()
	q := newOutstandingQueue(1, 64)
	var acked, flight [pathmgr.DefaultMaxPaths]int
	q.pathAcked, q.pathFlight = &acked, &flight
	for i := range 8 { // TSNs 1-4 to path 1, 5-8 to path 0 (1 timed)
		q.path = uint8(1 - i/4)
		_, ok := q.Add(100, t0)
		require.True(t, ok)
	}
	q.OnSACK(0, gapList{gb(2, 2)}, nil, 1<<20, false, t0) // TSN 2 gap-acked
	inFlight, n := q.MarkPathForRetransmit(0)
	assert.Equal(t, 400, inFlight)
	assert.Equal(t, 4, n)
	assert.Equal(t, [pathmgr.DefaultMaxPaths]int{0, 300}, flight, "path 1's chunks stay in flight")
	assert.True(t, q.timed, "the RTT probe (TSN 1, path 1) is below every marked chunk")
	for tsn := uint32(1); tsn <= 8; tsn++ {
		_, st, _, _ := q.Chunk(tsn)
		want := chunkInFlight
		switch {
		case tsn == 2:
			want = chunkGapAcked
		case tsn >= 5:
			want = chunkMarked
		}
		assert.Equal(t, want, st, "TSN %d", tsn)
	}
	inFlight, n = q.MarkPathForRetransmit(0)
	assert.Zero(t, inFlight+n, "nothing more of path 0 to mark")
	inFlight, n = q.MarkPathForRetransmit(1)
	assert.Equal(t, 300, inFlight)
	assert.Equal(t, 3, n)
	assert.False(t, q.timed, "Karn: the probe is marked")
	assert.Equal(t, 7, q.Marked())
}

// An RTT measurement names the destination its timed chunk went to, so a
// multihomed association times each path with its own samples (RFC 9260
// §6.3.1, one RTO per destination).
func TestOutstandingRTTPath_RFC9260_6_3_1(t *testing.T) {
	t0 := time.Now()
	q := newOutstandingQueue(1, 64)
	q.path = 2
	_, ok := q.Add(100, t0) // TSN 1, timed
	require.True(t, ok)
	q.path = 0
	_, ok = q.Add(100, t0) // TSN 2
	require.True(t, ok)
	r := q.OnSACK(2, nil, nil, 1<<20, false, t0.Add(30*time.Millisecond))
	require.True(t, r.RTTValid)
	assert.Equal(t, 30*time.Millisecond, r.RTT)
	assert.Equal(t, uint8(2), r.RTTPath, "TSN 1 went to path 2")
	_, ok = q.Add(100, t0) // TSN 3 on path 0, timed
	require.True(t, ok)
	r = q.OnSACK(3, nil, nil, 1<<20, false, t0.Add(40*time.Millisecond))
	require.True(t, r.RTTValid)
	assert.Equal(t, uint8(0), r.RTTPath)
}
