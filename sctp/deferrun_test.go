package sctp

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
