package rdmap

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// batchPipe is an llp.Batcher over an llptest.Pipe with MPA's semantics:
// SendSegmentMore copies hdr and keeps payload by reference until a
// SendSegment or Flush sends everything held, in order, as one "write",
// whose segments it records.
type batchPipe struct {
	*llptest.Pipe
	mu     sync.Mutex
	held   [][2][]byte
	writes [][]iwarpwire.DDPUntaggedHeader // per write, the untagged segments' headers
	kinds  []byte                          // every segment in order: R a Read Request, W tagged, S a Send, . other
	// afterWrite, if set, runs once a write of segs segments is out,
	// before SendSegment or Flush returns; the payloads held are then read
	// again (as a capture recording the write does) and changed counts
	// those that differ from what was sent: the LLP may read them until
	// it returns.
	afterWrite func(segs int)
	changed    int
	// gate, if set, holds the first SendSegment until it is closed.
	gate chan struct{}
	// lastTagged counts, per write, the tagged segments with L set: the
	// messages (Writes, Read Responses) whose end it carried.
	lastTagged []int
}

var _ llp.Batcher = (*batchPipe)(nil)

func (b *batchPipe) SendSegmentMore(hdr, payload []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = append(b.held, [2][]byte{bytes.Clone(hdr), payload})
	return nil
}

func (b *batchPipe) SendSegment(hdr, payload []byte) error {
	b.mu.Lock()
	if g := b.gate; g != nil {
		b.gate = nil
		b.mu.Unlock()
		<-g
		b.mu.Lock()
	}
	defer b.mu.Unlock()
	b.held = append(b.held, [2][]byte{hdr, payload})
	return b.flushLocked()
}

func (b *batchPipe) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *batchPipe) flushLocked() error {
	if len(b.held) == 0 {
		return nil
	}
	var w []iwarpwire.DDPUntaggedHeader
	var sent [][]byte
	lastTagged := 0
	if b.afterWrite != nil {
		for _, s := range b.held {
			sent = append(sent, bytes.Clone(s[1]))
		}
	}
	for _, s := range b.held {
		kind := byte('W')
		if c := iwarpwire.DDPControl(s[0][0]); c.Tagged() && c.Last() {
			lastTagged++
		}
		if s[0][0]&0x80 == 0 { // untagged (RFC 5041 §4.3)
			kind = '.'
			h, _, err := iwarpwire.ParseDDPUntaggedHeader(append(bytes.Clone(s[0]), s[1]...))
			if err == nil {
				w = append(w, h)
				switch h.QN {
				case iwarpwire.RDMAPQNReadRequest:
					kind = 'R'
				case iwarpwire.RDMAPQNSend:
					kind = 'S'
				}
			}
		}
		b.kinds = append(b.kinds, kind)
		if err := b.Pipe.SendSegment(s[0], s[1]); err != nil {
			b.held = b.held[:0]
			return err
		}
	}
	if b.afterWrite != nil {
		b.afterWrite(len(b.held))
		for i, s := range b.held {
			if !bytes.Equal(s[1], sent[i]) {
				b.changed++
			}
		}
	}
	b.held = b.held[:0]
	b.writes = append(b.writes, w)
	b.lastTagged = append(b.lastTagged, lastTagged)
	return nil
}

func (b *batchPipe) Close() error {
	_ = b.Flush()
	return b.Pipe.Close()
}

// readRequestWrites returns, per write that carried Read Requests (QN 1),
// how many it carried.
func (b *batchPipe) readRequestWrites() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n []int
	for _, w := range b.writes {
		k := 0
		for _, h := range w {
			if h.QN == iwarpwire.RDMAPQNReadRequest && h.Last {
				k++
			}
		}
		if k > 0 {
			n = append(n, k)
		}
	}
	return n
}

// batchedPair is a pair whose A end sends through a batchPipe; B holds a
// source region, A a sink.
func batchedPair(t *testing.T, cfgA, cfgB EndpointConfig) (a, b *Endpoint, bp *batchPipe, src, sink *MR) {
	return pairBatching(t, cfgA, cfgB, false, nil)
}

