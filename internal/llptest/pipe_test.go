package llptest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an llp.Handler that keeps copies of what it receives.
type recorder struct {
	mu       sync.Mutex
	segs     [][]byte
	closed   chan error
	failOn   int // HandleSegment returns an error for the failOn-th segment (1-based), 0: never
	received int
}

func newRecorder() *recorder { return &recorder{closed: make(chan error, 1)} }

func (r *recorder) HandleSegment(seg []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received++
	r.segs = append(r.segs, append([]byte(nil), seg...))
	if r.failOn != 0 && r.received == r.failOn {
		return errors.New("handler refuses")
	}
	return nil
}

func (r *recorder) HandleClosed(err error) { r.closed <- err }

func (r *recorder) snapshot() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.segs...)
}

func TestPipeDeliversInOrderWithBoundaries(t *testing.T) {
	a, b := NewPair()
	rb := newRecorder()
	b.Start(rb)
	ra := newRecorder()
	a.Start(ra)

	var want [][]byte
	for i := 0; i < 1000; i++ {
		hdr := []byte{byte(i), byte(i >> 8)}
		payload := bytes.Repeat([]byte{byte(i)}, i%100)
		require.NoError(t, a.SendSegment(hdr, payload))
		want = append(want, append(append([]byte(nil), hdr...), payload...))
	}
	require.NoError(t, a.Close())
	require.NoError(t, <-rb.closed, "graceful close reports nil")
	assert.Equal(t, want, rb.snapshot())

	info := a.Info()
	assert.Equal(t, uint64(1000), info.SegmentsSent)
	assert.Equal(t, uint64(1000), b.Info().SegmentsReceived)
	require.NoError(t, b.Close())
	require.NoError(t, <-ra.closed)
}

func TestPipeRejectsSegmentLargerThanMULPDU(t *testing.T) {
	a, b := NewPair()
	a.SetMULPDU(600)
	err := a.SendSegment(make([]byte, 18), make([]byte, 600-18+1))
	require.ErrorIs(t, err, llp.ErrSegmentTooLarge)
	require.NoError(t, a.SendSegment(make([]byte, 18), make([]byte, 600-18)))
	assert.Equal(t, 600, a.MULPDU())
	_ = a.Abort()
	_ = b.Abort()
}

func TestPipeFlowControlBlocksSender(t *testing.T) {
	a, b := newPairDepth(2)
	require.NoError(t, a.SendSegment([]byte{1}, nil))
	require.NoError(t, a.SendSegment([]byte{2}, nil))
	sent := make(chan error, 1)
	go func() { sent <- a.SendSegment([]byte{3}, nil) }()
	select {
	case <-sent:
		t.Fatal("third segment accepted with a full queue of 2")
	case <-time.After(50 * time.Millisecond):
	}
	rb := newRecorder()
	b.Start(rb)
	require.NoError(t, <-sent)
	require.NoError(t, a.Close())
	require.NoError(t, <-rb.closed)
	assert.Len(t, rb.snapshot(), 3)
	require.NoError(t, b.Abort())
}

func TestPipeAbortEndsBothDirections(t *testing.T) {
	a, b := NewPair()
	ra, rb := newRecorder(), newRecorder()
	a.Start(ra)
	b.Start(rb)
	require.NoError(t, a.Abort())
	require.ErrorIs(t, <-ra.closed, llp.ErrAborted)
	// b's receive queue is a's send queue: aborted too.
	require.ErrorIs(t, <-rb.closed, llp.ErrAborted)
	require.ErrorIs(t, a.SendSegment([]byte{1}, nil), llp.ErrAborted)
	require.NoError(t, b.Abort())
	<-a.Done()
	<-b.Done()
}

func TestPipeDropsAfterHandlerError(t *testing.T) {
	// RFC 5041 §7.1: after an error DDP silently drops further segments.
	a, b := NewPair()
	rb := newRecorder()
	rb.failOn = 2
	b.Start(rb)
	for i := 0; i < 5; i++ {
		require.NoError(t, a.SendSegment([]byte{byte(i)}, nil))
	}
	require.NoError(t, a.Close())
	require.NoError(t, <-rb.closed)
	assert.Equal(t, [][]byte{{0}, {1}}, rb.snapshot())
	require.NoError(t, b.Abort())
}

func TestPipeTapAndInject(t *testing.T) {
	a, b := NewPair()
	var tapped [][]byte
	a.SetTap(func(seg []byte) { tapped = append(tapped, append([]byte(nil), seg...)) })
	rb := newRecorder()
	b.Start(rb)
	require.NoError(t, a.SendSegment([]byte{0xAA}, []byte{0xBB}))
	big := make([]byte, 4*defaultMULPDU)
	require.NoError(t, a.Inject(big), "Inject bypasses MULPDU")
	require.NoError(t, a.Close())
	require.NoError(t, <-rb.closed)
	assert.Equal(t, [][]byte{{0xAA, 0xBB}}, tapped)
	require.Len(t, rb.snapshot(), 2)
	assert.Len(t, rb.snapshot()[1], len(big))
	require.NoError(t, b.Abort())
}

func TestPipeStartTwicePanics(t *testing.T) {
	a, b := NewPair()
	r := newRecorder()
	a.Start(r)
	assert.Panics(t, func() { a.Start(r) })
	require.NoError(t, a.Abort())
	require.NoError(t, b.Abort())
	<-a.Done()
}
