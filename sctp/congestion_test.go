package sctp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ccState builds a Congestion in a chosen state, for table tests.
func ccState(mtu, cwnd, ssthresh, pba, flight int, aRwnd uint32) congestion {
	c := newCongestion(congestionConfig{MTU: mtu, PeerARwnd: aRwnd, SSThresh: ssthresh})
	c.cwnd, c.pba, c.flight = cwnd, pba, flight
	return c
}

func TestInitialCwnd_RFC9260_7_2_1(t *testing.T) {
	cases := []struct{ mtu, want int }{
		{500, 2000},   // 4*MTU
		{1000, 4000},  // 4*MTU
		{1101, 4404},  // 4404 between 2*MTU and 4*MTU
		{1500, 4404},  // 4404
		{2202, 4404},  // 2*MTU = 4404
		{3000, 6000},  // 2*MTU
		{9000, 18000}, // 2*MTU
	}
	for _, c := range cases {
		assert.Equal(t, c.want, initialCwnd(c.mtu), "MTU %d", c.mtu)
	}
}

func TestNewCongestion_RFC9260_7_2_1_Init(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1500, PeerARwnd: 65536})
	assert.Equal(t, 4404, c.Cwnd())
	assert.Equal(t, 65536, c.SSThresh(), "ssthresh starts at the peer's a_rwnd")
	assert.Equal(t, 65536, c.Rwnd(), "RFC 9260 §6.2.1 A: rwnd starts at a_rwnd")
	assert.Zero(t, c.Flight())
	assert.Zero(t, c.PartialBytesAcked())
	assert.True(t, c.InSlowStart())
	_, fr := c.InFastRecovery()
	assert.False(t, fr)
	assert.Equal(t, 1500, c.PMDCS())

	d := newCongestion(congestionConfig{})
	assert.Equal(t, defaultMTU, d.MTU())
	assert.Equal(t, math.MaxInt32, d.SSThresh(), "arbitrarily high without a_rwnd")

	e := newCongestion(congestionConfig{MTU: 1200, PMDCS: 5000, SSThresh: 9999, PeerARwnd: math.MaxUint32})
	assert.Equal(t, 1200, e.PMDCS(), "PMDCS above the MTU means the MTU")
	assert.Equal(t, 9999, e.SSThresh())
	assert.Equal(t, math.MaxInt32, e.Rwnd(), "rwnd saturates")

	f := newCongestion(congestionConfig{PeerARwnd: math.MaxUint32})
	assert.Equal(t, math.MaxInt32, f.SSThresh())
}

func TestSlowStart_RFC9260_7_2_1(t *testing.T) {
	// MTU = PMDCS = 1000, cwnd 4000, ssthresh 100000.
	cases := []struct {
		name     string
		flight   int
		ack      ackInfo
		inFR     bool
		wantCwnd int
	}{
		{"fully used, grows by the acked bytes", 4000,
			ackInfo{CumAdvanced: true, AckedBytes: 600, FlightAcked: 600}, false, 4600},
		{"grows by at most one PMDCS (L = 1)", 4000,
			ackInfo{CumAdvanced: true, AckedBytes: 3000, FlightAcked: 3000}, false, 5000},
		{"flight left less than one MTU unused: fully used", 3001,
			ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000}, false, 5000},
		{"a whole MTU unused: not fully used, no growth", 3000,
			ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000}, false, 4000},
		{"application-limited sender: no growth", 1000,
			ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000}, false, 4000},
		{"in Fast Recovery: no growth", 4000,
			ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000}, true, 4000},
		{"gap-acked data counts too (RFC 9260 no longer needs the cum ack to advance)", 4000,
			ackInfo{AckedBytes: 1000, FlightAcked: 1000}, false, 5000},
		{"nothing newly acked: no growth", 4000,
			ackInfo{}, false, 4000},
		{"acked bytes that were not in flight still count", 4000,
			ackInfo{CumAdvanced: true, AckedBytes: 800}, false, 4800},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ccState(1000, 4000, 100000, 0, tc.flight, 1<<20)
			if tc.inFR {
				c.inFR, c.frExit = true, 1000
			}
			tc.ack.ARwnd = 1 << 20
			tc.ack.CumTSNAck = 1
			c.OnAck(tc.ack)
			assert.Equal(t, tc.wantCwnd, c.Cwnd())
			assert.Equal(t, tc.flight-tc.ack.FlightAcked, c.Flight())
			assert.Zero(t, c.PartialBytesAcked(), "slow start does not use partial_bytes_acked")
		})
	}
}

