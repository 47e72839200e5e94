package sctp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cubicCA returns a CUBIC congestion state in congestion avoidance with
// cwnd w segments of 1000 octets, all of them in flight.
// t0 is an arbitrary start of time for the window curves.
var t0 = time.Unix(1000, 0)

func cubicCA(t *testing.T, w int) *congestion {
	t.Helper()
	c := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 30, SSThresh: 4000, Cubic: true})
	require.True(t, c.Cubic())
	c.cwnd = w * 1000
	c.OnSend(c.cwnd)
	return &c
}

// ackAll acknowledges what is in flight one segment at a time at now,
// keeping the window full.
func ackAll(c *congestion, now time.Time, srtt time.Duration) {
	n := c.Flight() / 1000
	for range n {
		c.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 30, Now: now, SRTT: srtt})
		for c.Flight()+1000 <= c.Cwnd() {
			c.OnSend(1000)
		}
	}
}

// TestCubicDecrease_RFC9438_4_6: a loss sets ssthresh and cwnd to
// β_cubic = 0.7 of the window (RFC 9260's 1/2 without CUBIC), never below
// 4 MTU; a T3-rtx expiry sets cwnd to one PMDCS as RFC 9260 §7.2.3 says.
func TestCubicDecrease_RFC9438_4_6(t *testing.T) {
	c := cubicCA(t, 100)
	require.True(t, c.OnFastRetransmit(1))
	assert.Equal(t, 70000, c.SSThresh())
	assert.Equal(t, 70000, c.Cwnd())
	assert.Equal(t, 100.0, c.cubic.wMax)

	r := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 30})
	r.cwnd = 100000
	r.OnFastRetransmit(1)
	assert.Equal(t, 50000, r.Cwnd(), "RFC 9260 §7.2.3 without CUBIC")

	c = cubicCA(t, 100)
	c.OnT3Timeout()
	assert.Equal(t, 70000, c.SSThresh())
	assert.Equal(t, c.PMDCS(), c.Cwnd())

	c = cubicCA(t, 5)
	c.OnT3Timeout()
	assert.Equal(t, 4000, c.SSThresh(), "floor of 4 MTU")
}

// TestCubicFastConvergence_RFC9438_4_7: a loss below the previous W_max
// releases bandwidth: W_max becomes cwnd·(1+β)/2.
func TestCubicFastConvergence_RFC9438_4_7(t *testing.T) {
	c := cubicCA(t, 100)
	c.OnFastRetransmit(1)
	c.OnAck(ackInfo{CumTSNAck: 2, CumAdvanced: true, AllAcked: true, ARwnd: 1 << 30, Now: t0, SRTT: time.Millisecond})
	c.cwnd = 80000
	c.OnFastRetransmit(10)
	assert.InDelta(t, 80*(1+cubicBeta)/2, c.cubic.wMax, 1e-9)
	assert.Equal(t, 80.0, c.cubic.wLastMax)
}

// TestCubicWindowCurve_RFC9438_4_2: after a loss at W_max = 100 the window
// follows W_cubic(t) = C(t-K)³ + W_max: concave up to W_max around K
// (about 4.2 s here), then convex beyond. The round trip is 100 ms, long
// enough for the cubic to outgrow the Reno-friendly estimate.
func TestCubicWindowCurve_RFC9438_4_2(t *testing.T) {
	c := cubicCA(t, 100)
	c.OnFastRetransmit(1)
	c.inFR = false // recovery over
	k := math.Cbrt(100 * (1 - cubicBeta) / cubicC)
	rtt := 100 * time.Millisecond
	now := t0
	var atK, afterK float64
	for now.Sub(t0) < time.Duration((k+3)*float64(time.Second)) {
		ackAll(c, now, rtt)
		el := now.Sub(t0).Seconds()
		w := float64(c.Cwnd()) / 1000
		want := cubicC*math.Pow(el+rtt.Seconds()-k, 3) + 100
		if el > 1 { // past the first round trips, the window tracks the cubic
			assert.InDelta(t, max(want, 70), w, 3, "t=%.2fs", el)
		}
		if atK == 0 && el >= k {
			atK = w
		}
		afterK = w
		now = now.Add(rtt)
	}
	assert.InDelta(t, 100, atK, 3, "W_max reached at K")
	assert.Greater(t, afterK, 105.0, "convex growth beyond W_max")
}

// TestCubicRenoFriendly_RFC9438_4_3: on a short round trip with a small
// window the cubic grows slower than Reno would; the window then follows
// the Reno-friendly estimate, which gains α_cubic segments per round trip.
func TestCubicRenoFriendly_RFC9438_4_3(t *testing.T) {
	c := cubicCA(t, 10)
	c.OnFastRetransmit(1)
	c.inFR = false
	rtt := time.Millisecond
	now := t0
	ackAll(c, now, rtt) // the epoch starts: W_est = cwnd = 7
	start := float64(c.Cwnd()) / 1000
	for range 100 {
		now = now.Add(rtt)
		ackAll(c, now, rtt)
	}
	w := float64(c.Cwnd()) / 1000
	// 100 round trips of 1 ms: the cubic has barely moved (K is 2.6 s).
	assert.InDelta(t, start+100*cubicAlpha, w, 5, "about α_cubic per round trip")
}

// TestCubicSlowStartUnchanged: below ssthresh the window grows as RFC
// 9260 §7.2.1 says, CUBIC or not; a window not fully used does not grow.
func TestCubicSlowStartUnchanged(t *testing.T) {
	c := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 30, Cubic: true})
	r := newCongestion(congestionConfig{MTU: 1000, PeerARwnd: 1 << 30})
	for _, x := range []*congestion{&c, &r} {
		x.OnSend(x.Cwnd())
		x.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 30, Now: t0})
	}
	assert.Equal(t, r.Cwnd(), c.Cwnd())

	idle := cubicCA(t, 50)
	idle.flight = 10000 // application-limited
	before := idle.Cwnd()
	idle.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 30, Now: t0.Add(10 * time.Second), SRTT: time.Millisecond})
	assert.Equal(t, before, idle.Cwnd())
}

func TestCubicNoAllocs(t *testing.T) {
	c := cubicCA(t, 100)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		c.OnAck(ackInfo{CumAdvanced: true, AckedBytes: 1000, FlightAcked: 1000, ARwnd: 1 << 30, Now: now, SRTT: time.Millisecond})
		c.OnSend(1000)
	})
	assert.Zero(t, allocs)
}

func TestConfigCongestionControl(t *testing.T) {
	_, err := Listen("udp4", "127.0.0.1:0", &Config{CongestionControl: "vegas"})
	assert.ErrorIs(t, err, ErrConfig)
	l, err := Listen("udp4", "127.0.0.1:0", &Config{CongestionControl: ccname.CongestionCUBIC})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