// pairBatching is a pair whose A end (B's with responder) sends through a
// batchPipe whose first SendSegment waits for gate (if not nil); B holds
// a source region, A a sink.
func pairBatching(t *testing.T, cfgA, cfgB EndpointConfig, responder bool, gate chan struct{}) (a, b *Endpoint, bp *batchPipe, src, sink *MR) {
	dev := newDevice(0, 0)
	pdA, pdB := dev.AllocPD(), dev.AllocPD()
	pa, pb := llptest.NewPair()
	var la, lb llp.Stream = pa, pb
	if responder {
		bp = &batchPipe{Pipe: pb, gate: gate}
		lb = bp
	} else {
		bp = &batchPipe{Pipe: pa, gate: gate}
		la = bp
	}
	var err error
	a, err = pdA.NewEndpoint(la, cfgA)
	require.NoError(t, err)
	b, err = pdB.NewEndpoint(lb, cfgB)
	require.NoError(t, err)
	srcBuf := make([]byte, 1<<20)
	for i := range srcBuf {
		srcBuf[i] = byte(i*7 + i>>8)
	}
	src, err = pdB.Register(srcBuf, RemoteRead|RemoteWrite)
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

// requireReads waits for the completions of the first n Reads of reads,
// in order, and checks that each brought its 4 KiB of src into sink.
func requireReads(t *testing.T, a *Endpoint, src, sink *MR, n int) {
	t.Helper()
	for i := range n {
		c := poll(t, a.Config().SendCQ)
		require.NoError(t, c.Err)
		require.Equal(t, uint64(i), c.WRID)
		assert.Equal(t, src.Bytes()[i*4096:(i+1)*4096], sink.Bytes()[i*4096:(i+1)*4096], "Read %d", i)
	}
}

func reads(n int, src, sink *MR) []SendWR {
	wrs := make([]SendWR, n)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(i), Op: WRRead, Sink: sink, SinkOffset: uint64(i) * 4096, Length: 4096,
			RemoteSTag: src.STag(), RemoteTO: uint64(i) * 4096}
	}
	return wrs
}

// TestPostSends_ReadRequestsLeaveTogether: Read Requests posted in one
// PostSends reach the LLP as one write (held with SendSegmentMore, the
// last one sent with SendSegment), their messages in storage of their own
// while held; each completes with its data, in order (RFC 5040 §5.5
// rules 15, 19).
func TestPostSends_ReadRequestsLeaveTogether(t *testing.T) {
	a, _, bp, src, sink := batchedPair(t, EndpointConfig{ORD: 16}, EndpointConfig{IRD: 16})
	n, err := a.PostSend(reads(8, src, sink)...)
	require.NoError(t, err)
	assert.Equal(t, 8, n)
	requireReads(t, a, src, sink, 8)
	assert.Equal(t, []int{8}, bp.readRequestWrites(), "one write for the eight")
}

// TestPostSends_ORDBoundsTheBatch: with ORD 3 the first three Read
// Requests leave together and the third is not held (nothing may follow
// it until a response frees an ORD slot, RFC 5040 §6.1); the rest go as
// slots free up, and all complete.
func TestPostSends_ORDBoundsTheBatch(t *testing.T) {
	a, _, bp, src, sink := batchedPair(t, EndpointConfig{ORD: 3}, EndpointConfig{IRD: 3})
	_, err := a.PostSend(reads(8, src, sink)...)
	require.NoError(t, err)
	requireReads(t, a, src, sink, 8)
	w := bp.readRequestWrites()
	require.NotEmpty(t, w)
	assert.Equal(t, 3, w[0])
	total := 0
	for _, k := range w {
		assert.LessOrEqual(t, k, 3)
		total += k
	}
	assert.Equal(t, 8, total)
}

