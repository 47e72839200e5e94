package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deferRun holds new DATA back only when a short run is all the window
// allows, enough is in flight for its SACKs to free a longer one, and a
// run's worth is waiting: in congestion avoidance, with runs of packets
// (UDP_SEGMENT), outside Fast Recovery.
func TestDeferRunRules(t *testing.T) {
	requireOffload(t)
	cli, _ := connected(t, &Config{MTU: 1500, offloadLocal: true})
	plain, _ := connected(t, &Config{MTU: 1500, NoOffload: true})

	check := func(a *Association, name string, want bool, set func(a *Association)) {
		t.Helper()
		a.mu.Lock()
		defer a.mu.Unlock()
		cc, pend, head := a.primaryPath().cc, a.pend, a.pendHead
		defer func() { a.primaryPath().cc, a.pend, a.pendHead = cc, pend, head }()
		mp := a.maxPacket
		// Congestion avoidance, a window of 100 packets all but 2 in
		// flight, 40 packets waiting.
		a.primaryPath().cc.cwnd, a.primaryPath().cc.ssthresh, a.primaryPath().cc.inFR = 100*mp, 50*mp, false
		a.primaryPath().cc.flight, a.primaryPath().cc.peerARwnd = 98*mp, 1<<30
		a.pend, a.pendHead = make([]txChunk, 40), 0
		for i := range a.pend {
			a.pend[i].n = mp - 12
		}
		set(a)
		assert.Equal(t, want, a.deferRun(), name)
	}
	check(cli, "short run, window in flight", true, func(*Association) {})
	check(cli, "slow start", false, func(a *Association) { a.primaryPath().cc.ssthresh = 200 * a.maxPacket })
	check(cli, "slow start, the peer's window binds", true, func(a *Association) {
		a.primaryPath().cc.ssthresh, a.primaryPath().cc.cwnd = 400*a.maxPacket, 200*a.maxPacket
		a.primaryPath().cc.flight, a.primaryPath().cc.peerARwnd = 60*a.maxPacket, uint32(62*a.maxPacket)
	})
	check(cli, "fast recovery", false, func(a *Association) { a.primaryPath().cc.inFR = true })
	check(cli, "room for a run", false, func(a *Association) { a.primaryPath().cc.flight = 60 * a.maxPacket })
	check(cli, "peer's window short", true, func(a *Association) {
		a.primaryPath().cc.flight, a.primaryPath().cc.peerARwnd = 60*a.maxPacket, uint32(62*a.maxPacket)
	})
	check(cli, "less than a run waiting", false, func(a *Association) { a.pend = a.pend[:3] })
	check(cli, "little in flight", false, func(a *Association) {
		a.primaryPath().cc.cwnd, a.primaryPath().cc.ssthresh, a.primaryPath().cc.flight = 5*a.maxPacket, 2*a.maxPacket, 3*a.maxPacket
	})
	check(plain, "no runs", false, func(*Association) {})
}

// burstDefer leaves a writer's new DATA to the next SACK when Max.Burst
// would cut its transmission to a short run (RFC 9260 §6.1 D) while
// enough is in flight for a SACK to come, so that the SACK's transmission
// sends it with the credit of what it frees, in one run; not in Fast
// Recovery, nor in slow start while cwnd limits (a SACK grows it then),
// nor a SACK's or a timer's transmission, nor without runs, nor for less
// than a run waiting (a request goes at once).
func TestBurstDeferRules(t *testing.T) {
	requireOffload(t)
	cli, _ := connected(t, &Config{MTU: 1500, offloadLocal: true})
	plain, _ := connected(t, &Config{MTU: 1500, NoOffload: true})

	check := func(a *Association, name string, want bool, set func(a *Association) (budget int)) {
		t.Helper()
		a.mu.Lock()
		defer a.mu.Unlock()
		cc := a.primaryPath().cc
		defer func() { a.primaryPath().cc, a.io.writerTx = cc, false }()
		mp := a.maxPacket
		// Congestion avoidance, a window of 100 packets, 60 in flight: a
		// writer's transmission, with Max.Burst's four packets of credit.
		a.primaryPath().cc.cwnd, a.primaryPath().cc.ssthresh, a.primaryPath().cc.inFR = 100*mp, 50*mp, false
		a.primaryPath().cc.flight, a.primaryPath().cc.peerARwnd = 60*mp, 1<<30
		pend, head := a.pend, a.pendHead
		defer func() { a.pend, a.pendHead = pend, head }()
		a.pend, a.pendHead = make([]txChunk, 40), 0
		for i := range a.pend {
			a.pend[i].n = mp - 12
		}
		a.io.writerTx = true
		budget := set(a)
		assert.Equal(t, want, a.burstDefer(budget), name)
	}
	four := func(a *Association) int { return 4 * a.maxPacket }
	check(cli, "a writer's short burst, SACKs due", true, four)
	check(cli, "credit for a run", false, func(a *Association) int { return 30 * a.maxPacket })
	check(cli, "a SACK's transmission", false, func(a *Association) int { a.io.writerTx = false; return four(a) })
	check(cli, "fast recovery", false, func(a *Association) int { a.primaryPath().cc.inFR = true; return four(a) })
	check(cli, "little in flight", false, func(a *Association) int { a.primaryPath().cc.flight = 3 * a.maxPacket; return four(a) })
	check(cli, "slow start, cwnd has room", true, func(a *Association) int { a.primaryPath().cc.ssthresh = 400 * a.maxPacket; return four(a) })
	check(cli, "slow start, cwnd limits", false, func(a *Association) int {
		a.primaryPath().cc.ssthresh, a.primaryPath().cc.flight = 400*a.maxPacket, 95*a.maxPacket
		return four(a)
	})
	check(cli, "less than a run waiting", false, func(a *Association) int { a.pend = a.pend[:3]; return four(a) })
	check(plain, "no runs", false, four)
}

