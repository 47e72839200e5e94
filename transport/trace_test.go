package transport

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/trace"
)

// lockedBuffer is a bytes.Buffer safe for the trace's writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestTraceOverNative: with Options.Trace, an sctp-native run records its
// association's SACKs with the window and RTO, and each stream's end at
// both ends: the client's graceful close, and a Terminate for a stream
// that wrote to an STag the server never registered (RFC 5040 §7).
func TestTraceOverNative(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out lockedBuffer
	tw := trace.New(&out)
	o := Options{LLP: SCTPNative, Trace: tw}
	dev := new(rdmap.Device)
	ln, err := Listen(o, "127.0.0.1:0")
	require.NoError(t, err)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, dev.AllocPD(), echoFuncs()) }()
	cl, err := Dial(ctx, o, ln.Addr(), 2, dev.AllocPD(), nil)
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, echoOnce(ctx, cl.Endpoints[0], []byte{byte(i)}))
	}
	bad := cl.Endpoints[1]
	require.NoError(t, errOf(bad.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: []byte("nobody registered this"), RemoteSTag: 0xdead00})))
	<-bad.Done()
	require.NoError(t, cl.Close(ctx))
	stop()
	require.NoError(t, <-served)

	var recs []trace.Record
	require.Eventually(t, func() bool { // the stream-end records come from AfterDone goroutines
		if tw.Close() != nil {
			return false
		}
		out.mu.Lock()
		recs, err = trace.Parse(bytes.NewReader(out.b.Bytes()))
		out.mu.Unlock()
		if err != nil {
			return false
		}
		n := 0
		for _, r := range recs {
			if r.Event == "rdmap:terminate" || r.Event == "rdmap:stream_end" {
				n++
			}
		}
		return n >= 4
	}, 20*time.Second, 20*time.Millisecond, "four stream ends: two streams, two ends")
	require.NoError(t, err)
	count := map[string]int{}
	var sent, received bool
	for _, r := range recs {
		count[r.Event]++
		switch r.Event {
		case "sctp:sack":
			assert.Positive(t, r.Cwnd)
			assert.Positive(t, r.RTOms)
			assert.NotEmpty(t, r.Assoc)
		case "rdmap:terminate":
			assert.Equal(t, SCTPNative, r.LLP)
			assert.Equal(t, 2, r.Stream)
			assert.Contains(t, r.Code, "invalid STag")
			sent = sent || r.Dir == "sent"
			received = received || r.Dir == "received"
		}
	}
	assert.Positive(t, count["sctp:sack"], "SACKs traced")
	assert.Equal(t, 2, count["sctp:closed"], "both ends of the association")
	assert.True(t, sent && received, "the Terminate at both ends: %v", count)
}
