package sctpllp

import (
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/reseq"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// TestReorder_AssociationShare_RFC5043_10: a peer that leaves a DDP-SSN gap
// on each of many streams held up to MaxHeldBytes on every one of them.
// The streams of one association now share MaxHeldAssocBytes, charged as
// held: the chunk that does not fit aborts the association (errMemoryShare
// in Err and in every session's end, counted), and the budget is given
// back. A gap filled in time gives its share back at once.
func TestReorder_AssociationShare_RFC5043_10(t *testing.T) {
	b := membudget.New(64 << 20)
	early := make([]byte, 4000)
	one := reseq.EarlyCost + reseq.MinRing*reseq.HeldEntryCost + reseq.BufCost(len(early)+2)
	a, ft := newFakeAssoc(t, Config{MaxHeldBytes: 1 << 20, MaxHeldAssocBytes: 2*one + one/2, Budget: b})
	var hs []*recHandler
	for sid := uint16(1); sid <= 3; sid++ {
		_, h := passiveSession(t, a, ft, sid)
		hs = append(hs, h)
	}
	ft.injectSeg(1, 5, early) // DDP-SSN 1..4 missing: held
	assert.Equal(t, int64(one), a.Stats().HeldBytes, "charged as held: 4 KiB buffer, header, ring, bookkeeping")
	for ssn := uint16(1); ssn <= 4; ssn++ {
		ft.injectSeg(1, ssn, []byte{1})
	}
	hs[0].waitCount(t, 5)
	assert.Equal(t, int64(reseq.EarlyCost+reseq.MinRing*reseq.HeldEntryCost), a.Stats().HeldBytes, "the buffer given back, the short ring kept")

	ft.injectSeg(1, 7, early)
	ft.injectSeg(2, 5, early)
	assert.Zero(t, a.Stats().ShareAborts)
	ft.injectSeg(3, 5, early) // beyond the share: the association is aborted
	<-a.Done()
	for _, h := range hs {
		err := h.waitClosed(t)
		require.ErrorIs(t, err, errMemoryShare)
		assert.ErrorIs(t, err, llp.ErrAborted)
	}
	require.ErrorIs(t, a.Err(), errMemoryShare)
	assert.ErrorIs(t, a.Err(), membudget.ErrExhausted)
	assert.ErrorIs(t, a.Err(), llp.ErrAborted)
	st := a.Stats()
	assert.Equal(t, uint64(1), st.ShareAborts)
	assert.Zero(t, st.HeldBytes)
	assert.Zero(t, b.Used(), "everything given back")
	assert.LessOrEqual(t, b.Peak(), int64(2*one+one/2))
}

// TestReorder_GapTimer_RFC5043_10: a DDP-SSN gap that stays open for
// MaxGapTime ends the stream and frees what it held; a gap that closes in
// time, or moves on, does not.
func TestReorder_GapTimer_RFC5043_10(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{MaxGapTime: 200 * time.Millisecond, KeepIdle: true})
	_, stuck := passiveSession(t, a, ft, 1)
	_, moving := passiveSession(t, a, ft, 2)
	ft.injectSeg(1, 3, make([]byte, 100)) // DDP-SSN 1 and 2 never come
	for ssn := uint16(2); ssn <= 8; ssn += 2 {
		// Stream 2: each gap is filled within 100 ms, a new one opens.
		ft.injectSeg(2, ssn, []byte{1})
		time.Sleep(80 * time.Millisecond)
		ft.injectSeg(2, ssn-1, []byte{1})
	}
	err := stuck.waitClosed(t)
	require.ErrorIs(t, err, errHeldLimit)
	assert.Contains(t, err.Error(), "missing for 200ms")
	moving.waitCount(t, 8)
	select {
	case err := <-moving.closed:
		t.Fatalf("stream 2 ended: %v", err)
	default:
	}
	st := a.Stats()
	assert.Equal(t, uint64(1), st.GapTimeouts)
	assert.Equal(t, int64(reseq.EarlyCost+reseq.MinRing*reseq.HeldEntryCost), st.HeldBytes, "stream 1's chunks freed; stream 2 keeps its short ring")
}

// TestHeld_WithdrawnInitiateFreesQueue: segments that follow an Initiate
// are queued (and charged) for the ULP's decision; when the initiator
// withdraws it with a Terminate before the decision (RFC 5043 §6.6), no
// Start will ever take them: they are freed at once, not at the
// association's end.
func TestHeld_WithdrawnInitiateFreesQueue(t *testing.T) {
	b := membudget.New(1 << 20)
	a, ft := newFakeAssoc(t, Config{Budget: b})
	ft.injectCtl(4, ddpchunk.Control{SSN: 0, Function: funcInitiate})
	ft.injectSeg(4, 1, make([]byte, 300))
	ft.injectSeg(4, 2, make([]byte, 300))
	assert.Equal(t, int64(2*(reseq.BufCost(300)+queueEntryCost)), a.Stats().HeldBytes)
	ft.injectCtl(4, ddpchunk.Control{SSN: 3, Function: funcTerminate})
	require.Eventually(t, func() bool { return b.Used() == 0 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, a.Stats().HeldBytes)
}
