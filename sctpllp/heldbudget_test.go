package sctpllp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// TestReorder_AssociationBudget_RFC5043_10: a peer that leaves a DDP-SSN
// gap on each of many streams held up to MaxHeldBytes on every one of them
// (64 MiB x 4096 streams). The streams of one association now share
// MaxHeldAssocBytes: the stream whose early chunk does not fit is
// terminated with ErrHeldLimit, the others keep theirs, and the budget
// comes back as sessions end.
func TestReorder_AssociationBudget_RFC5043_10(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{MaxHeldBytes: 1 << 20, MaxHeldAssocBytes: 10000, KeepIdle: true})
	var hs []*recHandler
	for sid := uint16(1); sid <= 3; sid++ {
		_, h := passiveSession(t, a, ft, sid)
		hs = append(hs, h)
	}
	early := make([]byte, 4000)
	ft.injectSeg(1, 5, early) // DDP-SSN 1..4 missing: held
	ft.injectSeg(2, 5, early)
	require.Eventually(t, func() bool { return a.Stats().HeldBytes >= 8000 }, 5*time.Second, time.Millisecond)
	ft.injectSeg(3, 5, early) // 12,000 > 10,000: stream 3 ends
	err := hs[2].waitClosed(t)
	require.ErrorIs(t, err, ErrHeldLimit)
	assert.ErrorIs(t, err, ErrProtocol)
	assert.Equal(t, int64(2*(4000+pmtu.DDPSSNLen)), a.Stats().HeldBytes, "streams 1 and 2 keep theirs (DDP-SSN included)")
	assert.Zero(t, hs[0].count())

	// Filling stream 1's gap delivers and gives its share back.
	for ssn := uint16(1); ssn <= 4; ssn++ {
		ft.injectSeg(1, ssn, []byte{1})
	}
	hs[0].waitCount(t, 5)
	require.Eventually(t, func() bool { return a.Stats().HeldBytes == 4000+pmtu.DDPSSNLen }, 5*time.Second, time.Millisecond)
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
	require.ErrorIs(t, err, ErrHeldLimit)
	assert.Contains(t, err.Error(), "missing for 200ms")
	moving.waitCount(t, 8)
	select {
	case err := <-moving.closed:
		t.Fatalf("stream 2 ended: %v", err)
	default:
	}
	st := a.Stats()
	assert.Equal(t, uint64(1), st.GapTimeouts)
	assert.Zero(t, st.HeldBytes, "stream 1's chunks freed")
}
