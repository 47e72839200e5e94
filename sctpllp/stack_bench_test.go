package sctpllp

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/rdmaptest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// stepTransport is one end of a backend.Transport pair that delivers
// nothing by itself: step hands the oldest message toward this end to the
// adaptation, on the caller's goroutine. A ping-pong whose both sides
// answer from CQ handlers then runs on one goroutine, and a benchmark of
// it measures the CPU that rdmap, ddp and this package spend per round
// trip, without a stack's system calls and goroutine wake-ups (the
// harness measures those beside the raw LLP). Until hold is called a
// pump goroutine steps both ends (session set-up waits in Open).
type stepTransport struct {
	peer *stepTransport
	fn   func(uint16, uint32, []byte)
	done func(error)
	mu   sync.Mutex
	in   []stepMsg
	free [][]byte
	once sync.Once
}

type stepMsg struct {
	sid  uint16
	ppid uint32
	b    []byte
}

func newStepTransports() (a, b *stepTransport) {
	a, b = &stepTransport{}, &stepTransport{}
	a.peer, b.peer = b, a
	return a, b
}

func (t *stepTransport) Start(fn func(uint16, uint32, []byte), done func(error)) {
	t.mu.Lock()
	t.fn, t.done = fn, done
	t.mu.Unlock()
}

func (t *stepTransport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	q := t.peer
	q.mu.Lock()
	var b []byte
	if n := len(q.free); n > 0 {
		b, q.free = q.free[n-1][:0], q.free[:n-1]
	}
	for _, p := range parts {
		b = append(b, p...)
	}
	q.in = append(q.in, stepMsg{sid, ppid, b})
	q.mu.Unlock()
	return nil
}

// step delivers the oldest message toward this end, if any.
func (t *stepTransport) step() bool {
	t.mu.Lock()
	if len(t.in) == 0 || t.fn == nil {
		t.mu.Unlock()
		return false
	}
	m, fn := t.in[0], t.fn
	copy(t.in, t.in[1:])
	t.in = t.in[:len(t.in)-1]
	t.mu.Unlock()
	fn(m.sid, m.ppid, m.b)
	t.mu.Lock()
	t.free = append(t.free, m.b)
	t.mu.Unlock()
	return true
}

func (t *stepTransport) end(err error) {
	t.once.Do(func() {
		t.mu.Lock()
		done := t.done
		t.mu.Unlock()
		if done != nil {
			done(err)
		}
	})
}

func (t *stepTransport) NumStreams() int                { return 4 }
func (t *stepTransport) MaxMessage() int                { return 65000 }
func (t *stepTransport) ResetStream(uint16) error       { return nil }
func (t *stepTransport) PeerAdaptation() (uint32, bool) { return 0, false }
func (t *stepTransport) Kind() string                   { return "step" }
func (t *stepTransport) LocalAddr() net.Addr            { return nil }
func (t *stepTransport) RemoteAddr() net.Addr           { return nil }
func (t *stepTransport) Close() error                   { go t.peer.end(nil); go t.end(nil); return nil }
func (t *stepTransport) Abort() error {
	go t.peer.end(backend.ErrAssociationClosed)
	go t.end(backend.ErrAssociationClosed)
	return nil
}

// BenchmarkStackPingPong64 is a 64-octet Send ping-pong over rdmap, ddp
// and this package (a session on stream 1 of an association over a
// stepTransport pair), both sides answering from their receive CQ's
// handler on one goroutine: the CPU the three layers spend per round trip
// (two unsignaled Sends, two receives and their completions, four DDP
// segments through the adaptation), 0 allocations. It bounds from below
// what the 64 B Send RTT row of the harness adds to the raw LLP's round
// trip (issue 17), where cache misses across goroutines double it.
func BenchmarkStackPingPong64(b *testing.B) {
	pp, step := newStackPingPong(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	err := pp.Run(step)
	b.StopTimer()
	require.NoError(b, err)
}

// BenchmarkStackPingPong64Cold is BenchmarkStackPingPong64 with 64 KiB of
// other memory written before each delivery (a 4 MiB ring, so every line
// misses): what the kernel's send and receive paths and the scheduler do
// to the processor's first-level caches between two messages of the real
// ping-pong. Its ns/op less evict-ns/op (the evictions alone, timed after
// the run) is what the three layers cost per round trip there: about
// twice the warm figure, the L1 misses of their data, stacks and code.
// A run under cachegrind (valgrind --tool=cachegrind --cache-sim=yes)
// counts those misses without the host's noise (docs/benchmarks.md).
func BenchmarkStackPingPong64Cold(b *testing.B) {
	pp, step := newStackPingPong(b, b.N)
	ev := newEvictor(4<<20, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	err := pp.Run(func() bool {
		ev.evict()
		return step()
	})
	b.StopTimer()
	require.NoError(b, err)
	start := time.Now()
	for range 2 * b.N { // two deliveries per round trip
		ev.evict()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "evict-ns/op")
}

// evictor writes one octet of every line of a span of a ring larger than
// the first- and second-level caches, a different span each time; the
// ring's length is a power of two.
type evictor struct {
	ring      []byte
	span, off int
}

func newEvictor(ring, span int) *evictor { return &evictor{ring: make([]byte, ring), span: span} }

func (e *evictor) evict() {
	for i := 0; i < e.span; i += 64 {
		e.ring[e.off]++
		e.off = (e.off + 64) & (len(e.ring) - 1)
	}
}

// The benchmark's ping-pong completes its round trips, each message
// answered once, with nothing on the send CQs (unsignaled Sends).
func TestStackPingPong(t *testing.T) {
	pp, step := newStackPingPong(t, 2000)
	require.NoError(t, pp.Run(step))
	assert.Equal(t, 2000, pp.Rounds)
}

// newStackPingPong sets up BenchmarkStackPingPong64's ping-pong of n round
// trips and returns it with the step that delivers one waiting message;
// everything ends with tb.
func newStackPingPong(tb testing.TB, n int) (*rdmaptest.PingPong, func() bool) {
	ta, tb2 := newStepTransports()
	aa := NewAssociation(ta, Config{KeepIdle: true})
	ab := NewAssociation(tb2, Config{KeepIdle: true})
	// pump steps both ends on a goroutine of its own until stop is
	// called: while the sessions are set up and while they end.
	pump := func() (stop func()) {
		quit, pumped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(pumped)
			for {
				select {
				case <-quit:
					return
				default:
				}
				if !ta.step() && !tb2.step() {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
		return func() { close(quit); <-pumped }
	}
	stopPump := pump()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan Session, 1)
	go func() {
		in, err := ab.Accept(ctx)
		if err != nil {
			accepted <- nil
			return
		}
		s, err := in.Accept(AcceptParams{})
		if err != nil {
			s = nil
		}
		accepted <- s
	}()
	sa, err := aa.Open(ctx, 1, OpenRequest{})
	require.NoError(tb, err)
	sb := <-accepted
	require.NotNil(tb, sb)
	stopPump()
	pp, err := rdmaptest.StartPingPong(sa, sb, 64, n)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		defer pump()()
		pp.Abort()
		_ = aa.Abort()
		_ = ab.Abort()
		<-aa.Done()
		<-ab.Done()
	})
	// Anything the starts sent (an RTR, none for this pair) is delivered
	// before the clock starts.
	for ta.step() || tb2.step() {
	}
	return pp, func() bool { return tb2.step() || ta.step() }
}
