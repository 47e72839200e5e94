package sctp

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// rxHeld returns what a's receive side has charged to its share.
func rxHeld(a *Association) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rxAcct.Held()
}

// A message delivered from its packet's buffer is charged what that
// buffer holds, and the same is released when it is delivered. A
// listener copies a packet into a buffer of its size class: charging a
// full read buffer for it and releasing the class leaked the difference
// on every such message until the window closed for good (RFC 9260 §6.2:
// a_rwnd comes back as the application consumes). A 32 KiB DDP segment
// is such a message: above copyBelow, its packet in the 32 KiB class.
// Each message goes alone (no bundling), both directions.
func TestRFC9260_6_2_ReceiveChargeReturnsToZero(t *testing.T) {
	const buf = 256 << 10
	cli, srv, cr, sr := pair(t, &Config{ReceiveBuffer: buf})
	const msgs = 64 // 64 x 32 KiB: eight times the receive buffer
	for i := 0; i < msgs; i++ {
		n := copyBelow + i%128
		require.NoError(t, cli.WriteMsg(1, 16, make([]byte, n)))
		require.NoError(t, srv.WriteMsg(1, 16, make([]byte, n)))
		sr.wait(t, i+1)
		cr.wait(t, i+1)
	}
	for name, a := range map[string]*Association{"dialer": cli, "listener's": srv} {
		require.Eventually(t, func() bool { return rxHeld(a) == 0 }, 10*time.Second, time.Millisecond,
			"the %s association still charges %d octets with nothing held", name, rxHeld(a))
		a.mu.Lock()
		w := a.rwnd()
		fits := (int64(buf) - a.rxHeadroom()) * rxCostUnit / a.rxOfferCost()
		a.mu.Unlock()
		require.EqualValues(t, fits, w, "the %s association offers its whole receive buffer again (less the headroom), in the octets it holds", name)
	}
}

// unstartedWithMessages returns a connected pair whose accepted side holds
// n messages it was sent, never started, and the budget it charges.
func unstartedWithMessages(t *testing.T, n int) (cli, srv *Association, b *membudget.Budget) {
	t.Helper()
	b = membudget.New(64 << 20)
	cli, srv = connected(t, &Config{memBudget: b})
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	for i := range n {
		require.NoError(t, cli.WriteMsg(uint16(i%4), 16, make([]byte, 3000)))
	}
	require.Eventually(t, func() bool { return srv.Stats().MessagesReceived == uint64(n) }, 10*time.Second, time.Millisecond)
	require.Positive(t, b.Used(), "held for a Start to come")
	return cli, srv, b
}

// An association that ends before its user calls Start frees what it
// held for delivery when it is aborted, by either side (RFC 9260 §9.1:
// its records go) or closed by its user: the budget returns to zero and
// a late Start reports the end at once. After the peer's graceful
// shutdown the messages stay for Start (they were acknowledged) and are
// all delivered.
func TestRFC9260_9_1_UnstartedAssociationFreesAtItsEnd(t *testing.T) {
	t.Run("peer aborts", func(t *testing.T) {
		cli, srv, b := unstartedWithMessages(t, 20)
		require.NoError(t, cli.Abort())
		<-srv.Done()
		require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, time.Millisecond)
		done := make(chan error, 1)
		srv.Start(func(uint16, uint32, []byte) { t.Error("a discarded message delivered") }, func(err error) { done <- err })
		require.ErrorIs(t, <-done, ErrAborted)
	})
	t.Run("user aborts", func(t *testing.T) {
		_, srv, b := unstartedWithMessages(t, 20)
		require.NoError(t, srv.Abort())
		require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, time.Millisecond)
	})
	t.Run("user closes", func(t *testing.T) {
		_, srv, b := unstartedWithMessages(t, 20)
		require.NoError(t, srv.Close())
		require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, time.Millisecond)
	})
	t.Run("peer shuts down, then Start", func(t *testing.T) {
		cli, srv, b := unstartedWithMessages(t, 20)
		require.NoError(t, cli.Close())
		<-srv.Done()
		assert.Positive(t, b.Used(), "kept for Start")
		r := newRec()
		done := make(chan error, 1)
		srv.Start(r.fn, func(err error) { done <- err })
		assert.Len(t, r.wait(t, 20), 20)
		require.NoError(t, <-done)
		require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, time.Millisecond)
	})
	t.Run("ended gracefully, then closed unstarted", func(t *testing.T) {
		cli, srv, b := unstartedWithMessages(t, 20)
		require.NoError(t, cli.Close())
		<-srv.Done()
		require.NoError(t, srv.Close())
		require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, time.Millisecond)
	})
}