func TestSlowStartAtSSThresh_RFC9260_7_2_1(t *testing.T) {
	// cwnd == ssthresh is still slow start; the next SACK moves cwnd above it.
	c := ccState(1000, 4000, 4000, 0, 4000, 1<<20)
	require.True(t, c.InSlowStart())
	c.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
	assert.Equal(t, 5000, c.Cwnd())
	assert.False(t, c.InSlowStart())
}

func TestCongestionAvoidance_RFC9260_7_2_2(t *testing.T) {
	// MTU 1000, ssthresh 2000, cwnd 4000: congestion avoidance.
	type step struct {
		flightBefore int
		ack          ackInfo
		wantPBA      int
		wantCwnd     int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"partial_bytes_acked accumulates below cwnd", []step{
			{4000, ackInfo{AckedBytes: 1000, FlightAcked: 1000}, 1000, 4000},
			{4000, ackInfo{AckedBytes: 1500, FlightAcked: 1500}, 2500, 4000},
		}},
		{"reaching cwnd with cwnd outstanding: pba -= cwnd, cwnd += PMDCS", []step{
			{4000, ackInfo{AckedBytes: 3000, FlightAcked: 3000}, 3000, 4000},
			{4000, ackInfo{AckedBytes: 1500, FlightAcked: 1500}, 500, 5000},
		}},
		{"reaching cwnd with less than cwnd outstanding: pba capped at cwnd", []step{
			{3999, ackInfo{AckedBytes: 3000, FlightAcked: 3000}, 3000, 4000},
			{3999, ackInfo{AckedBytes: 2500, FlightAcked: 2500}, 4000, 4000},
			// The next SACK with the window full grows cwnd.
			{4000, ackInfo{AckedBytes: 100, FlightAcked: 100}, 100, 5000},
		}},
		{"gap-acked and duplicate bytes count", []step{
			{4000, ackInfo{AckedBytes: 2000, FlightAcked: 2000, DuplicateBytes: 2000}, 0, 5000},
		}},
		{"everything acknowledged: pba back to 0", []step{
			{4000, ackInfo{AckedBytes: 2000, FlightAcked: 2000}, 2000, 4000},
			{2000, ackInfo{AckedBytes: 2000, FlightAcked: 2000, AllAcked: true}, 0, 4000},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ccState(1000, 4000, 2000, 0, 0, 1<<20)
			require.False(t, c.InSlowStart())
			for i, s := range tc.steps {
				c.flight = s.flightBefore
				s.ack.ARwnd = 1 << 20
				c.OnAck(s.ack)
				assert.Equal(t, s.wantPBA, c.PartialBytesAcked(), "step %d pba", i)
				assert.Equal(t, s.wantCwnd, c.Cwnd(), "step %d cwnd", i)
			}
		})
	}
}

func TestCongestionAvoidanceNoGrowthInFastRecovery_RFC9260_7_2_4(t *testing.T) {
	c := ccState(1000, 8000, 2000, 0, 8000, 1<<20)
	c.inFR, c.frExit = true, 50
	c.OnAck(ackInfo{CumTSNAck: 10, AckedBytes: 8000, FlightAcked: 8000, ARwnd: 1 << 20})
	assert.Equal(t, 8000, c.Cwnd())
	assert.Zero(t, c.PartialBytesAcked())
}

func TestT3Timeout_RFC9260_7_2_3(t *testing.T) {
	cases := []struct {
		name                 string
		mtu, pmdcs, cwnd     int
		wantSSThresh, wantCw int
	}{
		{"half of a large cwnd", 1000, 1000, 10000, 5000, 1000},
		{"floor of 4*MTU", 1000, 1000, 4000, 4000, 1000},
		{"cwnd restarts at PMDCS (E1)", 1500, 1452, 30000, 15000, 1452},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCongestion(congestionConfig{MTU: tc.mtu, PMDCS: tc.pmdcs, PeerARwnd: 1 << 20})
			c.cwnd, c.pba, c.inFR, c.frExit = tc.cwnd, 777, true, 9
			c.OnT3Timeout()
			assert.Equal(t, tc.wantSSThresh, c.SSThresh())
			assert.Equal(t, tc.wantCw, c.Cwnd())
			assert.Zero(t, c.PartialBytesAcked())
			_, fr := c.InFastRecovery()
			assert.False(t, fr, "a timeout ends Fast Recovery")
		})
	}
}