// TestPostSends_MixedKeepsOrder: Reads, a Write and a Send in one list
// reach the peer in submission order (RFC 5040 §5.5 rule 13): a held Read
// Request leaves with the Write behind it, never after it; a Send or
// Write is never held (its buffer is the user's once it completes, rule
// 14). A Read after a Write returns what the Write placed (rule 12).
func TestPostSends_MixedKeepsOrder(t *testing.T) {
	a, b, bp, src, sink := batchedPair(t, EndpointConfig{}, EndpointConfig{})
	require.NoError(t, b.PostRecv(9, make([]byte, 64)))
	payload := bytes.Repeat([]byte("w"), 100)
	bp.mu.Lock()
	bp.kinds = bp.kinds[:0]
	bp.mu.Unlock()
	wrs := []SendWR{
		{ID: 1, Op: WRRead, Sink: sink, Length: 100, RemoteSTag: src.STag(), RemoteTO: 8192},
		{ID: 2, Op: WRWrite, Local: payload, RemoteSTag: src.STag(), RemoteTO: 0},
		{ID: 3, Op: WRRead, Sink: sink, SinkOffset: 4096, Length: 100, RemoteSTag: src.STag(), RemoteTO: 0},
		{ID: 4, Op: WRSend, Local: []byte("done")},
	}
	want := bytes.Clone(src.Bytes()[8192 : 8192+100])
	_, err := a.PostSend(wrs...)
	require.NoError(t, err)
	for i := range 4 {
		c := poll(t, a.Config().SendCQ)
		require.NoError(t, c.Err)
		require.Equal(t, uint64(i+1), c.WRID)
	}
	assert.Equal(t, want, sink.Bytes()[:100])
	assert.Equal(t, payload, sink.Bytes()[4096:4196], "the second Read saw the Write (rule 12)")
	c := poll(t, b.Config().RecvCQ)
	require.NoError(t, c.Err)
	assert.Equal(t, 4, c.Length)
	bp.mu.Lock()
	assert.Equal(t, "RWRS", string(bp.kinds), "submission order on the wire")
	bp.mu.Unlock()
}

// TestPostSends_Rejects: a list with an invalid work request posts
// nothing; one longer than the send queue posts what fits and says so.
func TestPostSends_Rejects(t *testing.T) {
	a, _, _, src, sink := batchedPair(t, EndpointConfig{SQDepth: 4, ORD: 4}, EndpointConfig{IRD: 4})
	wrs := reads(3, src, sink)
	wrs[2].Op = WorkType(200)
	n, err := a.PostSend(wrs...)
	require.ErrorIs(t, err, ErrInvalidWR)
	assert.Zero(t, n)
	_, ok := a.Config().SendCQ.tryPoll()
	assert.False(t, ok, "nothing was posted")

	n, err = a.PostSend(reads(6, src, sink)...)
	require.ErrorIs(t, err, ErrResourceLimit)
	assert.Equal(t, 4, n)
	for i := range 4 {
		c := poll(t, a.Config().SendCQ)
		require.NoError(t, c.Err)
		assert.Equal(t, uint64(i), c.WRID)
	}
}

// TestPostSends_HeldBodyOutlivesItsCompletion: a Read Request held by the
// LLP (llp.Batcher.SendSegmentMore keeps the payload) may be answered and
// complete while the write that carries it is still in SendSegment (on
// MPA, a capture recording the write reads the pieces after the system
// call). Its message must stay as sent until that call returns: the
// request is recycled only afterwards.
func TestPostSends_HeldBodyOutlivesItsCompletion(t *testing.T) {
	a, _, bp, src, sink := batchedPair(t, EndpointConfig{ORD: 16}, EndpointConfig{IRD: 16})
	bp.mu.Lock()
	waited := make(chan bool, 1)
	bp.afterWrite = func(segs int) {
		if segs != 2 {
			return // not the write of the two Read Requests
		}
		// The first Read's Response arrives and completes it meanwhile
		// (its completion emitted: it left the submission order).
		completed := func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.order.Len() < 2
		}
		deadline := time.Now().Add(5 * time.Second)
		for !completed() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		waited <- completed()
		bp.afterWrite = nil
	}
	bp.mu.Unlock()
	_, err := a.PostSend(reads(2, src, sink)...)
	require.NoError(t, err)
	// Polled only once the write returned: the CQ must not be emptied
	// under the hook's feet.
	select {
	case ok := <-waited:
		require.True(t, ok, "the first Read did not complete during the write")
	case <-time.After(10 * time.Second):
		t.Fatal("the two Read Requests never left in one write")
	}
	requireReads(t, a, src, sink, 2)
	bp.mu.Lock()
	defer bp.mu.Unlock()
	assert.Zero(t, bp.changed, "a held Read Request changed before the write carrying it returned")
}
