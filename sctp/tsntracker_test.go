package sctp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// gb is a Gap Ack Block: offsets from the Cumulative TSN Ack (RFC 9260 §3.3.4).
func gb(start, end uint16) wire.GapAckBlock { return wire.GapAckBlock{Start: start, End: end} }

func observeAll(t *testing.T, r *recvTracker, want recvResult, tsns ...uint32) {
	t.Helper()
	for _, tsn := range tsns {
		require.Equal(t, want, r.Observe(tsn), "TSN %d", tsn)
	}
}

func gaps(r *recvTracker) []wire.GapAckBlock {
	return r.AppendGapBlocks(nil, math.MaxInt)
}

func TestRecvTrackerInOrder_RFC9260_6_2(t *testing.T) {
	r := newRecvTracker(100, recvTrackerConfig{})
	assert.Equal(t, uint32(99), r.CumTSN(), "Last Rcvd TSN starts at the initial TSN - 1 (RFC 9260 §14.2)")
	observeAll(t, r, recvNew, 100, 101, 102, 103, 104)
	assert.Equal(t, uint32(104), r.CumTSN())
	assert.Equal(t, uint32(104), r.Highest())
	assert.False(t, r.HasGaps())
	assert.Empty(t, gaps(r))
	assert.Equal(t, defaultRecvWindow, r.Window())
}

func TestRecvTrackerGapAckBlocks_RFC9260_3_3_4(t *testing.T) {
	cases := []struct {
		name     string
		init     uint32
		recv     []uint32
		wantCum  uint32
		wantGaps []wire.GapAckBlock
	}{
		{"one hole", 1, []uint32{1, 2, 4, 5}, 2, []wire.GapAckBlock{gb(2, 3)}},
		{"cum 12, then 14-15 and 17", 1, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 17},
			12, []wire.GapAckBlock{gb(2, 3), gb(5, 5)}},
		{"out of order arrival", 10, []uint32{15, 13, 11, 10, 16, 20},
			11, []wire.GapAckBlock{gb(2, 2), gb(4, 5), gb(9, 9)}},
		{"first TSN lost", 50, []uint32{51, 52, 53}, 49, []wire.GapAckBlock{gb(2, 4)}},
		{"across the TSN wrap", math.MaxUint32 - 2, []uint32{math.MaxUint32 - 2, math.MaxUint32, 0, 2},
			math.MaxUint32 - 2, []wire.GapAckBlock{gb(2, 3), gb(5, 5)}},
		{"holes across 64-bit words", 1, []uint32{1, 63, 64, 65, 66, 127, 128, 200},
			1, []wire.GapAckBlock{gb(62, 65), gb(126, 127), gb(199, 199)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecvTracker(tc.init, recvTrackerConfig{})
			observeAll(t, r, recvNew, tc.recv...)
			assert.Equal(t, tc.wantCum, r.CumTSN())
			assert.Equal(t, tc.wantGaps, gaps(r))
			assert.True(t, r.HasGaps())
			for _, tsn := range tc.recv {
				assert.True(t, r.Received(tsn), "TSN %d", tsn)
			}
		})
	}
}

func TestRecvTrackerGapFilled_RFC9260_6_7(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{})
	observeAll(t, r, recvNew, 1, 3, 4, 6)
	assert.Equal(t, []wire.GapAckBlock{gb(2, 3), gb(5, 5)}, gaps(r))
	assert.Equal(t, 3, r.Held())
	observeAll(t, r, recvNew, 2)
	assert.Equal(t, uint32(4), r.CumTSN())
	assert.Equal(t, []wire.GapAckBlock{gb(2, 2)}, gaps(r), "offsets follow the new cum ack")
	observeAll(t, r, recvNew, 5)
	assert.Equal(t, uint32(6), r.CumTSN())
	assert.False(t, r.HasGaps())
	assert.Zero(t, r.Held())
}

func TestRecvTrackerMaxGapBlocks(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{})
	for tsn := uint32(2); tsn < 40; tsn += 2 {
		r.Observe(tsn)
	}
	assert.Equal(t, []wire.GapAckBlock{gb(2, 2), gb(4, 4), gb(6, 6)}, r.AppendGapBlocks(nil, 3))
	assert.Len(t, gaps(r), 19)
	assert.Empty(t, r.AppendGapBlocks(nil, 0))
	prefix := []wire.GapAckBlock{gb(9, 9)}
	assert.Equal(t, []wire.GapAckBlock{gb(9, 9), gb(2, 2)}, r.AppendGapBlocks(prefix, 1), "appends")
}