// After a T3-rtx expiry one full packet closes the window until a SACK
// acknowledges data (RFC 9260 §7.2.3).
func TestT3TimeoutOnePacketInFlight_RFC9260_7_2_3(t *testing.T) {
	c := ccState(1000, 10000, 100000, 0, 10000, 1<<20)
	c.OnT3Timeout()
	c.OnRetransmitMarked(10000)
	require.Zero(t, c.Flight())
	require.True(t, c.CanRetransmit(1000))
	c.OnSend(1000)
	assert.False(t, c.CanRetransmit(1))
	assert.False(t, c.CanSend(1))
	// The SACK for it reopens the window: slow start from PMDCS.
	c.OnAck(ackInfo{CumTSNAck: 1, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20, AllAcked: true})
	assert.Equal(t, 2000, c.Cwnd())
	assert.True(t, c.CanSend(1000))
}

func TestFastRetransmit_RFC9260_7_2_4(t *testing.T) {
	c := ccState(1000, 20000, 100000, 300, 20000, 1<<20)
	require.True(t, c.OnFastRetransmit(1234))
	assert.Equal(t, 10000, c.SSThresh(), "ssthresh = max(cwnd/2, 4*MTU)")
	assert.Equal(t, 10000, c.Cwnd(), "cwnd = ssthresh")
	assert.Zero(t, c.PartialBytesAcked())
	exit, fr := c.InFastRecovery()
	require.True(t, fr)
	assert.Equal(t, uint32(1234), exit)

	// A further loss while in Fast Recovery changes nothing (step 6).
	assert.False(t, c.OnFastRetransmit(2000))
	assert.Equal(t, 10000, c.Cwnd())
	assert.Equal(t, 10000, c.SSThresh())
	exit, _ = c.InFastRecovery()
	assert.Equal(t, uint32(1234), exit)

	// A SACK below the exit point keeps Fast Recovery and does not grow cwnd.
	c.flight = 10000
	c.OnAck(ackInfo{CumTSNAck: 1233, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
	_, fr = c.InFastRecovery()
	assert.True(t, fr)
	assert.Equal(t, 10000, c.Cwnd())

	// Reaching the exit point ends it (RFC 9260 §6.2.1 D iv); that SACK
	// does not grow cwnd, the next one does.
	c.OnAck(ackInfo{CumTSNAck: 1234, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
	_, fr = c.InFastRecovery()
	assert.False(t, fr)
	assert.Equal(t, 10000, c.Cwnd())
	c.flight = 10000
	c.OnAck(ackInfo{CumTSNAck: 1235, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
	assert.Equal(t, 11000, c.Cwnd())

	// A new loss after recovery ended enters Fast Recovery again.
	assert.True(t, c.OnFastRetransmit(5000))
	assert.Equal(t, 5500, c.Cwnd())
}

func TestFastRetransmitSmallWindow_RFC9260_7_2_4(t *testing.T) {
	// cwnd below 4*MTU: the RFC 9260 formula raises it to 4*MTU.
	c := newCongestion(congestionConfig{MTU: 1500, PeerARwnd: 1 << 20})
	require.Equal(t, 4404, c.Cwnd())
	c.OnFastRetransmit(7)
	assert.Equal(t, 6000, c.SSThresh())
	assert.Equal(t, 6000, c.Cwnd())
}

func TestFastRecoveryExitAcrossWrap_RFC9260_7_2_4(t *testing.T) {
	c := ccState(1000, 20000, 100000, 0, 0, 1<<20)
	c.OnFastRetransmit(math.MaxUint32 - 1)
	c.OnAck(ackInfo{CumTSNAck: math.MaxUint32 - 2, ARwnd: 1 << 20})
	_, fr := c.InFastRecovery()
	assert.True(t, fr)
	c.OnAck(ackInfo{CumTSNAck: 3, ARwnd: 1 << 20}) // past the exit, across the wrap
	_, fr = c.InFastRecovery()
	assert.False(t, fr)
}

func TestRwnd_RFC9260_6_2_1(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 10000})
	c.OnSend(3000) // B: rwnd -= chunk
	assert.Equal(t, 7000, c.Rwnd())
	assert.Equal(t, 3000, c.Flight())
	c.OnRetransmitMarked(1000) // C: rwnd += chunk marked for retransmission
	assert.Equal(t, 8000, c.Rwnd())
	assert.Equal(t, 2000, c.Flight())
	// D ii: rwnd = a_rwnd - bytes still outstanding after the SACK.
	c.OnAck(ackInfo{CumTSNAck: 5, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 5000})
	assert.Equal(t, 1000, c.Flight())
	assert.Equal(t, 4000, c.Rwnd())
	assert.Equal(t, uint32(5000), c.PeerARwnd())
	// Outstanding above a_rwnd: rwnd is 0, never negative.
	c.OnSend(6000)
	assert.Zero(t, c.Rwnd())
	// Bad accounting from a caller never drives the flight negative.
	c.OnRetransmitMarked(1 << 30)
	assert.Zero(t, c.Flight())
	c.OnAck(ackInfo{FlightAcked: 1 << 30, AckedBytes: -5, DuplicateBytes: -5, ARwnd: 1})
	assert.Zero(t, c.Flight())
	c.OnSend(-3)
	assert.Zero(t, c.Flight())
}

func TestCanSend_RFC9260_6_1(t *testing.T) {
	// MTU = PMDCS = 1000, cwnd 4000.
	cases := []struct {
		name     string
		flight   int
		aRwnd    uint32
		n        int
		send, rt bool
	}{
		{"empty pipe", 0, 100000, 1000, true, true},
		{"B: room under cwnd", 2000, 100000, 1000, true, true},
		{"B: may exceed cwnd by up to PMDCS-1", 3500, 100000, 1000, true, true},
		{"B: not by PMDCS", 3500, 100000, 1500, false, false},
		{"B: flight at cwnd closes the window", 4000, 100000, 1, false, false},
		{"A: rwnd too small for the chunk", 1000, 1500, 1000, false, true},
		{"A: rwnd exactly fits", 1000, 2000, 1000, true, true},
		{"A: zero window probe with nothing in flight", 0, 0, 1000, true, true},
		{"A: no second probe", 1, 0, 1000, false, true},
		{"A+B: a probe still obeys cwnd", 3500, 0, 1000, false, true},
		// RFC 8899: a chunk built for a larger path MTU than today's
		// cannot be split; it goes alone into an empty pipe.
		{"B: a chunk larger than PMDCS into an empty pipe", 0, 100000, 5000, true, true},
		{"B: not beside anything in flight", 1, 100000, 5000, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ccState(1000, 4000, 100000, 0, tc.flight, tc.aRwnd)
			assert.Equal(t, tc.send, c.CanSend(tc.n), "CanSend")
			assert.Equal(t, tc.rt, c.CanRetransmit(tc.n), "CanRetransmit (rule C: cwnd only)")
		})
	}
}

func TestOnIdle_RFC9260_7_2_1(t *testing.T) {
	rto := 100 * time.Millisecond
	cases := []struct {
		name      string
		mtu, cwnd int
		idle      time.Duration
		want      int
	}{
		{"less than one RTO: unchanged", 1000, 40000, 99 * time.Millisecond, 40000},
		{"one RTO: halved", 1000, 40000, rto, 20000},
		{"2.5 RTOs: halved twice", 1000, 40000, 250 * time.Millisecond, 10000},
		{"halving stops at 4*MTU", 1000, 9000, 2 * rto, 4000},
		{"an RTO more at the floor: initial cwnd", 1000, 9000, 3 * rto, 4000},
		{"MTU 1500: floor 6000, then initial 4404", 1500, 7000, 2 * rto, 4404},
		{"never raised", 1000, 1000, 10 * rto, 1000},
		{"a very long idle period", 1000, math.MaxInt32, 1000 * time.Hour, 4000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ccState(tc.mtu, tc.cwnd, 100, 0, 0, 1<<20)
			c.OnIdle(tc.idle, rto)
			assert.Equal(t, tc.want, c.Cwnd())
		})
	}
	c := ccState(1000, 40000, 100, 0, 0, 1<<20)
	c.OnIdle(time.Hour, 0)
	assert.Equal(t, 40000, c.Cwnd(), "no RTO: nothing to measure idleness by")
}

func TestSetMTU(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1000})
	c.SetMTU(9000, 0)
	assert.Equal(t, 9000, c.MTU())
	assert.Equal(t, 9000, c.PMDCS())
	assert.Equal(t, 4000, c.Cwnd(), "cwnd keeps its value")
	c.SetMTU(1500, 1400)
	assert.Equal(t, 1400, c.PMDCS())
	c.SetMTU(0, 10)
	assert.Equal(t, 1500, c.MTU(), "a non-positive MTU is ignored")
	c.OnT3Timeout()
	assert.Equal(t, 1400, c.Cwnd())
	assert.Equal(t, 6000, c.SSThresh())
}

