package sctp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// reassemblyWork pushes n one-octet fragments of one message in the
// given order (the last one, with E, completes it) and returns the
// reassembler's work counter.
func reassemblyWork(t *testing.T, n int, order string) uint64 {
	t.Helper()
	r := newReassembler(reassemblyConfig{Streams: 1, Budget: 1 << 30, MaxMessageFragments: 1 << 20, MaxHeldFragments: 1 << 20})
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	switch order {
	case "reverse":
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			idx[i], idx[j] = idx[j], idx[i]
		}
	case "shuffled":
		rand.New(rand.NewPCG(uint64(n), 7)).Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	one := []byte{1}
	for _, i := range idx {
		d := wire.Data{TSN: 1000 + uint32(i), Unordered: true, Beginning: i == 0, Ending: i == n-1, UserData: one}
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	m, ok := r.Next()
	require.True(t, ok, "the message completes")
	require.Len(t, m.Data, n)
	assert.Zero(t, r.Fragments())
	return r.work
}

// TestReassemblyWorkLinear_RFC9260_6_9: 200,000 one-octet fragments of one
// message cost work linear in their count, in order, in reverse and
// shuffled: twice the fragments, at most 2.5 times the work (the
// reassembler walked back to the message's first fragment for each new
// one before: 4.5 times).
func TestReassemblyWorkLinear_RFC9260_6_9(t *testing.T) {
	const n = 100_000
	for _, order := range []string{"in order", "reverse", "shuffled"} {
		w1, w2 := reassemblyWork(t, n, order), reassemblyWork(t, 2*n, order)
		t.Logf("%s: %d fragments %d steps, %d fragments %d steps", order, n, w1, 2*n, w2)
		assert.Less(t, float64(w2)/float64(w1), 2.5, order)
		assert.LessOrEqual(t, w2, uint64(4*2*n), "%s: a few steps per fragment", order)
	}
}

// TestReassemblyMakeRoomWorkBounded_RFC9260_6_2: sparse fragments filling
// the budget, then chunks below them one by one: each MakeRoom reads the
// bitmap and evicts runs, never scanning every run held.
func TestReassemblyMakeRoomWorkBounded_RFC9260_6_2(t *testing.T) {
	const n = 4000
	c := cost(1)
	r := newReassembler(reassemblyConfig{Streams: 1, Budget: n * c})
	one := []byte{1}
	for i := range n {
		d := wire.Data{TSN: 10000 + 2*uint32(i), Unordered: true, UserData: one}
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	before := r.work
	evicted := 0
	for i := range n / 2 {
		d := wire.Data{TSN: 1000 + 2*uint32(i), Unordered: true, Beginning: true, UserData: one}
		require.True(t, r.Admit(&d, func(uint32) { evicted++ }))
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	assert.Equal(t, n/2, evicted, "one sparse fragment evicted for each new one")
	assert.Less(t, r.work-before, uint64(n*200), "work per MakeRoom bounded by the bitmap's words, not the runs held")
}

// floodPeer is a raw peer with an association to it, whose receive
// memory is charged to a budget of its own.
func floodPeer(t *testing.T, cfg *Config) (*rawPeer, *Association, uint32, chan error, *rxRec) {
	t.Helper()
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, cfg)
	done := make(chan error, 1)
	rec := newRec()
	a.Start(rec.fn, func(err error) { done <- err })
	return peer, a, tag, done, rec
}

// sendFragments sends n fragments of size octets of one unordered message
// from TSN tsn on (the first with B if begin; none with E), packed.
func sendFragments(peer *rawPeer, tag, tsn uint32, n, size int, begin bool) {
	data := make([]byte, size)
	var p []byte
	for i := range n {
		d := wire.Data{TSN: tsn + uint32(i), StreamID: 1, PPID: 16, Unordered: true, Beginning: begin && i == 0, UserData: data}
		if len(p)+d.Len() > 60000 {
			peer.send(tag, p)
			p = nil
			time.Sleep(time.Millisecond)
		}
		p = d.Append(p)
	}
	if len(p) > 0 {
		peer.send(tag, p)
	}
}

func requireAbort(t *testing.T, peer *rawPeer, done chan error, text string, sentinel error) {
	t.Helper()
	_, c := peer.recv(wire.ChunkAbort)
	ab, err := wire.ParseAbort(c)
	require.NoError(t, err)
	it := ab.CauseIter()
	cause, ok := it.Next()
	require.True(t, ok)
	assert.Equal(t, wire.CauseProtocolViolation, cause.Code, "RFC 9260 §3.3.10.13")
	assert.Contains(t, string(cause.Info), text)
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrAborted)
		assert.ErrorIs(t, err, ErrProtocolViolation)
		assert.ErrorIs(t, err, sentinel)
		assert.Contains(t, err.Error(), text)
	case <-time.After(10 * time.Second):
		t.Fatal("the local user was not told")
	}
}

