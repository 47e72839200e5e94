package rdmap

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// An unsignaled Send posted to an idle endpoint is issued by the poster
// without entering the queues (issueQuickLocked): it has reached the peer
// when PostSend returns, makes no completion (RFC 5040 §5.5: a successful
// unsignaled request reports nothing), is counted, and takes no request
// from the free list (the caller's work request is issued in place); so
// does one posted alone through PostSends.
func TestQuickIssue_UnsignaledIdle(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	bufs := [][]byte{make([]byte, 64), make([]byte, 64)}
	for i, b := range bufs {
		require.NoError(t, p.b.PostRecv(uint64(i), b))
	}
	waitIdleTx(t, p.a)
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Local: []byte("quick"), Unsignaled: true}))
	p.a.mu.Lock()
	assert.False(t, p.a.quick)
	assert.False(t, p.a.issuing)
	assert.Zero(t, p.a.order.Len(), "never queued")
	free, made := len(p.a.freeSend), p.a.issuingReq
	p.a.mu.Unlock()
	assert.Zero(t, free, "no request was made or taken")
	assert.Nil(t, made)
	c := poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "quick", string(bufs[c.WRID][:c.Length]))
	_, ok := p.cqA.tryPoll()
	assert.False(t, ok, "no completion for a successful unsignaled Send")

	n, err := p.a.PostSend([]SendWR{{ID: 2, Op: WRSend, Local: []byte("again"), Unsignaled: true}}...)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	c = poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "again", string(bufs[c.WRID][:c.Length]))
	_, ok = p.cqA.tryPoll()
	assert.False(t, ok)
	p.a.mu.Lock()
	assert.Zero(t, len(p.a.freeSend), "no request was made or taken")
	p.a.mu.Unlock()

	// Inline (the caller may reuse its buffer once the post returns): the
	// quick issue has handed the data to the LLP by then, no copy needed.
	require.NoError(t, p.b.PostRecv(0, bufs[0]))
	msg := []byte("inline")
	require.NoError(t, p.a.postSend1(SendWR{Op: WRSend, Local: msg, Inline: true, Unsignaled: true}))
	copy(msg, "XXXXXX")
	c = poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "inline", string(bufs[c.WRID][:c.Length]))
	assert.Equal(t, uint64(3), p.a.Stats().Sent[iwarp.RDMAPOpSend])
}

// A quick Send that the LLP refuses is not lost: the endpoint goes down
// with the LLP's error and the Send completes flushed on the send CQ
// (RFC 5040 §5.4), unsignaled or not.
func TestQuickIssue_LLPFailureFlushes(t *testing.T) {
	a, b := llptest.NewPair()
	fs := &failingStream{Pipe: a}
	ep, _ := startOver(t, fs, b, nil)
	waitIdleTx(t, ep)
	fs.broken.Store(true)
	require.NoError(t, ep.postSend1(SendWR{ID: 7, Op: WRSend, Local: []byte("x"), Unsignaled: true}))
	c := poll(t, ep.Config().SendCQ)
	assert.Equal(t, uint64(7), c.WRID)
	assert.Equal(t, WRSend, c.Op)
	assert.ErrorIs(t, c.Err, ErrFlushed)
	require.ErrorIs(t, c.Err, ErrFlushed)
	assert.ErrorIs(t, c.Err, errLost)
	waitDone(t, ep)
	assert.ErrorIs(t, ep.Err(), errLost)
	assert.ErrorIs(t, ep.postSend1(SendWR{Op: WRSend, Local: []byte("y"), Unsignaled: true}), ErrClosed)
}

// Close waits for a quick issue in flight, as for a queued request: the
// Send posted before it is on the wire before the endpoint goes down
// (nothing posted is lost, and the terminator never has to wait for the
// send or abort the stream under it), though it is in neither queue.
func TestQuickIssue_CloseWaitsForIt(t *testing.T) {
	a, b := llptest.NewPair()
	gate := &gatedStream{Pipe: a, entered: make(chan struct{}), release: make(chan struct{})}
	buf := make([]byte, 16)
	ep, peer := startOver(t, gate, b, func(_, peer *Endpoint) {
		require.NoError(t, peer.PostRecv(3, buf))
	})
	waitIdleTx(t, ep)
	gate.armed.Store(true)
	posted := make(chan error, 1)
	go func() { posted <- ep.postSend1(SendWR{Op: WRSend, Local: []byte("last"), Unsignaled: true}) }()
	<-gate.entered // the Send is in the LLP's hands, in neither queue
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- ep.Close(ctx)
	}()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a posted Send was being issued", err)
	case <-time.After(50 * time.Millisecond):
	}
	ep.mu.Lock()
	st := ep.state
	ep.mu.Unlock()
	assert.Equal(t, stateClosing, st, "Close waits for the issue before it takes the endpoint down")
	close(gate.release)
	require.NoError(t, <-posted)
	c := poll(t, peer.Config().RecvCQ)
	require.NoError(t, c.Err)
	assert.Equal(t, "last", string(buf[:c.Length]))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = peer.Close(ctx)
	}()
	require.NoError(t, <-closed)
}

// gatedStream is an LLP stream whose first send after it is armed
// announces itself (entered) and waits for release.
type gatedStream struct {
	*llptest.Pipe
	armed, used atomic.Bool
	entered     chan struct{}
	release     chan struct{}
}

func (g *gatedStream) SendSegment(hdr, payload []byte) error {
	if g.armed.Load() && !g.used.Swap(true) {
		close(g.entered)
		<-g.release
	}
	return g.Pipe.SendSegment(hdr, payload)
}
