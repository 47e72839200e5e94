package rdmap

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp/llptest"
)

// waitIdleTx waits until the endpoint's start is over (the transmit loop
// sent the RTR and ended): the send queue is idle.
func waitIdleTx(t *testing.T, e *Endpoint) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.txReady && !e.issuing && !e.txRunning
	}, 5*time.Second, time.Millisecond)
}

// An unsignaled Send posted to an idle endpoint is issued by the poster
// without entering the queues (issueQuickLocked): it has reached the peer
// when PostSend returns, makes no completion (RFC 5040 §5.5: a successful
// unsignaled request reports nothing), is counted, and its request went
// back to the free list; so does one posted alone through PostSends.
func TestQuickIssue_UnsignaledIdle(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	bufs := [][]byte{make([]byte, 64), make([]byte, 64)}
	for i, b := range bufs {
		require.NoError(t, p.b.PostRecv(RecvWR{ID: uint64(i), Buf: b}))
	}
	waitIdleTx(t, p.a)
	require.NoError(t, p.a.PostSend(SendWR{ID: 1, Op: WRSend, Local: []byte("quick"), Unsignaled: true}))
	p.a.mu.Lock()
	assert.False(t, p.a.quick)
	assert.False(t, p.a.issuing)
	assert.Zero(t, p.a.order.Len(), "never queued")
	free := len(p.a.freeSend)
	p.a.mu.Unlock()
	assert.Equal(t, 1, free, "the request is back on the free list")
	c := poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "quick", string(bufs[c.WRID][:c.Length]))
	_, ok := p.cqA.TryPoll()
	assert.False(t, ok, "no completion for a successful unsignaled Send")

	n, err := p.a.PostSends([]SendWR{{ID: 2, Op: WRSend, Local: []byte("again"), Unsignaled: true}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	c = poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "again", string(bufs[c.WRID][:c.Length]))
	_, ok = p.cqA.TryPoll()
	assert.False(t, ok)
	p.a.mu.Lock()
	assert.Equal(t, free, len(p.a.freeSend), "the same request, reused")
	p.a.mu.Unlock()

	// Inline (the caller may reuse its buffer once the post returns): the
	// quick issue has handed the data to the LLP by then, no copy needed.
	require.NoError(t, p.b.PostRecv(RecvWR{ID: 0, Buf: bufs[0]}))
	msg := []byte("inline")
	require.NoError(t, p.a.PostSend(SendWR{Op: WRSend, Local: msg, Inline: true, Unsignaled: true}))
	copy(msg, "XXXXXX")
	c = poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, "inline", string(bufs[c.WRID][:c.Length]))
	assert.Equal(t, uint64(3), p.a.Stats().Sent[OpSend])
}

// Signaled, larger and quick requests posted together from several
// goroutines keep each poster's order (RFC 5040 §5.5 rule 13), and every
// signaled one completes, in submission order per poster (rule 15).
func TestQuickIssue_MixedPostersKeepOrder(t *testing.T) {
	p := newPair(t, EndpointConfig{SQDepth: 1024}, EndpointConfig{RQDepth: 1024})
	const writers, each = 3, 120
	bufs := make([][]byte, writers*each)
	for i := range bufs {
		bufs[i] = make([]byte, inlineIssueMax+16)
		require.NoError(t, p.b.PostRecv(RecvWR{ID: uint64(i), Buf: bufs[i]}))
	}
	waitIdleTx(t, p.a)
	var wg sync.WaitGroup
	signaled := make([]int, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				msg := []byte{byte(w), byte(i)}
				if i%40 == 39 {
					msg = append(msg, make([]byte, inlineIssueMax+1)...) // through the loop
				}
				unsig := i%3 != 0
				if !unsig {
					signaled[w]++
				}
				assert.NoError(t, p.a.PostSend(SendWR{ID: uint64(w<<16 | i), Op: WRSend, Local: msg, Unsignaled: unsig}))
			}
		}()
	}
	wg.Wait()
	next := make([]int, writers)
	for range writers * each {
		c := poll(t, p.rcqB)
		require.NoError(t, c.Err)
		b := bufs[c.WRID][:c.Length]
		w, i := int(b[0]), int(b[1])
		assert.Equal(t, next[w], i, "writer %d's Sends arrive in its order", w)
		next[w] = i + 1
	}
	last := make([]int, writers)
	for i := range last {
		last[i] = -1
	}
	total := 0
	for _, n := range signaled {
		total += n
	}
	for range total {
		c := poll(t, p.cqA)
		require.NoError(t, c.Err)
		w, i := int(c.WRID>>16), int(c.WRID&0xffff)
		assert.Zero(t, i%3, "only signaled requests complete")
		assert.Greater(t, i, last[w], "writer %d's completions in its order", w)
		last[w] = i
	}
	_, ok := p.cqA.TryPoll()
	assert.False(t, ok)
}

