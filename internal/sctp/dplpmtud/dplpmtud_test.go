package dplpmtud

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePath answers probes up to mtu (0: black hole for everything).
type fakePath struct {
	t   *testing.T
	p   *Prober
	now time.Time
	mtu int
}

// run drives the prober for d of fake time, acking probes that fit.
func (f *fakePath) run(d time.Duration) {
	end := f.now.Add(d)
	for f.now.Before(end) {
		if size, ok := f.p.Next(f.now); ok {
			if size <= f.mtu {
				f.now = f.now.Add(time.Millisecond) // RTT
				f.p.Acked(size, f.now)
				continue
			}
		}
		next := f.p.Deadline()
		if !next.After(f.now) {
			next = f.now.Add(time.Millisecond)
		}
		if next.After(end) {
			next = end
		}
		f.now = next
	}
}

func newFake(t *testing.T, cfg ProberConfig, mtu int) *fakePath {
	now := time.Unix(1000, 0)
	return &fakePath{t: t, p: NewProber(cfg, now), now: now, mtu: mtu}
}

// TestProberSearch_RFC8899Sec5_2: BASE is confirmed, the search climbs the
// candidate table and completes at the path MTU (or MAX_PLPMTU).
func TestProberSearch_RFC8899Sec5_2(t *testing.T) {
	for _, tc := range []struct{ path, max, want int }{
		{1500, 9000, 1500},
		{1280, 9000, 1280},
		{9000, 8220, 8220},
		{1350, 9000, 1280}, // between table entries: the entry below
		{1200, 9000, 1200},
	} {
		f := newFake(t, ProberConfig{Max: tc.max}, tc.path)
		assert.Equal(t, StateBase, f.p.State())
		f.run(10 * time.Second)
		assert.Equal(t, tc.want, f.p.PLPMTU(), "path %d", tc.path)
		assert.Equal(t, StateSearchComplete, f.p.State())
	}
}

// TestProberBlackHole_RFC8899Sec4_3: when the path shrinks silently, the
// confirmation of the PLPMTU fails MAX_PROBES times, the PLPMTU falls to
// BASE_PLPMTU and the search finds the new size; the time is bounded by
// CONFIRMATION_TIMER + 2·MAX_PROBES·PROBE_TIMER plus RTTs.
func TestProberBlackHole_RFC8899Sec4_3(t *testing.T) {
	cfg := ProberConfig{Max: 9000, ConfirmInterval: 2 * time.Second}
	f := newFake(t, cfg, 9000)
	f.run(time.Second)
	require.Equal(t, 9000, f.p.PLPMTU())
	f.mtu = 1280
	t0 := f.now
	var tBase time.Duration
	for f.p.PLPMTU() != 1280 || f.p.State() != StateSearchComplete {
		f.run(10 * time.Millisecond)
		if tBase == 0 && f.p.PLPMTU() <= 1280 {
			tBase = f.now.Sub(t0)
		}
		require.Less(t, f.now.Sub(t0), 30*time.Second)
	}
	total := f.now.Sub(t0)
	assert.LessOrEqual(t, tBase, 2*time.Second+3*time.Second+100*time.Millisecond)
	assert.LessOrEqual(t, total, 2*time.Second+6*time.Second+100*time.Millisecond)
	assert.Equal(t, uint64(6), f.p.Lost(), "3 lost confirmations + 3 lost 1400 probes")
}

// TestProberSuspectLoss: a loss signal confirms the PLPMTU at once instead
// of after CONFIRMATION_TIMER.
func TestProberSuspectLoss(t *testing.T) {
	f := newFake(t, ProberConfig{Max: 1500, ConfirmInterval: time.Hour}, 1500)
	f.run(time.Second)
	require.Equal(t, StateSearchComplete, f.p.State())
	f.mtu = 1280
	f.p.SuspectLoss(f.now)
	f.run(5 * time.Second)
	assert.Equal(t, 1280, f.p.PLPMTU())
}

// TestProberPacketTooBig_RFC8899Sec4_6_2: a PTB below the PLPMTU lowers it
// at once; one above is ignored; one below the base enters ERROR.
func TestProberPacketTooBig_RFC8899Sec4_6_2(t *testing.T) {
	f := newFake(t, ProberConfig{Max: 9000}, 9000)
	f.run(time.Second)
	require.Equal(t, 9000, f.p.PLPMTU())
	assert.False(t, f.p.PacketTooBig(9500, f.now))
	assert.True(t, f.p.PacketTooBig(1280, f.now))
	assert.Equal(t, 1280, f.p.PLPMTU())
	assert.Equal(t, StateSearchComplete, f.p.State())
	f.mtu = 1280
	f.run(time.Second)
	assert.Equal(t, 1280, f.p.PLPMTU(), "no probe above the PTB")
	assert.True(t, f.p.PacketTooBig(1000, f.now))
	assert.Equal(t, StateError, f.p.State())
	assert.Equal(t, 1200, f.p.PLPMTU())
	assert.False(t, f.p.PacketTooBig(0, f.now))
}