// TestFragmentCap_RFC9260_6_9: a message of more fragments than
// Config.MaxMessageFragments ends the association with an ABORT whose
// Protocol Violation cause says so; the user sees errReassemblyLimit, and
// every octet charged is given back.
func TestFragmentCap_RFC9260_6_9(t *testing.T) {
	b := membudget.New(64 << 20)
	peer, _, tag, done, _ := floodPeer(t, &Config{Streams: 4, MaxMessageFragments: 1000, memBudget: b})
	sendFragments(peer, tag, 100, 5000, 1, true)
	requireAbort(t, peer, done, "more than 1000 fragments", errReassemblyLimit)
	assert.LessOrEqual(t, b.Peak(), int64(1001*cost(1)), "held no more than the cap (and the reservation of the one beyond)")
	require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, 10*time.Millisecond, "everything released")
}

// TestHeldFragmentCap_RFC9260_6_9: more fragments held at once than
// Config.MaxHeldFragments, over many messages: ABORT.
func TestHeldFragmentCap_RFC9260_6_9(t *testing.T) {
	b := membudget.New(64 << 20)
	peer, _, tag, done, _ := floodPeer(t, &Config{Streams: 4, MaxHeldFragments: 500, memBudget: b})
	// Messages of 10 fragments (B and middles), a TSN left out between
	// them: none completes, none is dead.
	var p []byte
	one := []byte{1}
	for m := range 100 {
		for i := range 10 {
			d := wire.Data{TSN: 100 + uint32(m*11+i), StreamID: 1, PPID: 16, Unordered: true, Beginning: i == 0, UserData: one}
			p = d.Append(p)
		}
	}
	peer.send(tag, p)
	requireAbort(t, peer, done, "more than 500 fragments", errReassemblyLimit)
	require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// TestFragmentsNeverComplete_RFC9260_6_9: a middle fragment at the first
// TSN (whose predecessor is the peer's initial TSN less one, received by
// definition) can never be part of a whole message: ABORT at once.
func TestFragmentsNeverComplete_RFC9260_6_9(t *testing.T) {
	b := membudget.New(64 << 20)
	peer, _, tag, done, _ := floodPeer(t, &Config{Streams: 4, memBudget: b})
	sendFragments(peer, tag, 100, 200_000, 1, false)
	requireAbort(t, peer, done, "can never complete", errFragmentSequence)
	assert.LessOrEqual(t, b.Peak(), int64(largeBuf), "nothing held")
	require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// TestFragmentsNeverCompleteAfterWhole_RFC9260_6_9: a fragment without E
// followed by a whole message: the first can never complete.
func TestFragmentsNeverCompleteAfterWhole_RFC9260_6_9(t *testing.T) {
	peer, _, tag, done, _ := floodPeer(t, &Config{Streams: 4})
	first := wire.Data{TSN: 100, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, UserData: []byte("a")}
	whole := wire.Data{TSN: 101, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: []byte("b")}
	peer.send(tag, first.Append(nil), whole.Append(nil))
	requireAbort(t, peer, done, "does not continue", errFragmentSequence)
}

// TestReassemblyShare_RFC9260_6_9: one peer fills its share with 257-octet
// fragments of a message larger than its receive buffer: it is charged
// by the buffers it makes the receiver hold, never more than its share,
// and aborted once the message can no longer fit; another association on
// the same budget is served all along; everything is released.
func TestReassemblyShare_RFC9260_6_9(t *testing.T) {
	const share = 256 << 10
	b := membudget.New(2 * share)
	cfg := &Config{Streams: 4, ReceiveBuffer: share, memBudget: b}
	peer, attacked, tag, done, _ := floodPeer(t, cfg)
	opeer, _, otag, _, orec := floodPeer(t, cfg)
	msg := func(tsn uint32) {
		d := wire.Data{TSN: tsn, StreamID: 2, PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: []byte("served")}
		opeer.send(otag, d.Append(nil))
	}
	msg(100)
	orec.wait(t, 1)

	sendFragments(peer, tag, 100, 4*share/257, 257, true)
	requireAbort(t, peer, done, "more than the receive buffer", errReassemblyLimit)
	assert.LessOrEqual(t, b.Peak(), int64(share), "never beyond its share")
	assert.Greater(t, b.Peak(), int64(share*3/4), "charged by the buffers held: a 512-octet class and bookkeeping per fragment")
	assert.Equal(t, stateClosed, attacked.Stats().State)
	msg(101)
	got := orec.wait(t, 2)
	assert.Equal(t, "served", string(got[1].b), "the other association is served")
	require.Eventually(t, func() bool { return b.Used() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the aborted association's memory released (the other holds none once delivered)")
}

// TestRFC9260_6_2_SACKForDroppedData: a DATA chunk dropped for lack of
// room is answered at once with a SACK carrying the current window and
// showing only the DATA accepted (RFC 9260 §6.2), so that the sender
// learns of the window it overran instead of waiting for T3-rtx.
func TestRFC9260_6_2_SACKForDroppedData(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4, ReceiveBuffer: 1500, SACKDelay: maxSACKDelay, memBudget: membudget.New(1 << 20)})
	// Not started: what is accepted stays queued and holds the window.
	msg := make([]byte, 1000)
	d := wire.Data{TSN: 100, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: msg}
	peer.send(tag, d.Append(nil))
	_, c := peer.recv(wire.ChunkSACK)
	s, err := wire.ParseSACK(c, nil, nil)
	require.NoError(t, err)
	require.Equal(t, uint32(100), s.CumTSNAck, "the first DATA, acknowledged at once (§5.1)")

	d.TSN = 101
	peer.send(tag, d.Append(nil))
	_, c = peer.recv(wire.ChunkSACK)
	s, err = wire.ParseSACK(c, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, uint32(100), s.CumTSNAck, "TSN 101 dropped: not acknowledged")
	assert.Empty(t, s.Gaps)
	assert.Less(t, s.ARwnd, uint32(len(msg)), "the current window, too small for it")
	assert.Equal(t, uint64(1), a.Stats().ReceiveDropped)

	// Once the user takes the queued message, the window reopens and the
	// retransmission is accepted.
	rec := newRec()
	a.Start(rec.fn, func(error) {})
	rec.wait(t, 1)
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.rwnd() >= 1000
	}, 10*time.Second, time.Millisecond)
	peer.send(tag, d.Append(nil))
	rec.wait(t, 2)
}