func TestCongestionNoAllocs(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 20})
	allocs := testing.AllocsPerRun(100, func() {
		if c.CanSend(1000) {
			c.OnSend(1000)
		}
		c.OnAck(ackInfo{CumTSNAck: 1, CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
		c.OnFastRetransmit(1)
		c.OnT3Timeout()
		c.OnIdle(time.Second, time.Millisecond)
	})
	assert.Zero(t, allocs)
}

// A window kept short of full by the run deferral (heldBack) counts as
// used: partial_bytes_acked reaching cwnd grows cwnd as with the window
// full, where it would be capped otherwise; the next SACK, the deferral
// over, applies the plain rule again.
func TestCongestionAvoidanceHeldBack(t *testing.T) {
	c := ccState(1000, 4000, 2000, 0, 0, 1<<20)
	c.pba, c.flight, c.heldBack = 3000, 3000, true
	c.OnAck(ackInfo{AckedBytes: 1500, FlightAcked: 1500, ARwnd: 1 << 20})
	assert.Equal(t, 5000, c.Cwnd(), "held back: the window counts as used")
	assert.Equal(t, 500, c.PartialBytesAcked())
	assert.False(t, c.heldBack, "one SACK only")

	c.pba, c.flight = 4500, 3000
	c.OnAck(ackInfo{AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20})
	assert.Equal(t, 5000, c.Cwnd(), "not held back: the window below cwnd does not grow")
	assert.Equal(t, 5000, c.PartialBytesAcked())
}

// §6.1 rule B per destination (§7.2): with a destination's flight set,
// its window is checked against that flight, not the association's,
// which still bounds the peer's window (rule A).
func TestCongestionPathFlight_RFC9260_6_1(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1000, PMDCS: 1000, PeerARwnd: 1 << 20})
	c.OnSend(10 * 1000) // the whole flight, on other destinations
	require.False(t, c.CanSend(1000), "association flight above the window")
	var own int
	c.pathFlight = &own
	assert.True(t, c.CanSend(1000), "nothing in flight to this destination")
	own = c.Cwnd() - 1
	assert.True(t, c.CanSend(1000), "flight below cwnd: one more chunk (rule B)")
	own = c.Cwnd()
	assert.False(t, c.CanSend(1000), "this destination's window is full")
	assert.Equal(t, 1<<20-10*1000, c.Rwnd(), "the peer's window counts all the flight")
	// A SACK grows the window only when this destination's was used.
	cw := c.Cwnd()
	c.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20, WindowFlight: 0})
	assert.Equal(t, cw, c.Cwnd(), "unused window: no growth (§7.2.1)")
	c.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 20, WindowFlight: cw})
	assert.Equal(t, cw+1000, c.Cwnd(), "used window grows")
}

