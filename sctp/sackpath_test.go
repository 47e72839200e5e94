package sctp

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// TestSACKPathOverTheWire_RFC9260_6_2 connects a sender (outstandingQueue
// and Congestion) to a receiver (recvTracker) through a lossy, reordering
// channel, every SACK going through the wire format (internal/sctp/wire SACK
// Append, ParseChunk, ParseSACK): every SACK the receiver builds is one
// the sender accepts (§6.2.1), the sender's Cumulative TSN Ack Point
// follows the receiver's, and everything is eventually delivered through
// Fast Retransmit (§7.2.4) and T3-rtx (§6.3.3).
func TestSACKPathOverTheWire_RFC9260_6_2(t *testing.T) {
	fastRtx, t3s, lostRtx := 0, 0, 0
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		init := rng.Uint32()
		s := &sender{q: newOutstandingQueue(init, 512), cc: newCongestion(congestionConfig{MTU: 1200, PeerARwnd: 1 << 20})}
		r := newRecvTracker(init, recvTrackerConfig{Window: 1024})
		const total = 2000
		sentNew := 0
		var inFlight []uint32 // the channel: TSNs on their way, in order of arrival
		now := time.Unix(0, 0)
		pkt := make([]byte, 0, 1500)
		gapBuf := make([]wire.GapAckBlock, 0, 64)
		dupBuf := make([]uint32, 0, 32)
		var gaps []wire.GapAckBlock
		var dups []uint32
		lastCum, lastProgress := s.q.CumTSN(), 0
		transmit := func(tsn uint32) {
			if rng.IntN(10) == 0 {
				return // lost
			}
			inFlight = append(inFlight, tsn)
			if rng.IntN(4) == 0 && len(inFlight) > 1 { // reordered
				i := rng.IntN(len(inFlight))
				inFlight[i], inFlight[len(inFlight)-1] = inFlight[len(inFlight)-1], inFlight[i]
			}
			if rng.IntN(30) == 0 {
				inFlight = append(inFlight, tsn) // duplicated
			}
		}
		for step := 0; s.q.Len() > 0 || sentNew < total; step++ {
			require.Less(t, step, 100000, "seed %d: no progress", seed)
			now = now.Add(time.Millisecond)
			// Send: marked chunks first (§6.1 C), then new ones.
			for {
				tsn, size, ok := s.q.FirstMarked()
				if !ok || !s.cc.CanRetransmit(size) {
					break
				}
				n, _ := s.q.OnRetransmit(tsn, now)
				s.cc.OnSend(n)
				transmit(tsn)
			}
			for sentNew < total && s.cc.CanSend(1000) && !s.q.Full() {
				tsn, _ := s.q.Add(1000, now)
				s.cc.OnSend(1000)
				sentNew++
				transmit(tsn)
			}
			// Deliver a packet of up to 4 chunks.
			n := min(len(inFlight), 1+rng.IntN(4))
			for _, tsn := range inFlight[:n] {
				r.Observe(tsn)
			}
			inFlight = inFlight[n:]
			r.EndPacket(now)
			if s.q.CumTSN() != lastCum {
				lastCum, lastProgress = s.q.CumTSN(), step
			} else if step-lastProgress > 100 && s.q.Len() > 0 {
				s.t3() // T3-rtx expiry: no progress for a while (§6.3.3)
				t3s++
				lastProgress = step
			}
			if !r.SACKDue(now) && step%5 != 0 {
				continue
			}
			// The SACK, through the wire.
			sack := wire.SACK{CumTSNAck: r.CumTSN(), ARwnd: 1 << 20,
				Gaps: r.AppendGapBlocks(gapBuf[:0], 64), Dups: r.AppendDuplicates(dupBuf[:0])}
			r.SACKSent()
			pkt = sack.Append(pkt[:0])
			c, _, err := wire.ParseChunk(pkt)
			require.NoError(t, err)
			got, err := wire.ParseSACK(c, gaps, dups)
			require.NoError(t, err)
			gaps, dups = got.Gaps, got.Dups
			res := s.sack(got.CumTSNAck, got.Gaps, got.Dups, got.ARwnd, now)
			if res.FastRetransmit {
				fastRtx++
			}
			lostRtx += res.LostRetransmits
			require.Equal(t, sackProcessed, res.Status, "seed %d step %d: a SACK the receiver built", seed, step)
			require.Equal(t, r.CumTSN(), s.q.CumTSN())
			flight, marked := flightOf(s.q)
			require.Equal(t, flight, s.cc.Flight())
			require.Equal(t, marked, s.q.Marked())
		}
		assert.Equal(t, init+total-1, r.CumTSN(), "seed %d: all delivered", seed)
		assert.False(t, r.HasGaps())
		assert.Zero(t, s.cc.Flight())
	}
	assert.Positive(t, fastRtx, "losses were recovered by Fast Retransmit")
	assert.Positive(t, t3s, "and by T3-rtx")
	assert.Positive(t, lostRtx, "and lost fast retransmissions by the SACKs after them")
	t.Logf("%d fast retransmits (%d of lost retransmissions), %d T3-rtx expiries", fastRtx, lostRtx, t3s)
}