func TestRecvTrackerDuplicates_RFC9260_6_2(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{MaxDuplicates: 3})
	observeAll(t, r, recvNew, 1, 2, 3, 5)
	observeAll(t, r, recvDuplicate, 2, 5, 3, 1, 0, math.MaxUint32-5)
	// Each arrival is listed, up to the cap (RFC 9260 §3.3.4).
	assert.Equal(t, []uint32{2, 5, 3}, r.AppendDuplicates(nil))
	assert.Equal(t, 3, r.DuplicatesNotReported())
	assert.Equal(t, []uint32{7, 2, 5, 3}, r.AppendDuplicates([]uint32{7}))
	r.SACKSent()
	assert.Empty(t, r.AppendDuplicates(nil), "reported once: the list starts over after a SACK")
	assert.Zero(t, r.DuplicatesNotReported())
	observeAll(t, r, recvDuplicate, 3, 3)
	assert.Equal(t, []uint32{3, 3}, r.AppendDuplicates(nil))
}

func TestRecvTrackerWindow_RFC9260_6_2(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{Window: 100})
	assert.Equal(t, 100, r.Window())
	assert.Equal(t, recvOutOfWindow, r.Observe(101), "cum 0: offset 101 is beyond a window of 100")
	assert.Equal(t, recvNew, r.Observe(100))
	assert.Equal(t, recvOutOfWindow, r.Observe(1<<31), "exactly half the serial space away: undefined, dropped")
	assert.Equal(t, recvOutOfWindow, r.Observe(1<<20))
	assert.Equal(t, uint64(3), r.Dropped())
	assert.False(t, r.Received(101))
	assert.False(t, r.Received(1<<31))
	assert.Equal(t, []wire.GapAckBlock{gb(100, 100)}, gaps(r))
	// The window moves with the cum ack.
	for tsn := uint32(1); tsn <= 99; tsn++ {
		require.Equal(t, recvNew, r.Observe(tsn))
	}
	assert.Equal(t, uint32(100), r.CumTSN())
	assert.Equal(t, recvNew, r.Observe(200))
	assert.Equal(t, []wire.GapAckBlock{gb(100, 100)}, gaps(r))

	big := newRecvTracker(1, recvTrackerConfig{Window: 1 << 20})
	assert.Equal(t, maxRecvWindow, big.Window(), "16-bit Gap Ack Block offsets bound the window")
	assert.Equal(t, recvNew, big.Observe(maxRecvWindow))
	assert.Equal(t, recvOutOfWindow, big.Observe(maxRecvWindow+1))
	assert.Equal(t, []wire.GapAckBlock{gb(65535, 65535)}, gaps(big))
}

func TestRecvTrackerRenege_RFC9260_6_2(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{})
	observeAll(t, r, recvNew, 1, 2, 3, 5, 6, 9)
	assert.False(t, r.Renege(3), "at or below the cum ack: cannot be reneged")
	assert.False(t, r.Renege(4), "not held")
	assert.False(t, r.Renege(1<<30), "outside the window")
	assert.True(t, r.Renege(9))
	assert.Equal(t, uint32(6), r.Highest())
	assert.Equal(t, []wire.GapAckBlock{gb(2, 3)}, gaps(r))
	assert.True(t, r.Renege(5))
	assert.Equal(t, uint32(6), r.Highest())
	assert.True(t, r.Renege(6))
	assert.Equal(t, uint32(3), r.Highest())
	assert.False(t, r.HasGaps())
	assert.Equal(t, recvNew, r.Observe(6), "a reneged TSN is new again")
}

