package kernel

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// RFC 5043 §10: "refrain from sending more than 32767 Data Chunks for a
// single stream without acknowledgment". The window admits limit chunks per
// stream, then only after an idle probe (everything acknowledged).
func TestChunkWindowRFC5043Sec10(t *testing.T) {
	w := newChunkWindow(4, 3)
	probes := 0
	busy := func() (bool, error) { probes++; return false, nil }
	idle := func() (bool, error) { probes++; return true, nil }

	for i := 0; i < 3; i++ {
		ok, err := w.admit(1, busy)
		require.NoError(t, err)
		require.True(t, ok, "chunk %d within the window", i)
		w.sent(1)
	}
	assert.Zero(t, probes, "no probe while below the limit")
	assert.Equal(t, 3, w.outstanding(1))

	// Another stream below the limit is admitted while nothing waits.
	ok, err := w.admit(2, busy)
	require.NoError(t, err)
	assert.True(t, ok)
	w.sent(2)
	assert.Zero(t, probes)

	// Stream 1 is full while chunks are unacknowledged.
	ok, err = w.admit(1, busy)
	require.NoError(t, err)
	assert.False(t, ok, "fourth chunk held while the association is busy")
	assert.Equal(t, 1, probes)
	// While stream 1 waits, the other streams drain too (liveness: the
	// association must reach the idle point).
	ok, err = w.admit(2, busy)
	require.NoError(t, err)
	assert.False(t, ok, "stream 2 held while stream 1 waits for the idle point")
	assert.Equal(t, 2, probes)

	// Everything acknowledged: every stream's count restarts.
	ok, err = w.admit(1, idle)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, w.outstanding(1))
	assert.Zero(t, w.outstanding(2))
}

func TestChunkWindowProbeError(t *testing.T) {
	w := newChunkWindow(1, 1)
	w.sent(0)
	boom := errors.New("probe failed")
	ok, err := w.admit(0, func() (bool, error) { return true, boom })
	assert.ErrorIs(t, err, boom)
	assert.False(t, ok)
	assert.Equal(t, 1, w.outstanding(0), "a failed probe resets nothing")
}

func TestChunkWindowCountSaturates(t *testing.T) {
	w := newChunkWindow(1, 2)
	for range 5 {
		w.sent(0) // control chunks past the window are never refused
	}
	assert.Equal(t, 2, w.outstanding(0))
}

func TestChunkWindowSignalWakesAllWaiters(t *testing.T) {
	w := newChunkWindow(1, 1)
	a, b := w.waitCh(), w.waitCh()
	w.signal()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		case <-time.After(time.Second):
			t.Fatal("waiter not woken")
		}
	}
	select {
	case <-w.waitCh():
		t.Fatal("a fresh wait channel must be open")
	default:
	}
}

// BenchmarkChunkWindow measures the RFC 5043 §10 bookkeeping per segment
// (admit + sent, one idle probe per window).
func BenchmarkChunkWindow(b *testing.B) {
	w := newChunkWindow(64, contract.MaxOutstandingSegments)
	idle := func() (bool, error) { return true, nil }
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sid := uint16(i & 63)
		if ok, _ := w.admit(sid, idle); ok {
			w.sent(sid)
		}
	}
}