// A quick Send that the LLP refuses is not lost: the endpoint goes down
// with the LLP's error and the Send completes flushed on the send CQ
// (RFC 5040 §5.4), unsignaled or not.
func TestQuickIssue_LLPFailureFlushes(t *testing.T) {
	a, b := llptest.NewPair()
	fs := &failingStream{Pipe: a}
	ep, err := NewDevice(DeviceOptions{}).AllocPD().NewEndpoint(fs, EndpointConfig{})
	require.NoError(t, err)
	peer, err := NewDevice(DeviceOptions{}).AllocPD().NewEndpoint(b, EndpointConfig{})
	require.NoError(t, err)
	require.NoError(t, ep.Start())
	require.NoError(t, peer.Start())
	t.Cleanup(func() {
		_ = ep.Abort()
		_ = peer.Abort()
		waitDone(t, ep)
		waitDone(t, peer)
	})
	waitIdleTx(t, ep)
	fs.broken.Store(true)
	require.NoError(t, ep.PostSend(SendWR{ID: 7, Op: WRSend, Local: []byte("x"), Unsignaled: true}))
	c := poll(t, ep.SendCQ())
	assert.Equal(t, uint64(7), c.WRID)
	assert.Equal(t, WRSend, c.Op)
	assert.Equal(t, StatusFlushed, c.Status)
	require.ErrorIs(t, c.Err, ErrFlushed)
	assert.ErrorIs(t, c.Err, errLost)
	waitDone(t, ep)
	assert.ErrorIs(t, ep.Err(), errLost)
	assert.ErrorIs(t, ep.PostSend(SendWR{Op: WRSend, Local: []byte("y"), Unsignaled: true}), ErrClosed)
}

// Close waits for a quick issue in flight, as for a queued request: the
// Send posted before it is on the wire before the endpoint goes down
// (nothing posted is lost, and the terminator never has to wait for the
// send or abort the stream under it), though it is in neither queue.
func TestQuickIssue_CloseWaitsForIt(t *testing.T) {
	a, b := llptest.NewPair()
	gate := &gatedStream{Pipe: a, entered: make(chan struct{}), release: make(chan struct{})}
	ep, err := NewDevice(DeviceOptions{}).AllocPD().NewEndpoint(gate, EndpointConfig{})
	require.NoError(t, err)
	peer, err := NewDevice(DeviceOptions{}).AllocPD().NewEndpoint(b, EndpointConfig{})
	require.NoError(t, err)
	buf := make([]byte, 16)
	require.NoError(t, peer.PostRecv(RecvWR{ID: 3, Buf: buf}))
	require.NoError(t, ep.Start())
	require.NoError(t, peer.Start())
	t.Cleanup(func() {
		_ = ep.Abort()
		_ = peer.Abort()
		waitDone(t, ep)
		waitDone(t, peer)
	})
	waitIdleTx(t, ep)
	gate.armed.Store(true)
	posted := make(chan error, 1)
	go func() { posted <- ep.PostSend(SendWR{Op: WRSend, Local: []byte("last"), Unsignaled: true}) }()
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
	c := poll(t, peer.RecvCQ())
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