// TestRFC9260_6_1_D_BurstCreditRules: a transmission may send Max.Burst
// packets beyond the octets SACKs freed since the flight last grew
// (burstBudget). With nothing in flight, where packets leave in runs, that
// credit lasts one smoothed round trip after the SACK that freed it: a
// message written a moment after the flight emptied (a Read Response one
// client turn after the SACK of the last) leaves as it would have with
// that SACK, and one after a longer pause as Max.Burst packets. Without runs the
// credit ends with the transmission that found the flight empty.
func TestRFC9260_6_1_D_BurstCreditRules(t *testing.T) {
	requireOffload(t)
	runs, _ := connected(t, &Config{MTU: 1500, offloadLocal: true})
	plain, _ := connected(t, &Config{MTU: 1500, NoOffload: true})
	now := time.Now()
	const srtt = 10 * time.Millisecond
	with := func(a *Association, f func(a *Association, mp int)) {
		a.mu.Lock()
		defer a.mu.Unlock()
		dst := a.primaryPath()
		cc, rto, freed, at := dst.cc, dst.rto, a.burstFreed, a.burstAt
		defer func() { dst.cc, dst.rto, a.burstFreed, a.burstAt = cc, rto, freed, at }()
		f(a, a.maxPacket)
	}
	// set gives a a window of 100 packets, flight in flight, and a credit
	// of 20 packets freed since ago.
	set := func(a *Association, flight int, since time.Duration) {
		dst := a.primaryPath()
		dst.cc.cwnd, dst.cc.flight, dst.rto.srtt = 100*a.maxPacket, flight, srtt
		a.burstFreed, a.burstAt = 20*a.maxPacket, now.Add(-since)
	}
	with(runs, func(a *Association, mp int) {
		require.True(t, a.sendsRuns())
		set(a, 50*mp, time.Second)
		assert.Equal(t, 24*mp, a.burstBudget(now), "in flight: the SACKs' credit")
		set(a, 0, srtt/2)
		assert.Equal(t, 24*mp, a.burstBudget(now), "flight empty within a round trip")
		set(a, 0, 2*srtt)
		assert.Equal(t, 4*mp, a.burstBudget(now), "flight empty for longer")
		set(a, 0, 0)
		a.primaryPath().rto.srtt = 0
		a.burstAt = now.Add(-time.Millisecond)
		assert.Equal(t, 4*mp, a.burstBudget(now), "no round trip measured")
		// What a transmission leaves of its budget is the next one's
		// credit, beyond Max.Burst and within cwnd, with or without flight.
		set(a, 0, 0)
		a.burstUsed(30 * mp)
		assert.Equal(t, 26*mp, a.burstFreed)
		a.burstUsed(200 * mp)
		assert.Equal(t, 100*mp, a.burstFreed, "capped at cwnd")
	})
	with(plain, func(a *Association, mp int) {
		require.False(t, a.sendsRuns())
		set(a, 0, 0)
		assert.Equal(t, 24*mp, a.burstBudget(now), "the SACK's own transmission has its credit")
		a.burstUsed(30 * mp)
		assert.Zero(t, a.burstFreed, "without runs the credit ends with an empty flight")
		set(a, 50*mp, 0)
		a.burstUsed(30 * mp)
		assert.Equal(t, 26*mp, a.burstFreed, "in flight it stays")
	})
}
