package rdmap_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/rdmaptest"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// stepPipe is one end of an LLP pair that delivers nothing by itself: the
// test moves segments with step, on its own goroutine. A ping-pong driven
// by CQ handlers then runs entirely on that goroutine, and a benchmark of
// it measures the CPU that rdmap and ddp spend per round trip, without
// the system calls and goroutine wake-ups of a real LLP (which the
// harness measures beside the raw LLP).
type stepPipe struct {
	peer *stepPipe
	h    llp.Handler
	mu   sync.Mutex
	in   [][]byte // segments toward this end, oldest first
	free [][]byte // their buffers, for reuse (no allocation per segment)
	once sync.Once
	done chan struct{}
}

func newStepPair() (a, b *stepPipe) {
	a, b = &stepPipe{done: make(chan struct{})}, &stepPipe{done: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

func (p *stepPipe) MULPDU() int { return 1 << 16 }

func (p *stepPipe) SendSegment(hdr, payload []byte) error {
	q := p.peer
	q.mu.Lock()
	var seg []byte
	if n := len(q.free); n > 0 {
		seg, q.free = q.free[n-1][:0], q.free[:n-1]
	}
	seg = append(append(seg, hdr...), payload...)
	q.in = append(q.in, seg)
	q.mu.Unlock()
	return nil
}

func (p *stepPipe) Start(h llp.Handler) { p.h = h }

// step delivers the oldest segment toward this end, if any.
func (p *stepPipe) step() bool {
	p.mu.Lock()
	if len(p.in) == 0 {
		p.mu.Unlock()
		return false
	}
	seg := p.in[0]
	copy(p.in, p.in[1:])
	p.in = p.in[:len(p.in)-1]
	p.mu.Unlock()
	_ = p.h.HandleSegment(seg)
	p.mu.Lock()
	p.free = append(p.free, seg)
	p.mu.Unlock()
	return true
}

func (p *stepPipe) end(err error) {
	p.once.Do(func() {
		if p.h != nil {
			p.h.HandleClosed(err)
		}
		close(p.done)
	})
}

func (p *stepPipe) Close() error   { go p.peer.end(nil); go p.end(nil); return nil }
func (p *stepPipe) Abort() error   { go p.peer.end(llp.ErrAborted); go p.end(llp.ErrAborted); return nil }
func (p *stepPipe) Info() llp.Info { return llp.Info{Kind: "step"} }

// BenchmarkHandlerPingPong64 is a 64-octet Send ping-pong whose both sides
// answer from their receive CQ's handler (CQ.SetHandler), on one
// goroutine: the CPU rdmap and ddp spend per round trip (two unsignaled
// Sends, two receives and their completions), 0 allocations.
func BenchmarkHandlerPingPong64(b *testing.B) {
	pa, pb := newStepPair()
	pp, err := rdmaptest.StartPingPong(pa, pb, 64, b.N)
	require.NoError(b, err)
	b.Cleanup(func() {
		pp.Abort()
		<-pa.done
		<-pb.done
	})
	b.ReportAllocs()
	b.ResetTimer()
	err = pp.Run(func() bool { return pb.step() || pa.step() })
	b.StopTimer()
	require.NoError(b, err)
}
