package rdmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onStack reports whether the caller runs inside fn (a function name as
// the runtime prints it): on the goroutine that fn runs on, not on one
// woken for the completion.
func onStack(fn string) bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// onReceivePath: inside the endpoint's receive path, on the goroutine
// that received the message.
func onReceivePath() bool { return onStack("rdmap.rxHandler.HandleSegment") }

// onTransmitLoop: on the endpoint's transmit goroutine.
func onTransmitLoop() bool { return onStack("rdmap.(*Endpoint).txLoop") }

// overlapGuard fails the test if the handler it wraps runs twice at once.
type overlapGuard struct {
	in, max atomic.Int32
}

func (g *overlapGuard) enter() {
	n := g.in.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
}
func (g *overlapGuard) leave() { g.in.Add(-1) }

// A ping-pong driven entirely by CQ handlers: each side's handler takes the
// receive completion on the goroutine that received the Send and posts the
// next Send from there (the direct completion hand-off of CQ.SetHandler).
// Every receive completion is handed over on the receive path, calls never
// overlap, and every Send completion is accounted for.
func TestCQHandler_PingPongOnReceivePath(t *testing.T) {
	const rounds = 500
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	bufA, bufB := make([]byte, 64), make([]byte, 64)
	require.NoError(t, p.a.PostRecv(1, bufA))
	require.NoError(t, p.b.PostRecv(2, bufB))

	var gA, gB overlapGuard
	var offPath atomic.Int32
	var sendsA, sendsB atomic.Int32
	errs := make(chan error, 4)
	done := make(chan struct{})
	var got int
	msg := make([]byte, 64)

	drainSends := func(cq *CQ, n *atomic.Int32) {
		for {
			c, ok := cq.tryPoll()
			if !ok {
				return
			}
			if c.Err != nil {
				errs <- c.Err
			}
			n.Add(1)
		}
	}
	// side is one end's handler: it checks where each receive completion
	// is handed over and gives it to step, then drains the send CQ.
	side := func(g *overlapGuard, rcq, scq *CQ, sends *atomic.Int32, step func(Completion) error) func() {
		return func() {
			g.enter()
			defer g.leave()
			for {
				c, ok := rcq.tryPoll()
				if !ok {
					break
				}
				if !onReceivePath() {
					offPath.Add(1)
				}
				if c.Err == nil {
					c.Err = step(c)
				}
				if c.Err != nil {
					errs <- c.Err
					return
				}
			}
			drainSends(scq, sends)
		}
	}
	p.rcqB.SetHandler(side(&gB, p.rcqB, p.cqB, &sendsB, func(c Completion) error {
		// Echo what arrived, then take the next ping.
		if err := p.b.PostRecv(2, bufB); err != nil {
			return err
		}
		return p.b.postSend1(SendWR{ID: 20, Op: WRSend, Local: bufB[:c.Length], Inline: true})
	}))
	p.rcqA.SetHandler(side(&gA, p.rcqA, p.cqA, &sendsA, func(c Completion) error {
		if binary.BigEndian.Uint32(bufA) != uint32(got) {
			return assert.AnError
		}
		if got++; got == rounds {
			close(done)
			return nil
		}
		if err := p.a.PostRecv(1, bufA); err != nil {
			return err
		}
		binary.BigEndian.PutUint32(msg, uint32(got))
		return p.a.postSend1(SendWR{ID: 10, Op: WRSend, Local: msg, Inline: true})
	}))
	binary.BigEndian.PutUint32(msg, 0)
	require.NoError(t, p.a.postSend1(SendWR{ID: 10, Op: WRSend, Local: msg, Inline: true}))
	select {
	case <-done:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatalf("ping-pong stalled before %d rounds", rounds)
	}
	assert.Zero(t, offPath.Load(), "receive completions handed over off the receive path")
	assert.Equal(t, int32(1), gA.max.Load(), "handler calls overlapped")
	assert.Equal(t, int32(1), gB.max.Load(), "handler calls overlapped")
	// Send completions are drained by the handlers (the last ones by the
	// goroutine a completion made outside the receive path starts).
	require.Eventually(t, func() bool { return sendsA.Load() == rounds && sendsB.Load() == rounds },
		5*time.Second, time.Millisecond, "send completions: A %d, B %d", sendsA.Load(), sendsB.Load())
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// A Read's completion is made by its Read Response arriving: the send CQ's
// handler gets it on the receive path (RFC 5040 §5.5 rule 16: the Read
// completes when its data is placed).
func TestCQHandler_ReadCompletionOnReceivePath_RFC5040_5_5(t *testing.T) {
	var tgt, sink *MR
	tbuf, sbuf := make([]byte, 4096), make([]byte, 4096)
	for i := range tbuf {
		tbuf[i] = byte(i)
	}
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(tbuf, RemoteRead)
		require.NoError(t, err)
		sink, err = p.pdA.Register(sbuf, LocalWrite)
		require.NoError(t, err)
	})
	type seen struct {
		c      Completion
		onPath bool
	}
	got := make(chan seen, 1)
	p.cqA.SetHandler(func() {
		for {
			c, ok := p.cqA.tryPoll()
			if !ok {
				return
			}
			got <- seen{c, onReceivePath()}
		}
	})
	require.NoError(t, p.a.postSend1(SendWR{ID: 5, Op: WRRead, Sink: sink, Length: 4096, RemoteSTag: tgt.STag()}))
	select {
	case s := <-got:
		require.NoError(t, s.c.Err)
		assert.Equal(t, uint64(5), s.c.WRID)
		assert.True(t, s.onPath, "Read completion handed over off the receive path")
		assert.Equal(t, tbuf, sbuf)
	case <-time.After(10 * time.Second):
		t.Fatal("no Read completion")
	}
}

