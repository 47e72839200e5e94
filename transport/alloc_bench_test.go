package transport_test

import (
	"context"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// sink is the passive side of BenchmarkRealPath: a region for Writes,
// Reads and atomics, and receive buffers that it re-posts as Sends consume
// them, all through the verbs (PostRecv, CQ polling), as a server would.
type sink struct {
	mu  sync.Mutex
	mrs map[*rdmap.Endpoint]*rdmap.MR
	ads chan [2]uint64 // STag and TO of each accepted stream's region
}

const sinkRecvs = 64

func (*sink) Admit(netip.Addr, []byte) error { return nil }
func (*sink) Dropped(netip.Addr)             {}

func (s *sink) Prepare(ep *rdmap.Endpoint) error {
	mr, err := ep.PD().Register(make([]byte, 64<<10), rdmap.RemoteRead|rdmap.RemoteWrite|rdmap.RemoteAtomic)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.mrs[ep] = mr
	s.mu.Unlock()
	for i := range sinkRecvs {
		if err := ep.PostRecv(uint64(i), make([]byte, 64<<10)); err != nil {
			return err
		}
	}
	s.ads <- [2]uint64{uint64(mr.STag()), mr.BaseTO()}
	return nil
}

// Serve re-posts every consumed buffer and, every creditEvery Sends,
// returns credit to the sender with Immediate Data carrying the number
// consumed so far (iWARP has no receiver-not-ready: a Send that finds no
// buffer ends the stream, RFC 5041 §7.1).
func (s *sink) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	bufs := make([][]byte, sinkRecvs)
	for i := range bufs {
		bufs[i] = make([]byte, 64<<10)
	}
	cq, scq := ep.Config().RecvCQ, ep.Config().SendCQ
	var consumed uint64
	for {
		c, err := cq.Poll(ctx)
		if err != nil || c.Err != nil {
			return
		}
		if ep.PostRecv(c.WRID, bufs[c.WRID]) != nil {
			return
		}
		if consumed++; consumed%creditEvery == 0 {
			if errOf(ep.PostSend(rdmap.SendWR{Op: rdmap.WRImmediate, Imm: consumed})) != nil {
				return
			}
		}
		var credits [16]rdmap.Completion
		for scq.PollN(credits[:]) > 0 { // the credits' completions
		}
	}
}

const creditEvery = 16

// realPath is one stream over a real LLP pair on loopback, both ends in
// this process: the client's endpoint, a local sink region for Reads, and
// the sink's region.
type realPath struct {
	tb        testing.TB
	ctx       context.Context
	ep        *rdmap.Endpoint
	local     *rdmap.MR
	stag      uint32
	to        uint64
	src       []byte
	sent      uint64 // Sends so far, over the stream's life
	credited  uint64 // the sink's count of those it consumed
	creditBuf []byte
}

func newRealPath(tb testing.TB, llp string) *realPath {
	ctx, cancel := context.WithCancel(context.Background())
	dev := new(rdmap.Device)
	o := transport.Options{LLP: llp}
	ln, err := transport.Listen(o, "127.0.0.1:0")
	require.NoError(tb, err)
	h := &sink{mrs: map[*rdmap.Endpoint]*rdmap.MR{}, ads: make(chan [2]uint64, 1)}
	served := make(chan error, 1)
	go func() { served <- ln.Serve(ctx, dev.AllocPD(), h) }()
	pd := dev.AllocPD()
	cl, err := transport.Dial(ctx, o, ln.Addr(), 1, pd, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { cl.Abort(); cancel(); <-served })
	ad := <-h.ads
	p := &realPath{tb: tb, ctx: ctx, ep: cl.Endpoints[0], stag: uint32(ad[0]), to: ad[1],
		src: make([]byte, 4096), creditBuf: make([]byte, 8)}
	p.local, err = pd.Register(make([]byte, 64<<10), rdmap.LocalWrite)
	require.NoError(tb, err)
	for range sinkRecvs / creditEvery {
		require.NoError(tb, p.ep.PostRecv(0, p.creditBuf))
	}
	return p
}

// ops are the operations measured, with their payload size.
func (p *realPath) ops() []struct {
	name string
	wr   rdmap.SendWR
	size int
} {
	return []struct {
		name string
		wr   rdmap.SendWR
		size int
	}{
		{"write-4K", rdmap.SendWR{Op: rdmap.WRWrite, Local: p.src, RemoteSTag: p.stag, RemoteTO: p.to}, 4096},
		{"read-4K", rdmap.SendWR{Op: rdmap.WRRead, Sink: p.local, Length: 4096, RemoteSTag: p.stag, RemoteTO: p.to}, 4096},
		{"send-4K", rdmap.SendWR{Op: rdmap.WRSend, Local: p.src}, 4096},
		{"fetchadd", rdmap.SendWR{Op: rdmap.WRFetchAdd, Add: 1, RemoteSTag: p.stag, RemoteTO: p.to}, 8},
	}
}