// RFC 9260 §6.2: a_rwnd offers what the receiver can hold. Each received
// message is charged its buffer's class and bookkeeping, more than its
// octets; offering the free share itself let the sender fill it beyond
// what fits, and the chunks beyond were dropped and retransmitted (each
// drop a window reduction at the sender). With the receiver's user stalled
// and a sender writing full packets' worth of messages, nothing is
// dropped, and everything arrives once the user reads again.
func TestRFC9260_6_2_WindowOffersOnlyWhatFits(t *testing.T) {
	const buf = 256 << 10
	cli, srv := connected(t, &Config{ReceiveBuffer: buf, MTU: 1500, NoPLPMTUD: true})
	release := make(chan struct{})
	var got atomic.Int64
	srv.Start(func(uint16, uint32, []byte) {
		<-release
		got.Add(1)
	}, func(error) {})
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	msg := make([]byte, cli.MaxMessage())
	const n = 400 // about twice the receive buffer
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := cli.WriteMsg(uint16(i%4), 16, msg); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// The window closes on what the stalled user holds.
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.advRwnd < uint32(2*len(msg))
	}, 10*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, <-done)
	require.Eventually(t, func() bool { return got.Load() == n }, 10*time.Second, time.Millisecond)
	assert.Zero(t, srv.Stats().ReceiveDropped, "the sender never overran the window")
	assert.Zero(t, cli.Stats().Retransmits)
}

// A sender that keeps to the a_rwnd it is offered has none of its DATA
// dropped for want of room (RFC 9260 §6.2: a_rwnd is what the receiver
// commits to hold), also when its reads mix dense ones delivered in place
// and sparse ones copied, which the receiver charges differently, and the
// application reads nothing until the window is closed. Here each round
// is a dense read, then sparse reads that fill the window the dense read's
// SACK offered, sent before their own SACKs are read, as a sender with a
// window in flight does. Offered at the charge per octet of the dense
// read, the window let the sparse reads of a full share overrun it by
// their dearer charge: the chunks beyond were dropped and retransmitted,
// each loss cutting cwnd.
func TestRFC9260_6_2_OfferedWindowIsHeld(t *testing.T) {
	peer := newRawPeer(t)
	require.NoError(t, peer.pc.SetReadBuffer(4<<20), "room for a round's SACKs, read after it")
	const buf = 4 << 20
	a, tag := establishRaw(t, peer, &Config{Streams: 4, ReceiveBuffer: buf})
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the association's Abort
	var delivered atomic.Int64
	a.Start(func(uint16, uint32, []byte) {
		<-release
		delivered.Add(1)
	}, func(error) {})
	const seg, dense, sparse = 1440, 45, 6
	user := seg - wire.HeaderLen - wire.DataHeaderLen
	tsn := uint32(100)
	send := func(k int) {
		bp := coalescedRead(peer, tag, &tsn, k, seg)
		if !a.receiveSegments(*bp, bp, seg, true) {
			putBuf(bp)
		}
	}
	// latest reads the SACKs sent so far, up to the one that acknowledges
	// every chunk; false if none does (a chunk was dropped).
	var s wire.SACK
	latest := func() bool {
		for {
			_, c, ok := peer.recvChunk(wire.ChunkSACK, time.Second)
			if !ok {
				t.Logf("no SACK of TSN %d: the last acknowledged %d with %d gaps, a_rwnd %d, held %d", tsn-1, s.CumTSNAck, len(s.Gaps), s.ARwnd, rxHeld(a))
				return false
			}
			var err error
			s, err = wire.ParseSACK(c, nil, nil)
			require.NoError(t, err)
			if s.CumTSNAck+1 == tsn && len(s.Gaps) == 0 {
				return true
			}
		}
	}
	window := func() int { return (int(s.ARwnd) - int(tsn-1-s.CumTSNAck)*user) / user }
	send(2)
	acked := latest()
	sent := 2
	for acked && window() >= 2 {
		k := min(dense, window())
		send(k)
		sent += k
		if !latest() {
			break
		}
		for window() >= sparse {
			send(sparse)
			sent += sparse
			s.ARwnd -= uint32(sparse * user) // the window this round was offered
			s.CumTSNAck += sparse
		}
		acked = latest()
	}
	assert.Greater(t, sent*user, buf*3/4, "the window offered most of the share")
	assert.Zero(t, a.Stats().ReceiveDropped, "no DATA within the offered window dropped")
	assert.True(t, acked, "every chunk sent acknowledged")
	assert.LessOrEqual(t, rxHeld(a), int64(buf), "within the share")
	open()
	require.Eventually(t, func() bool { return delivered.Load() == int64(sent) }, 10*time.Second, time.Millisecond)
}