// Completions made outside a receive path (here: by concurrent pushers)
// reach the handler through a goroutine of its own; calls never overlap
// and none is lost.
func TestCQHandler_ConcurrentPushersNeverOverlap(t *testing.T) {
	const pushers, each = 8, 500
	cq := NewCQ(pushers * each)
	var g overlapGuard
	var seen atomic.Int32
	cq.SetHandler(func() {
		g.enter()
		defer g.leave()
		for {
			if _, ok := cq.tryPoll(); !ok {
				return
			}
			seen.Add(1)
		}
	})
	var wg sync.WaitGroup
	for i := range pushers {
		wg.Go(func() {
			for j := range each {
				cq.push(&Completion{WRID: uint64(i*each + j)}, false)
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return seen.Load() == pushers*each }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(1), g.max.Load(), "handler calls overlapped")
	// Removed: nothing runs it any more; completions wait for a poll.
	cq.SetHandler(nil)
	cq.push(&Completion{WRID: 1}, false)
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, int32(pushers*each), seen.Load())
	assert.Equal(t, 1, cq.queued())
}

// A handler set on a CQ that already holds completions is called for them.
func TestCQHandler_SetOnNonEmptyCQ(t *testing.T) {
	cq := NewCQ(4)
	cq.push(&Completion{WRID: 1}, false)
	cq.push(&Completion{WRID: 2}, false)
	got := make(chan uint64, 4)
	cq.SetHandler(func() {
		for {
			c, ok := cq.tryPoll()
			if !ok {
				return
			}
			got <- c.WRID
		}
	})
	for _, want := range []uint64{1, 2} {
		select {
		case id := <-got:
			assert.Equal(t, want, id)
		case <-time.After(5 * time.Second):
			t.Fatal("handler not called for completions already queued")
		}
	}
}

// Nothing posted is lost: receives flushed by Close reach the handler,
// with the flush status (RFC 5040 §6.2).
func TestCQHandler_FlushedReceivesReachHandler(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	for i := range 3 {
		require.NoError(t, p.a.PostRecv(uint64(i), make([]byte, 8)))
	}
	var mu sync.Mutex
	var flushed []uint64
	p.rcqA.SetHandler(func() {
		for {
			c, ok := p.rcqA.tryPoll()
			if !ok {
				return
			}
			mu.Lock()
			if errors.Is(c.Err, ErrFlushed) {
				assert.ErrorIs(t, c.Err, ErrFlushed)
				flushed = append(flushed, c.WRID)
			}
			mu.Unlock()
		}
	})
	p.close(t)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(flushed) == 3
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, []uint64{0, 1, 2}, flushed)
}

