package rdmap

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// responderPair is a pair whose B end, the responder, sends through a
// batchPipe whose first SendSegment waits for gate; A posts the Reads.
func responderPair(t *testing.T, gate chan struct{}) (a, b *Endpoint, bp *batchPipe, src, sink *MR) {
	return pairBatching(t, EndpointConfig{ORD: 16}, EndpointConfig{IRD: 16}, true, gate)
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
	requireReads(t, a, src, sink, 8)
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