// run posts wr n times, up to 16 in flight, through PostSend and the send
// CQ, and for Sends within the sink's credit.
func (p *realPath) run(wr rdmap.SendWR, n int) {
	const window = 16
	cq, rcq := p.ep.Config().SendCQ, p.ep.Config().RecvCQ
	inflight := 0
	for i := 0; i < n; i++ {
		for wr.Op == rdmap.WRSend && p.sent-p.credited >= sinkRecvs {
			c, err := rcq.Poll(p.ctx) // the sink's credit
			if err != nil || c.Err != nil {
				p.tb.Fatal(err, c.Err)
			}
			p.credited = max(p.credited, c.Imm)
			if err := p.ep.PostRecv(0, p.creditBuf); err != nil {
				p.tb.Fatal(err)
			}
		}
		if inflight == window {
			if c, err := cq.Poll(p.ctx); err != nil || c.Err != nil {
				p.tb.Fatal(err, c.Err)
			}
			inflight--
		}
		if _, err := p.ep.PostSend(wr); err != nil {
			p.tb.Fatal(err)
		}
		inflight++
		if wr.Op == rdmap.WRSend {
			p.sent++
		}
	}
	for ; inflight > 0; inflight-- {
		if c, err := cq.Poll(p.ctx); err != nil || c.Err != nil {
			p.tb.Fatal(err, c.Err)
		}
	}
}

// BenchmarkRealPath measures the data path on a real LLP pair on loopback
// (both ends in this process, so allocs/op counts both): RDMA Write, Read
// and Send of 4 KiB and FetchAdd, posted with PostSend and completed
// through the send CQ, up to 16 in flight (issue 21: 0 allocs per
// operation in steady state; TestRealPathAllocs asserts it).
func BenchmarkRealPath(b *testing.B) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		b.Run(llp, func(b *testing.B) {
			p := newRealPath(b, llp)
			for _, op := range p.ops() {
				b.Run(op.name, func(b *testing.B) {
					p.run(op.wr, 2000) // warm the pools and the windows
					b.SetBytes(int64(op.size))
					b.ReportAllocs()
					b.ResetTimer()
					p.run(op.wr, b.N)
				})
			}
		})
	}
}

// TestRealPathAllocs: in steady state the data path allocates nothing per
// operation, at either end, over sctp-native and mpa (issue 21). Counted
// over windows of 2000 operations of each kind after 2000 of warm-up and a
// garbage collection, the fewest of three windows asserted: what sctp
// allocates when a backlog reaches a new high (a pooled packet buffer
// more, a delivery-queue slot used for the first time) or after a
// collection emptied its sync.Pools is not a per-operation cost, and
// whether it fell inside one window was chance (0.00-0.23 allocations per
// operation over runs of one binary). A cost per operation shows in every
// window. Under -race
// sync.Pool drops a share of what is put back on purpose (the buffer pools
// of package sctp then allocate now and then), so the bound is looser
// there; make test also runs this test without -race.
func TestRealPathAllocs(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		p := newRealPath(t, llp)
		for _, op := range p.ops() {
			p.run(op.wr, 2000)
			runtime.GC()
			per, all := fewestAllocs(func() { p.run(op.wr, 2000) }, 2000)
			t.Logf("%s %s: %.3f allocations per operation (windows %.3f)", llp, op.name, per, all)
			assert.Less(t, per, allocBound, "%s %s: %.3f allocations per operation", llp, op.name, per)
		}
		// The blocking helpers (Write, Read, FetchAdd: post and wait for
		// the completion, one at a time) recycle their completion
		// channel.
		helpers := []struct {
			name string
			op   func() error
		}{
			{"Write-4K helper", func() error {
				_, err := p.ep.Do(p.ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: p.src, RemoteSTag: p.stag, RemoteTO: p.to})
				return err
			}},
			{"Read-4K helper", func() error {
				_, err := p.ep.Do(p.ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: p.local, Length: 4096, RemoteSTag: p.stag, RemoteTO: p.to})
				return err
			}},
			{"FetchAdd helper", func() error {
				_, err := p.ep.Do(p.ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: p.stag, RemoteTO: p.to, Add: 1})
				return err
			}},
		}
		for _, h := range helpers {
			for range 2000 {
				require.NoError(t, h.op())
			}
			var err error
			runtime.GC()
			per, all := fewestAllocs(func() {
				for range 2000 {
					if e := h.op(); e != nil {
						err = e
					}
				}
			}, 2000)
			require.NoError(t, err)
			t.Logf("%s %s: %.3f allocations per operation (windows %.3f)", llp, h.name, per, all)
			assert.Less(t, per, allocBound, "%s %s: %.3f allocations per operation", llp, h.name, per)
		}
	}
}

// fewestAllocs runs f (n operations) in three windows and returns the
// fewest allocations per operation of a window, and every window's.
func fewestAllocs(f func(), n int) (float64, []float64) {
	all := make([]float64, 3)
	for i := range all {
		all[i] = testing.AllocsPerRun(1, f) / float64(n)
	}
	return slices.Min(all), all
}