// An unsignaled request (SendWR.Unsignaled, the verbs' send without
// IBV_SEND_SIGNALED) completes without a completion when it succeeds;
// the signaled one after it completes as usual (RFC 5040 §5.5 rule 15
// keeps the order), and the peer receives every message.
func TestSendWR_UnsignaledSucceedsSilently(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	for i := range 3 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 8)))
	}
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Local: []byte("a"), Unsignaled: true}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 2, Op: WRSend, Local: []byte("b"), Unsignaled: true}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 3, Op: WRSend, Local: []byte("c")}))
	for i := range 3 {
		assert.Equal(t, uint64(i), poll(t, p.rcqB).WRID)
	}
	assert.Equal(t, uint64(3), poll(t, p.cqA).WRID)
	time.Sleep(10 * time.Millisecond)
	assert.Zero(t, p.cqA.queued(), "unsignaled requests completed visibly")
}

// Nothing posted is lost silently: unsignaled requests that are flushed
// (RFC 5040 §6.2: the endpoint is aborted while they wait) complete with
// the flush status, in submission order, like signaled ones.
func TestSendWR_UnsignaledFlushedCompletes_RFC5040_6_2(t *testing.T) {
	v := newVictim(t, EndpointConfig{ORD: 1}, nil)
	// The peer never answers: the first Read stays outstanding, the
	// second waits for the ORD slot, the Send waits behind it.
	require.NoError(t, v.ep.postSend1(SendWR{ID: 10, Op: WRRead, RemoteSTag: 0x100}))
	require.NoError(t, v.ep.postSend1(SendWR{ID: 11, Op: WRRead, RemoteSTag: 0x100, Unsignaled: true}))
	require.NoError(t, v.ep.postSend1(SendWR{ID: 12, Op: WRSend, Local: []byte("x"), Unsignaled: true}))
	require.NoError(t, v.ep.Abort())
	cq := v.ep.Config().SendCQ
	for _, id := range []uint64{10, 11, 12} {
		c := poll(t, cq)
		assert.Equal(t, id, c.WRID)
		assert.ErrorIs(t, c.Err, ErrFlushed)
		assert.ErrorIs(t, c.Err, ErrFlushed)
	}
	v.w.finish(t, v.ep, v.pipe, 0)
}

// Writes too large to be issued by their poster are issued by the
// transmit goroutine, which hands their completions (RFC 5040 §5.5 rule
// 14: a Write completes once DDP has it) to the send CQ's handler itself,
// between two issues; the handler posts the next Writes from there, and
// the stream of Writes keeps going without the test's goroutine.
func TestCQHandler_WriteCompletionsOnTransmitLoop(t *testing.T) {
	const total, depth, size = 200, 4, 64 << 10
	var tgt *MR
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(make([]byte, size), RemoteWrite)
		require.NoError(t, err)
	})
	src := make([]byte, size)
	var g overlapGuard
	var onLoop, offLoop atomic.Int32
	var mu sync.Mutex
	posted, done := 0, 0
	finished := make(chan error, 1)
	var comps [4]Completion
	post := func() error { // mu held
		for ; posted < total && posted-done < depth; posted++ {
			if err := p.a.postSend1(SendWR{ID: uint64(posted), Op: WRWrite, Local: src, RemoteSTag: tgt.STag()}); err != nil {
				return err
			}
		}
		return nil
	}
	p.cqA.SetHandler(func() {
		g.enter()
		defer g.leave()
		mu.Lock()
		defer mu.Unlock()
		for {
			n := p.cqA.PollN(comps[:])
			for _, c := range comps[:n] {
				if onTransmitLoop() {
					onLoop.Add(1)
				} else {
					offLoop.Add(1)
				}
				if c.Err != nil || c.WRID != uint64(done) {
					finished <- fmt.Errorf("completion %+v, want WRID %d", c, done)
					return
				}
				done++
			}
			if n < len(comps) {
				break
			}
		}
		if done == total {
			finished <- nil
			return
		}
		if err := post(); err != nil {
			finished <- err
		}
	})
	mu.Lock()
	require.NoError(t, post())
	mu.Unlock()
	select {
	case err := <-finished:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("stalled: %d of %d Writes completed", done, total)
	}
	assert.Equal(t, int32(1), g.max.Load(), "handler calls overlapped")
	// The first Writes may complete before the loop is the one issuing
	// (a goroutine of their own then hands them over); the rest are
	// handed over on the transmit goroutine.
	assert.GreaterOrEqual(t, onLoop.Load(), int32(total-depth), "on the transmit loop %d, elsewhere %d", onLoop.Load(), offLoop.Load())
}
