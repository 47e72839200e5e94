package sctp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hsMTU = 1500

// hsSender drives a Congestion with HyStart++ through rounds of SACKs.
type hsSender struct {
	c   congestion
	cum uint32
}

func newHSSender(on bool) *hsSender {
	return &hsSender{c: newCongestion(congestionConfig{MTU: hsMTU, PeerARwnd: 1 << 30, HyStart: on})}
}

// round feeds one round of n SACKs, each acknowledging two full packets
// of a fully used window and carrying the round trip rtt (0: none): the
// round's data ends where its last SACK acknowledges.
func (s *hsSender) round(n int, rtt time.Duration) {
	end := s.cum + uint32(2*n)
	for range n {
		s.c.flight = s.c.cwnd
		s.cum += 2
		s.c.OnAck(ackInfo{CumTSNAck: s.cum, AckedBytes: 2 * hsMTU, FlightAcked: 2 * hsMTU, LatestRTT: rtt, HighestSent: end})
	}
}

// TestHyStartSteadyRTT_RFC9406_4_2: without a delay increase HyStart++
// is RFC 9260's slow start: one PMDCS per SACK, no CSS.
func TestHyStartSteadyRTT_RFC9406_4_2(t *testing.T) {
	s := newHSSender(true)
	start := s.c.Cwnd()
	for range 10 {
		s.round(10, 50*time.Millisecond)
	}
	assert.False(t, s.c.InCSS())
	assert.Equal(t, start+100*hsMTU, s.c.Cwnd())
}

// TestHyStartDelayIncrease_RFC9406_4_2: once a round's minimum round trip
// is RttThresh above the last round's (max(4 ms, min(lastRoundMinRTT/8,
// 16 ms)): 6.25 ms at 50 ms) after N_RTT_SAMPLE samples, the window
// enters CSS and grows a quarter as fast (CSS_GROWTH_DIVISOR).
func TestHyStartDelayIncrease_RFC9406_4_2(t *testing.T) {
	s := newHSSender(true)
	s.round(10, 50*time.Millisecond)
	s.round(10, 56*time.Millisecond) // below the threshold
	require.False(t, s.c.InCSS())
	before := s.c.Cwnd()
	end := s.cum + 20
	for i := range 8 {
		require.False(t, s.c.InCSS(), "%d samples: not enough", i)
		s.c.flight = s.c.cwnd
		s.cum += 2
		s.c.OnAck(ackInfo{CumTSNAck: s.cum, AckedBytes: 2 * hsMTU, FlightAcked: 2 * hsMTU, LatestRTT: 63 * time.Millisecond, HighestSent: end})
	}
	require.True(t, s.c.InCSS(), "the 8th sample")
	assert.Equal(t, before+7*hsMTU+hsMTU/4, s.c.Cwnd(), "CSS grows by PMDCS/4 per SACK")
}

// TestHyStartSpuriousExit_RFC9406_4_2: in CSS, a round whose minimum
// falls below cssBaselineMinRtt returns to slow start.
func TestHyStartSpuriousExit_RFC9406_4_2(t *testing.T) {
	s := newHSSender(true)
	s.round(10, 20*time.Millisecond)
	s.round(10, 30*time.Millisecond) // +10 ms > max(4, 2.5) ms
	require.True(t, s.c.InCSS())
	s.round(10, 21*time.Millisecond)
	assert.False(t, s.c.InCSS(), "the delay went away: slow start again")
	before := s.c.Cwnd()
	s.round(10, 21*time.Millisecond)
	assert.Equal(t, before+10*hsMTU, s.c.Cwnd())
}

// TestHyStartCSSRounds_RFC9406_4_2: CSS_ROUNDS (5) rounds of CSS end
// slow start: ssthresh = cwnd, congestion avoidance from there, and
// HyStart++ is done.
func TestHyStartCSSRounds_RFC9406_4_2(t *testing.T) {
	s := newHSSender(true)
	s.round(10, 20*time.Millisecond)
	s.round(10, 30*time.Millisecond)
	require.True(t, s.c.InCSS())
	for range 4 {
		s.round(10, 30*time.Millisecond)
		require.True(t, s.c.InCSS())
		require.Less(t, s.c.Cwnd(), s.c.SSThresh())
	}
	s.round(1, 30*time.Millisecond) // the fifth CSS round begins: CSS is over
	assert.False(t, s.c.InCSS())
	assert.Equal(t, s.c.Cwnd()-1, s.c.SSThresh(), "cwnd > ssthresh: congestion avoidance")
	before := s.c.Cwnd()
	s.round(10, 30*time.Millisecond)
	assert.Equal(t, before, s.c.Cwnd(), "RFC 9260 §7.2.2: one PMDCS per window, not per SACK")
	assert.Positive(t, s.c.PartialBytesAcked())
}

// TestHyStartOnlyInitialSlowStart_RFC9406_4_3: a loss ends HyStart++;
// the slow start after a T3-rtx expiry is RFC 9260's, whatever the
// round trips do.
func TestHyStartOnlyInitialSlowStart_RFC9406_4_3(t *testing.T) {
	s := newHSSender(true)
	s.round(10, 20*time.Millisecond)
	require.True(t, s.c.OnFastRetransmit(s.cum+20))
	s.c.OnT3Timeout()
	s.c.inFR = false
	s.round(10, 20*time.Millisecond)
	s.round(10, 40*time.Millisecond)
	assert.False(t, s.c.InCSS())
}

// TestHyStartOff: without HyStart the same delay increase changes nothing.
func TestHyStartOff(t *testing.T) {
	s := newHSSender(false)
	start := s.c.Cwnd()
	s.round(10, 20*time.Millisecond)
	s.round(10, 40*time.Millisecond)
	assert.False(t, s.c.InCSS())
	assert.Equal(t, start+20*hsMTU, s.c.Cwnd())
}

// TestOutstandingLatestRTT: each SACK carries the round trip of the
// newest chunk it newly acknowledges that was sent once, and the highest
// TSN sent; a retransmitted chunk gives none (Karn).
func TestOutstandingLatestRTT(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newOutstandingQueue(1, 16)
	for i := range 4 {
		_, ok := q.Add(100, t0.Add(time.Duration(i)*time.Millisecond))
		require.True(t, ok)
	}
	res := q.OnSACK(2, nil, nil, 1<<20, false, t0.Add(50*time.Millisecond))
	assert.Equal(t, 49*time.Millisecond, res.Ack.LatestRTT, "TSN 2, sent at +1 ms")
	assert.Equal(t, uint32(4), res.Ack.HighestSent)

	q.MarkAllForRetransmit()
	_, ok := q.OnRetransmit(3, t0.Add(60*time.Millisecond))
	require.True(t, ok)
	res = q.OnSACK(3, nil, nil, 1<<20, false, t0.Add(70*time.Millisecond))
	assert.Zero(t, res.Ack.LatestRTT, "only a retransmitted chunk newly acknowledged")
}

func TestConfigSlowStart(t *testing.T) {
	_, err := Listen("udp4", "127.0.0.1:0", &Config{SlowStart: "hystart"})
	assert.ErrorIs(t, err, ErrConfig)
	l, err := Listen("udp4", "127.0.0.1:0", &Config{SlowStart: ccname.SlowStartHyStart})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

// TestHyStartNoAllocs: HyStart++ allocates nothing per SACK.
func TestHyStartNoAllocs(t *testing.T) {
	s := newHSSender(true)
	allocs := testing.AllocsPerRun(1000, func() { s.round(4, 20*time.Millisecond) })
	assert.Zero(t, allocs)
}
