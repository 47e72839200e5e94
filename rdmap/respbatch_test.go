package rdmap

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
)

// responderPair is a pair whose B end, the responder, sends through a
// batchPipe whose first SendSegment waits for gate; A posts the Reads.
func responderPair(t *testing.T, gate chan struct{}) (a, b *Endpoint, bp *batchPipe, src, sink *MR) {
	dev := newDevice(0, 0)
	pdA, pdB := dev.AllocPD(), dev.AllocPD()
	pa, pb := llptest.NewPair()
	bp = &batchPipe{Pipe: pb, gate: gate}
	var err error
	a, err = pdA.NewEndpoint(pa, EndpointConfig{ORD: 16})
	require.NoError(t, err)
	b, err = pdB.NewEndpoint(bp, EndpointConfig{IRD: 16})
	require.NoError(t, err)
	srcBuf := make([]byte, 1<<20)
	for i := range srcBuf {
		srcBuf[i] = byte(i*5 + i>>9)
	}
	src, err = pdB.Register(srcBuf, RemoteRead)
	require.NoError(t, err)
	sink, err = pdA.Register(make([]byte, 1<<20), LocalWrite)
	require.NoError(t, err)
	require.NoError(t, a.Start())
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { _ = b.Close(ctx); close(done) }()
		_ = a.Close(ctx)
		<-done
		waitDone(t, a)
		waitDone(t, b)
	})
	return a, b, bp, src, sink
}

// TestReadResponsesQueuedLeaveTogether (RFC 5040 §5.3, §6.1): Read
// Responses that the responder has queued at once go to a batching LLP
// with their last segments held (llp.Batcher), so that one write carries
// them all; the last of the queue sends what is held. The first Read's
// response is sent while the other seven wait (the gate), alone, as the
// queue was empty when it started. Every Read completes with its data.
func TestReadResponsesQueuedLeaveTogether(t *testing.T) {
	gate := make(chan struct{})
	a, b, bp, src, sink := responderPair(t, gate)
	wrs := reads(8, src, sink)
	_, err := a.PostSend(wrs[0])
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the first response waits at the gate
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.respBusy && b.irq.Len() == 0
	}, 5*time.Second, time.Millisecond)
	_, err = a.PostSend(wrs[1:]...)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.irq.Len() == 7
	}, 5*time.Second, time.Millisecond, "seven Read Requests queued behind the first response")
	close(gate)
	for i := range 8 {
		c := poll(t, a.Config().SendCQ)
		require.NoError(t, c.Err)
		require.Equal(t, uint64(i), c.WRID)
		assert.Equal(t, src.Bytes()[i*4096:(i+1)*4096], sink.Bytes()[i*4096:(i+1)*4096], "Read %d", i)
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	assert.Equal(t, []int{1, 7}, bp.lastTagged, "the first response alone, then the seven queued in one write")
}

// TestReadResponseNotHeldAlone: a Read Response with nothing queued behind
// it is not left in the LLP: each of Reads posted one at a time, each
// waiting for its completion, is answered by a write of its own.
func TestReadResponseNotHeldAlone(t *testing.T) {
	a, _, bp, src, sink := responderPair(t, nil)
	for i, wr := range reads(4, src, sink) {
		_, err := a.PostSend(wr)
		require.NoError(t, err)
		c := poll(t, a.Config().SendCQ)
		require.NoError(t, c.Err)
		require.Equal(t, uint64(i), c.WRID)
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	assert.Equal(t, []int{1, 1, 1, 1}, bp.lastTagged)
	assert.Empty(t, bp.held, "nothing left held")
}
