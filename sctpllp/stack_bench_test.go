package sctpllp

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
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
	ta, tb := newStepTransports()
	aa := NewAssociation(ta, Config{KeepIdle: true})
	ab := NewAssociation(tb, Config{KeepIdle: true})
	// pump steps both ends on a goroutine of its own until stop is
	// closed: while the sessions are set up and while they end.
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
				if !ta.step() && !tb.step() {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
		return func() { close(quit); <-pumped }
	}
	stopPump := pump()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan *Session, 1)
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
	require.NoError(b, err)
	sb := <-accepted
	require.NotNil(b, sb)
	stopPump()

	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
	a, err := dev.AllocPD().NewEndpoint(sa, rdmap.EndpointConfig{})
	require.NoError(b, err)
	e2, err := dev.AllocPD().NewEndpoint(sb, rdmap.EndpointConfig{})
	require.NoError(b, err)
	msg := make([]byte, 64)
	bufA, bufB := make([]byte, 64), make([]byte, 64)
	require.NoError(b, a.PostRecv(rdmap.RecvWR{Buf: bufA}))
	require.NoError(b, e2.PostRecv(rdmap.RecvWR{Buf: bufB}))
	var rounds int
	var failed error
	var comps [4]rdmap.Completion
	// The Sends are unsignaled: a completion on the send CQ is a failure.
	drain := func(cq *rdmap.CQ) {
		for n := cq.PollN(comps[:]); n > 0; n = cq.PollN(comps[:]) {
			if failed == nil {
				failed = fmt.Errorf("send completion %+v", comps[0])
			}
		}
	}
	answer := func(e *rdmap.Endpoint, buf []byte, count bool) func() {
		return func() {
			drain(e.SendCQ())
			for {
				n := e.RecvCQ().PollN(comps[:])
				for _, c := range comps[:n] {
					if c.Err != nil {
						failed = c.Err
						return
					}
					if count {
						rounds++
					}
					if err := e.PostRecv(rdmap.RecvWR{Buf: buf}); err != nil {
						failed = err
						return
					}
					if count && rounds >= b.N {
						return
					}
					if err := e.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: msg, Unsignaled: true}); err != nil {
						failed = err
						return
					}
				}
				if n < len(comps) {
					return
				}
			}
		}
	}
	a.RecvCQ().SetHandler(answer(a, bufA, true))
	e2.RecvCQ().SetHandler(answer(e2, bufB, false))
	require.NoError(b, a.Start())
	require.NoError(b, e2.Start())
	b.Cleanup(func() {
		defer pump()()
		_ = a.Abort()
		_ = e2.Abort()
		<-a.Done()
		<-e2.Done()
		_ = aa.Abort()
		_ = ab.Abort()
		<-aa.Done()
		<-ab.Done()
	})
	// Anything the starts sent (an RTR, none for this pair) is delivered
	// before the clock starts.
	for ta.step() || tb.step() {
	}
	b.ReportAllocs()
	b.ResetTimer()
	require.NoError(b, a.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: msg, Unsignaled: true}))
	for idle := 0; rounds < b.N && failed == nil; {
		if tb.step() || ta.step() {
			idle = 0
			continue
		}
		if idle++; idle > 1e6 {
			b.Fatalf("ping-pong stalled after %d rounds", rounds)
		}
		runtime.Gosched()
	}
	b.StopTimer()
	require.NoError(b, failed)
}