func TestRecvTrackerDelayedAck_RFC9260_6_2(t *testing.T) {
	t0 := time.Now()
	type pkt struct {
		tsns      []uint32
		immediate bool // I bit
		wantDue   bool
	}
	cases := []struct {
		name string
		pkts []pkt
	}{
		{"first DATA of the association: SACK at once (RFC 9260 §5.1)", []pkt{{[]uint32{1}, false, true}}},
		{"in order: every second packet", []pkt{{[]uint32{2}, false, false}, {[]uint32{3, 4}, false, true}}},
		{"duplicates only: at once", []pkt{{[]uint32{1}, false, true}}},
		{"new and duplicate: at once", []pkt{{[]uint32{1, 2}, false, true}}},
		{"a gap: at once, and for every packet until filled (§6.7)", []pkt{
			{[]uint32{3}, false, true}, {[]uint32{4}, false, true}, {[]uint32{2}, false, true}, {[]uint32{5}, false, false}}},
		{"I bit: at once", []pkt{{[]uint32{2}, true, true}}},
		{"dropped beyond the window: at once", []pkt{{[]uint32{100000}, false, true}}},
		{"a packet without DATA changes nothing", []pkt{{nil, false, false}, {[]uint32{2}, false, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecvTracker(1, recvTrackerConfig{Window: 1000})
			if tc.name[:5] != "first" {
				r.Observe(1)
				r.EndPacket(t0)
				require.True(t, r.SACKDue(t0))
				r.SACKSent()
			}
			for i, p := range tc.pkts {
				for _, tsn := range p.tsns {
					r.Observe(tsn)
				}
				if p.immediate {
					r.RequestImmediate()
				}
				r.EndPacket(t0)
				assert.Equal(t, p.wantDue, r.SACKDue(t0), "packet %d", i)
				if p.wantDue {
					r.SACKSent()
				}
			}
		})
	}
}

func TestRecvTrackerDelayedAckDeadline_RFC9260_6_2(t *testing.T) {
	t0 := time.Now()
	r := newRecvTracker(1, recvTrackerConfig{})
	r.Observe(1)
	r.EndPacket(t0)
	r.SACKSent()
	_, ok := r.SACKDeadline()
	assert.False(t, ok)

	r.Observe(2)
	r.EndPacket(t0)
	d, ok := r.SACKDeadline()
	require.True(t, ok)
	assert.Equal(t, t0.Add(200*time.Millisecond), d, "within 200 ms of unacknowledged DATA")
	assert.False(t, r.SACKDue(t0.Add(199*time.Millisecond)))
	assert.True(t, r.SACKDue(t0.Add(200*time.Millisecond)))

	// A packet without DATA neither starts nor moves the deadline.
	r.EndPacket(t0.Add(50 * time.Millisecond))
	d, _ = r.SACKDeadline()
	assert.Equal(t, t0.Add(200*time.Millisecond), d)
	r.SACKSent()
	_, ok = r.SACKDeadline()
	assert.False(t, ok)
	assert.False(t, r.SACKDue(t0.Add(time.Hour)))
	r.EndPacket(t0)
	_, ok = r.SACKDeadline()
	assert.False(t, ok)

	for _, tc := range []struct{ cfg, want time.Duration }{
		{0, 200 * time.Millisecond}, {10 * time.Millisecond, 10 * time.Millisecond}, {time.Second, 500 * time.Millisecond},
	} {
		r := newRecvTracker(1, recvTrackerConfig{SACKDelay: tc.cfg})
		r.Observe(1)
		r.EndPacket(t0)
		r.SACKSent()
		r.Observe(2)
		r.EndPacket(t0)
		d, _ := r.SACKDeadline()
		assert.Equal(t, t0.Add(tc.want), d, "SACKDelay %v (at most 500 ms, RFC 9260 §6.2)", tc.cfg)
	}
}

func TestRecvResultString(t *testing.T) {
	assert.Equal(t, "new", recvNew.String())
	assert.Equal(t, "duplicate", recvDuplicate.String())
	assert.Equal(t, "out-of-window", recvOutOfWindow.String())
	assert.Equal(t, "RecvResult?", recvResult(9).String())
}

func TestRecvTrackerNoAllocs(t *testing.T) {
	r := newRecvTracker(1, recvTrackerConfig{Window: 4096})
	gapBuf := make([]wire.GapAckBlock, 0, 64)
	dupBuf := make([]uint32, 0, defaultMaxDuplicates)
	tsn := uint32(1)
	now := time.Now()
	allocs := testing.AllocsPerRun(200, func() {
		r.Observe(tsn + 1) // a hole at tsn
		r.Observe(tsn + 1) // a duplicate
		r.Observe(tsn)
		r.EndPacket(now)
		_ = r.SACKDue(now)
		gapBuf = r.AppendGapBlocks(gapBuf[:0], 64)
		dupBuf = r.AppendDuplicates(dupBuf[:0])
		r.SACKSent()
		tsn += 2
	})
	assert.Zero(t, allocs)
}

// recvModel is the obvious, unbounded implementation recvTracker is checked
// against: TSNs are unwrapped to 64 bits.
type recvModel struct {
	init    uint32
	cum     int64 // unwrapped offset from init-1 (0: nothing received)
	held    map[int64]bool
	window  int64
	maxDups int
	dups    []uint32
}

func (m *recvModel) unwrap(tsn uint32) int64 {
	// The TSN nearest the current cum ack (ties go to out-of-window).
	base := m.init - 1 + uint32(m.cum)
	return m.cum + int64(int32(tsn-base))
}

func (m *recvModel) observe(tsn uint32) recvResult {
	base := m.init - 1 + uint32(m.cum)
	if tsn-base == 1<<31 {
		return recvOutOfWindow
	}
	u := m.unwrap(tsn)
	if u <= m.cum || m.held[u] {
		if len(m.dups) < m.maxDups {
			m.dups = append(m.dups, tsn)
		}
		return recvDuplicate
	}
	if u-m.cum > m.window {
		return recvOutOfWindow
	}
	m.held[u] = true
	for m.held[m.cum+1] {
		delete(m.held, m.cum+1)
		m.cum++
	}
	return recvNew
}

func (m *recvModel) gapBlocks() []wire.GapAckBlock {
	var keys []int64
	for k := range m.held {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []wire.GapAckBlock
	for _, k := range keys {
		o := uint16(k - m.cum)
		if n := len(out); n > 0 && out[n-1].End+1 == o {
			out[n-1].End = o
		} else {
			out = append(out, wire.GapAckBlock{Start: o, End: o})
		}
	}
	return out
}

func checkRecvAgainstModel(t *testing.T, r *recvTracker, m *recvModel) {
	t.Helper()
	require.Equal(t, m.init-1+uint32(m.cum), r.CumTSN(), "cum")
	require.Equal(t, len(m.held), r.Held(), "held")
	require.Equal(t, m.gapBlocks(), gaps(r), "gap blocks")
	require.Equal(t, append([]uint32(nil), m.dups...), r.AppendDuplicates(nil), "duplicates")
	want := r.CumTSN()
	for k := range m.held {
		if tsn := m.init - 1 + uint32(k); seq.TSNGreater(tsn, want) {
			want = tsn
		}
	}
	require.Equal(t, want, r.Highest(), "highest")
	for _, b := range gaps(r) {
		require.GreaterOrEqual(t, b.Start, uint16(2), "cum+1 is never in a block")
		require.LessOrEqual(t, b.Start, b.End)
		require.LessOrEqual(t, int(b.End), r.Window())
	}
}

func TestRecvTrackerRandomAgainstModel(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		init := rng.Uint32()
		if seed%4 == 0 {
			init = math.MaxUint32 - 50
		}
		window := 1 + rng.IntN(300)
		r := newRecvTracker(init, recvTrackerConfig{Window: window, MaxDuplicates: 8})
		m := &recvModel{init: init, held: map[int64]bool{}, window: int64(window), maxDups: 8}
		for i := 0; i < 3000; i++ {
			base := init - 1 + uint32(m.cum)
			tsn := base + uint32(rng.IntN(window+40)) - 20
			require.Equal(t, m.observe(tsn), r.Observe(tsn), "seed %d step %d TSN %d", seed, i, tsn)
			if i%7 == 0 {
				checkRecvAgainstModel(t, r, m)
				r.SACKSent()
				m.dups = m.dups[:0]
			}
		}
	}
}

// FuzzRecvTracker feeds peer-chosen TSNs (and reneging) to a recvTracker
// and checks it against the unbounded model after every step: same
// classification, cum ack, Gap Ack Blocks, duplicates and highest TSN.
func FuzzRecvTracker(f *testing.F) {
	f.Add(uint32(1), uint8(50), []byte{20, 21, 23, 22, 0, 1, 255, 128, 64})
	f.Add(uint32(math.MaxUint32-3), uint8(10), []byte{21, 25, 30, 19, 20, 21, 22, 23, 24})
	f.Add(uint32(0), uint8(255), []byte{})
	f.Fuzz(func(t *testing.T, init uint32, win uint8, ops []byte) {
		window := int(win) + 1
		r := newRecvTracker(init, recvTrackerConfig{Window: window, MaxDuplicates: 4})
		m := &recvModel{init: init, held: map[int64]bool{}, window: int64(window), maxDups: 4}
		now := time.Unix(0, 0)
		for i, op := range ops {
			base := init - 1 + uint32(m.cum)
			switch {
			case op == 255: // renege the highest held TSN
				h := r.Highest()
				if h != r.CumTSN() {
					require.True(t, r.Renege(h))
					delete(m.held, m.unwrap(h))
				} else {
					require.False(t, r.Renege(h+1))
				}
			case op == 254:
				r.EndPacket(now)
				if r.SACKDue(now) {
					r.SACKSent()
					m.dups = m.dups[:0]
				}
				now = now.Add(time.Millisecond)
			case op >= 240: // far away: across half the serial space
				tsn := base + 1<<31 + uint32(op-247)
				require.Equal(t, m.observe(tsn), r.Observe(tsn), "op %d", i)
			default:
				tsn := base + uint32(op) - 20
				require.Equal(t, m.observe(tsn), r.Observe(tsn), "op %d TSN %d", i, tsn)
			}
			checkRecvAgainstModel(t, r, m)
		}
	})
}