// swapWindow exchanges the per-destination window (RFC 9260 §7.2: cwnd,
// ssthresh, partial_bytes_acked, Fast Recovery) and leaves the flight
// size and the peer's window with the association's controller.
func TestCongestionSwapWindow_RFC9260_7_2(t *testing.T) {
	a := newCongestion(congestionConfig{MTU: 1500, PeerARwnd: 1 << 20, Cubic: true})
	b := newCongestion(congestionConfig{MTU: 1500, PeerARwnd: 1 << 20, Cubic: true})
	a.OnSend(3000)
	require.True(t, a.OnFastRetransmit(7))
	a.pba = 100
	wa, sa, ca := a.cwnd, a.ssthresh, a.cubic
	a.swapWindow(&b)
	assert.Equal(t, initialCwnd(1500), a.Cwnd())
	assert.Equal(t, 1<<20, a.SSThresh())
	assert.Zero(t, a.PartialBytesAcked())
	_, inFR := a.InFastRecovery()
	assert.False(t, inFR)
	assert.Equal(t, 3000, a.Flight(), "the flight stays")
	assert.Equal(t, 1<<20-3000, a.Rwnd(), "so does the peer's window")
	assert.Equal(t, wa, b.cwnd)
	assert.Equal(t, sa, b.ssthresh)
	assert.Equal(t, 100, b.pba)
	assert.Same(t, ca, b.cubic, "CUBIC's epoch goes with its window")
	exit, inFR := b.InFastRecovery()
	assert.True(t, inFR)
	assert.Equal(t, uint32(7), exit)
	assert.Zero(t, b.Flight())
}