// TestProcessMemoryReturnsToBaseline: associations charged to the
// process-wide budget (the default) give back every octet once they end:
// messages delivered, fragments held at the abort, messages queued.
func TestProcessMemoryReturnsToBaseline(t *testing.T) {
	base := procstat.Memory().Used
	peer, _, tag, done, rec := floodPeer(t, &Config{Streams: 4})
	assert.Greater(t, procstat.Memory().Limit, int64(0))
	// A fragmented message delivered, then fragments held, then an ABORT.
	d1 := wire.Data{TSN: 100, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, UserData: make([]byte, 3000)}
	d2 := wire.Data{TSN: 101, StreamID: 1, PPID: 16, Unordered: true, Ending: true, UserData: make([]byte, 3000)}
	peer.send(tag, d1.Append(nil), d2.Append(nil))
	rec.wait(t, 1)
	sendFragments(peer, tag, 102, 100, 500, true)
	require.Eventually(t, func() bool { return procstat.Memory().Used >= base+100*int64(cost(500)) }, 10*time.Second, time.Millisecond,
		"the held fragments are charged to the process")
	sendFragments(peer, tag, 202, 1, 500, true) // B after a fragment without E: a violation
	requireAbort(t, peer, done, "does not continue", errFragmentSequence)
	require.Eventually(t, func() bool { return procstat.Memory().Used == base }, 10*time.Second, 10*time.Millisecond,
		"Process.Used back to %d (now %d)", base, procstat.Memory().Used)
}

// orderedWork pushes n whole ordered messages of one stream whose SSNs
// arrive in reverse (each waits for all before it), then the first, and
// returns the work counter.
func orderedWork(t *testing.T, n int) uint64 {
	t.Helper()
	r := newReassembler(reassemblyConfig{Streams: 1, Budget: 1 << 30, MaxHeldFragments: 1 << 20})
	one := []byte{1}
	for i := n; i >= 0; i-- {
		d := wire.Data{TSN: 1000 + uint32(n-i), SSN: uint16(i), Beginning: true, Ending: true, UserData: one}
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	got := 0
	for _, ok := r.Next(); ok; _, ok = r.Next() {
		got++
	}
	require.Equal(t, n, got, "all but the first (delivered from the packet), in order")
	return r.work
}

// TestReassemblyOrderedWorkLinear_RFC9260_6_5: ordered messages that wait
// for an earlier SSN cost work linear in their count whatever their
// order (they were a sorted slice, each insertion moving the later ones).
func TestReassemblyOrderedWorkLinear_RFC9260_6_5(t *testing.T) {
	w1, w2 := orderedWork(t, 10_000), orderedWork(t, 20_000)
	t.Logf("10,000 messages %d steps, 20,000 %d steps", w1, w2)
	assert.Less(t, float64(w2)/float64(w1), 2.5)
}
