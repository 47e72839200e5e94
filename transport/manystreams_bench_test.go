package transport_test

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// shared is the passive side of BenchmarkManyStreams (and of
// TestTenThousandStreams): every stream's endpoint may write and read one
// region registered once in the server's protection domain (an STag of
// the PD, RFC 5040 §8.1.1), so an idle stream holds nothing of its own
// beyond what the stack gives every stream.
type shared struct {
	once sync.Once
	mr   atomic.Pointer[rdmap.MR]
	pd   *rdmap.PD
}

func (*shared) Admit(netip.Addr, []byte) error { return nil }
func (*shared) Dropped(netip.Addr)             {}
func (s *shared) Prepare(ep *rdmap.Endpoint) error {
	var err error
	s.once.Do(func() {
		var mr *rdmap.MR
		mr, err = ep.PD().Register(make([]byte, 64<<10), rdmap.RemoteWrite|rdmap.RemoteRead)
		s.mr.Store(mr)
	})
	return err
}
func (*shared) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	select {
	case <-ctx.Done():
	case <-ep.Done():
	}
}

// Start makes shared a transport.Starter: the server keeps no goroutine
// per stream (the Listener aborts the streams when Serve ends).
func (*shared) Start(context.Context, netip.Addr, *rdmap.Endpoint) {}

// memNow returns the heap in use and the goroutine stacks, after a
// collection.
func memNow() (heap, stacks float64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse), float64(m.StackInuse)
}

// settledMem is memNow once the heap has stopped shrinking: the streams
// of a previous run end asynchronously.
func settledMem() (heap, stacks float64) {
	heap, stacks = memNow()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		h, s := memNow()
		if h >= heap*0.99 {
			return h, s
		}
		heap, stacks = h, s
	}
	return heap, stacks
}

// BenchmarkManyStreams opens 10,000 DDP streams on one sctp-native
// association (both ends in this process), reports the memory an idle
// stream costs (both ends together; heap, and heap with stacks), then
// runs RDMA Writes of 64 KiB on a random tenth of them at once and on one
// stream alone, and reports the aggregate throughput of the 1,000 against
// the one (issue 21). Each run opens the streams anew.
//
// Two ways to drive the streams: "goroutine-per-stream", each stream's
// own goroutine posting and polling its own CQ, and "shared-cq", one
// goroutine posting on every stream and polling one CQ that all the
// client's endpoints share (transport.Options.SendCQ), as one perftest
// thread drives many QPs.
//
// The memory figures of a first run (-benchtime 1x, each sub-benchmark
// in a process of its own with -run and -bench naming one) include what
// the process grows once (the runtime's goroutine tables, pooled buffers,
// free lists): they are the upper bound. A later run in the same process
// reuses those and reports less (2-3 KiB of heap for both ends).
//
//	go test -run '^$' -bench 'BenchmarkManyStreams/drive=goroutine' -benchtime 1x ./transport/
func BenchmarkManyStreams(b *testing.B) {
	b.Run("drive=goroutine-per-stream", func(b *testing.B) { benchManyStreams(b, false) })
	b.Run("drive=shared-cq", func(b *testing.B) { benchManyStreams(b, true) })
}

func benchManyStreams(b *testing.B, sharedCQ bool) {
	const n = 10000
	const inflight = 4
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		dev := new(rdmap.Device)
		o := transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{Streams: n + 1}, SQDepth: 8, RQDepth: 8}
		ln, err := transport.Listen(o, "127.0.0.1:0")
		require.NoError(b, err)
		h := &shared{}
		served := make(chan error, 1)
		go func() { served <- ln.Serve(ctx, dev.AllocPD(), h) }()

		var cq *rdmap.CQ
		if sharedCQ {
			cq = rdmap.NewCQ(n * inflight)
			o.SendCQ = cq
		}
		heap0, stack0 := settledMem()
		start := time.Now()
		cl, err := transport.Dial(ctx, o, ln.Addr(), n, dev.AllocPD(), nil)
		require.NoError(b, err)
		opened := time.Since(start)
		require.Eventually(b, func() bool { return h.mr.Load() != nil }, 10*time.Second, 10*time.Millisecond)
		time.Sleep(500 * time.Millisecond) // the server's last Serve goroutines start
		heap1, stack1 := memNow()
		heapPer, stackPer := (heap1-heap0)/n, (stack1-stack0)/n

		mr := h.mr.Load()
		src := make([]byte, 64<<10)
		wr := rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: mr.STag(), RemoteTO: mr.BaseTO()}
		// run writes on eps for d, up to inflight at once on each, and
		// returns the octets placed per second.
		run := func(eps []*rdmap.Endpoint, d time.Duration) float64 {
			var octets atomic.Uint64
			deadline := time.Now().Add(d)
			began := time.Now()
			if sharedCQ {
				// One goroutine: the WRID names the endpoint.
				out := 0
				for i, ep := range eps {
					for range inflight {
						w := wr
						w.ID = uint64(i)
						require.NoError(b, errOf(ep.PostSend(w)))
						out++
					}
				}
				for out > 0 {
					c, err := cq.Poll(ctx)
					if err != nil || c.Err != nil {
						b.Fatal(err, c.Err)
					}
					out--
					octets.Add(uint64(len(src)))
					if time.Now().Before(deadline) {
						w := wr
						w.ID = c.WRID
						require.NoError(b, errOf(eps[c.WRID].PostSend(w)))
						out++
					}
				}
				return float64(octets.Load()) / time.Since(began).Seconds()
			}
			var wg sync.WaitGroup
			for _, ep := range eps {
				wg.Go(func() {
					out := 0
					for time.Now().Before(deadline) {
						if out == inflight {
							if c, err := ep.Config().SendCQ.Poll(ctx); err != nil || c.Err != nil {
								b.Error(err, c.Err)
								return
							}
							out--
							octets.Add(uint64(len(src)))
						}
						if _, err := ep.PostSend(wr); err != nil {
							b.Error(err)
							return
						}
						out++
					}
					for ; out > 0; out-- {
						if _, err := ep.Config().SendCQ.Poll(ctx); err != nil {
							return
						}
						octets.Add(uint64(len(src)))
					}
				})
			}
			wg.Wait()
			return float64(octets.Load()) / time.Since(began).Seconds()
		}
		rng := rand.New(rand.NewPCG(1, 2))
		tenth := make([]*rdmap.Endpoint, 0, n/10)
		for _, i := range rng.Perm(n)[:n/10] {
			tenth = append(tenth, cl.Endpoints[i])
		}
		one := run(cl.Endpoints[:1], 2*time.Second)
		many := run(tenth, 2*time.Second)

		// Both ends together: the heap (the stack's state) and the
		// goroutine stacks (none per idle stream: the stack keeps none and
		// the handler is a transport.Starter).
		b.ReportMetric((heapPer+stackPer)/1024, "KiB/idle-stream")
		b.ReportMetric(heapPer/1024, "heap-KiB/idle-stream")
		b.ReportMetric(opened.Seconds(), "s-to-open-10000")
		b.ReportMetric(one*8/1e9, "Gbit/s-1-stream")
		b.ReportMetric(many*8/1e9, "Gbit/s-1000-streams")
		b.ReportMetric(many/one, "ratio")
		b.ReportMetric(float64(runtime.NumGoroutine())/n, "goroutines/stream")

		cl.Abort()
		cancel()
		<-served
	}
}