// TestProberRaise_RFC8899Sec5_1_1: after PMTU_RAISE_TIMER the search runs
// again and finds a larger path.
func TestProberRaise_RFC8899Sec5_1_1(t *testing.T) {
	f := newFake(t, ProberConfig{Max: 9000, RaiseInterval: 10 * time.Second, ConfirmInterval: time.Hour}, 1500)
	f.run(5 * time.Second)
	require.Equal(t, 1500, f.p.PLPMTU())
	f.mtu = 9000
	f.run(20 * time.Second)
	assert.Equal(t, 9000, f.p.PLPMTU())
}

// TestProberError_RFC8899Sec5_4: a path below BASE_PLPMTU leaves the
// prober in ERROR at the base, retrying.
func TestProberError_RFC8899Sec5_4(t *testing.T) {
	f := newFake(t, ProberConfig{Max: 9000}, 1000)
	f.run(10 * time.Second)
	assert.Equal(t, StateError, f.p.State())
	assert.Equal(t, 1200, f.p.PLPMTU())
	f.mtu = 1500
	f.run(10 * time.Second)
	assert.Equal(t, 1500, f.p.PLPMTU())
	assert.Equal(t, "search-complete", f.p.State().String())
	assert.False(t, f.p.Acked(1234, f.now), "an unexpected ack changes nothing")
}

// TestProberMaxFirst_RFC8899Sec5_3_2: with MaxFirst a path as wide as Max
// is found with two probes (BASE, Max); a narrower one costs one lost
// probe of Max (§5.3.1: after a PROBE_TIMER expiry a probe of any other
// size may follow), then the table is walked as without it.
func TestProberMaxFirst_RFC8899Sec5_3_2(t *testing.T) {
	for _, tc := range []struct{ path, max, want, maxProbes int }{
		{9000, 9000, 9000, 2},
		{1500, 1500, 1500, 2},
		{1280, 9000, 1280, 0},
		{1350, 9000, 1280, 0},
	} {
		f := newFake(t, ProberConfig{Max: tc.max, MaxFirst: true}, tc.path)
		f.run(30 * time.Second)
		assert.Equal(t, tc.want, f.p.PLPMTU(), "path %d", tc.path)
		assert.Equal(t, StateSearchComplete, f.p.State(), "path %d", tc.path)
		if tc.path == tc.max {
			assert.Zero(t, f.p.Lost(), "path %d: no probe lost", tc.path)
		} else {
			assert.Equal(t, 1+uint64(DefaultMaxProbes), f.p.Lost(),
				"path %d: one probe of Max, then MAX_PROBES of the first table entry above the path", tc.path)
		}
	}
	// Two round trips of 1 ms: MaxFirst is done, the table walk is not
	// (it takes one round trip per entry up to 9000).
	f := newFake(t, ProberConfig{Max: 9000}, 9000)
	f.run(3 * time.Millisecond)
	g := newFake(t, ProberConfig{Max: 9000, MaxFirst: true}, 9000)
	g.run(3 * time.Millisecond)
	assert.Equal(t, StateSearching, f.p.State())
	assert.Less(t, f.p.PLPMTU(), 9000)
	assert.Equal(t, StateSearchComplete, g.p.State())
	assert.Equal(t, 9000, g.p.PLPMTU())
}

// TestProberPeerNarrowerThanRoute_RFC8899Sec5_3_1: the route says 65535
// (loopback) but the peer takes at most 8220-octet packets (pion reads
// 8 KiB): the lost probe of Max costs one PROBE_TIMER, the table walk
// reaches 8220 one round trip per entry, and the search completes after
// MAX_PROBES lost probes of 9000 without ever probing Max again.
func TestProberPeerNarrowerThanRoute_RFC8899Sec5_3_1(t *testing.T) {
	f := newFake(t, ProberConfig{Max: 65535, MaxFirst: true}, 8220)
	t0 := f.now
	for f.p.PLPMTU() != 8220 {
		f.run(time.Millisecond)
		require.Less(t, f.now.Sub(t0), 10*time.Second)
	}
	assert.Less(t, f.now.Sub(t0), DefaultProbeTimeout+50*time.Millisecond, "one PROBE_TIMER, then round trips")
	assert.Equal(t, uint64(1), f.p.Lost())
	f.run(10 * time.Second)
	assert.Equal(t, StateSearchComplete, f.p.State())
	assert.Equal(t, 8220, f.p.PLPMTU())
	assert.Equal(t, 1+uint64(DefaultMaxProbes), f.p.Lost(), "Max once, 9000 MAX_PROBES times")
}

// TestProberCompletesOnLastAck: the ack of the last size the search can
// try enters SEARCH_COMPLETE at once, so that a reader who sees the new
// PLPMTU also sees the state (no Next needed in between).
func TestProberCompletesOnLastAck(t *testing.T) {
	now := time.Unix(1000, 0)
	p := NewProber(ProberConfig{Max: 9000, MaxFirst: true}, now)
	size, ok := p.Next(now)
	require.True(t, ok)
	require.Equal(t, DefaultBasePLPMTU, size)
	p.Acked(size, now)
	size, ok = p.Next(now)
	require.True(t, ok)
	require.Equal(t, 9000, size)
	assert.True(t, p.Acked(size, now))
	assert.Equal(t, 9000, p.PLPMTU())
	assert.Equal(t, StateSearchComplete, p.State())
	_, ok = p.Next(now)
	assert.False(t, ok, "nothing to probe until CONFIRMATION_TIMER")
}
