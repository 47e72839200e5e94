package sctpllp

import (
	"context"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/sessionsm"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// BenchmarkSendSegmentPath measures the adaptation's own send path (SSN,
// gather, transport call) over a transport that discards: 0 allocations.
func BenchmarkSendSegmentPath(b *testing.B) {
	ft := &discardTransport{}
	a := NewAssociation(ft, Config{KeepIdle: true})
	defer a.Abort()
	sl := a.slot(1)
	s := newSession(a, sl, true)
	s.setState(sessionsm.Established)
	hdr := make([]byte, 14)
	payload := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(hdr) + len(payload)))
	for b.Loop() {
		if err := s.SendSegment(hdr, payload); err != nil {
			b.Fatal(err)
		}
	}
}

type discardTransport struct{ fakeTransport }

func (d *discardTransport) WriteMsg(uint16, uint32, ...[]byte) error { return nil }
func (d *discardTransport) NumStreams() int                          { return 16 }
func (d *discardTransport) MaxMessage() int                          { return 8164 }
func (d *discardTransport) Start(fn func(uint16, uint32, []byte), done func(error)) {
	d.fn, d.done = fn, done
}

// BenchmarkPionWriteMsg measures SendSegment end to end over pion on
// 127.0.0.1 UDP for several MTUs (the receiver counts segments).
func BenchmarkPionWriteMsg(b *testing.B) {
	for _, mtu := range []int{1500, 4096, pionLoopbackMTU} {
		b.Run(fmt.Sprintf("mtu=%d", mtu), func(b *testing.B) {
			c, s := benchPair(b, Config{KeepIdle: true, Stack: pion.Stack(pion.Config{MTU: mtu})})
			cs, sh := benchOpen(b, c, s)
			payload := make([]byte, cs.MULPDU()-14)
			hdr := make([]byte, 14)
			b.SetBytes(int64(len(payload) + len(hdr)))
			b.ReportAllocs()
			for b.Loop() {
				if err := cs.SendSegment(hdr, payload); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = sh
			deadline := time.Now().Add(30 * time.Second)
			for sh.n.Load() < int64(b.N) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			_ = c.Close()
			_ = s.Close()
		})
	}
}

type countHandler struct{ n atomicInt64 }

func (h *countHandler) HandleSegment([]byte) error { h.n.Add(1); return nil }
func (h *countHandler) HandleClosed(err error) {
	if err != nil && os.Getenv("SCTPLLP_BENCH_DEBUG") != "" {
		fmt.Println("closed:", err)
	}
}

func benchPair(b *testing.B, cfg Config) (*Association, *Association) {
	if cfg.Stack == nil {
		cfg.Stack = pion.Stack(pion.Config{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", cfg)
	require.NoError(b, err)
	ch := make(chan *Association, 1)
	go func() {
		a, _ := l.Accept(ctx)
		ch <- a
	}()
	c, err := Dial(ctx, l.Addr(), cfg)
	require.NoError(b, err)
	s := <-ch
	require.NotNil(b, s)
	_ = l.Close()
	return c, s
}

func benchOpen(b *testing.B, c, s *Association) (Session, *countHandler) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sh := &countHandler{}
	go func() {
		in, err := s.Accept(ctx)
		if err != nil {
			return
		}
		ss, err := in.Accept(AcceptParams{})
		if err == nil {
			ss.Start(sh)
		}
	}()
	cs, err := c.Open(ctx, 1, OpenRequest{})
	require.NoError(b, err)
	cs.Start(&countHandler{})
	return cs, sh
}

// BenchmarkIdleSessionMemory reports the heap held per idle established
// session (both ends, pion streams included), once the sessions have been
// idle for 300 ms: pion's stream readers end after 100 ms without a
// message (sctpllp/pion/reader.go).
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 1000
	for b.Loop() {
		c, s := benchPair(b, Config{KeepIdle: true, MaxPendingInitiates: n})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		go func() {
			for range n {
				in, err := s.Accept(ctx)
				if err != nil {
					return
				}
				if ss, err := in.Accept(AcceptParams{}); err == nil {
					ss.Start(&countHandler{})
				}
			}
		}()
		for i := range n {
			cs, err := c.Open(ctx, uint16(i+1), OpenRequest{})
			require.NoError(b, err)
			cs.Start(&countHandler{})
		}
		time.Sleep(300 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		cancel()
		perSession := float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse) / n
		b.ReportMetric(perSession/2, "B/session-end")
		b.ReportMetric(float64(g1-g0)/(2*n), "goroutines/session-end")
		_ = c.Close()
		_ = s.Close()
	}
}

type atomicInt64 = atomic.Int64
