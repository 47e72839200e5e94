package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// TestAppendOpsBuffers: with Setup.Buffers n, operation i addresses
// buffer i mod n on both sides (its local slice of the registered region
// and the remote Tagged Offset, or a Read's sink offset), and an atomic
// operates on that buffer's counter, which has seen i/n operations.
func TestAppendOpsBuffers(t *testing.T) {
	const size, n = 64, 3
	for _, test := range []Test{TestWrite, TestRead, TestSend, TestWriteImm, TestFetchAdd, TestCmpSwap} {
		t.Run(test.String(), func(t *testing.T) {
			_, b := endpointPair(t)
			c := newConn(b)
			c.setup = setupMsg{Test: test, Size: size, Depth: 4, Iters: 1, Buffers: n}
			if test.Atomic() {
				c.setup.Size = 8
			}
			sz := uint64(c.setup.Size)
			require.NoError(t, c.prepareData(true))
			require.Equal(t, int(n*sz), len(c.mr.Bytes()), "the registered region holds the n buffers")
			c.peer = peerBuffer{STag: 0x1234, Length: n * sz}
			region := c.mr.Bytes()
			for seq := uint64(0); seq < 7; seq++ {
				wrs := c.appendOps(nil, seq, region[:sz])
				require.Len(t, wrs, 1)
				wr, to := wrs[0], seq%n*sz
				switch test {
				case TestWrite, TestWriteImm:
					assert.Equal(t, to, wr.RemoteTO, "op %d", seq)
					fallthrough
				case TestSend:
					require.Len(t, wr.Local, int(sz))
					assert.Same(t, &region[to], &wr.Local[0], "op %d's source is buffer %d", seq, seq%n)
				case TestRead:
					assert.Equal(t, to, wr.RemoteTO, "op %d", seq)
					assert.Equal(t, to, wr.SinkOffset, "op %d", seq)
					assert.Same(t, c.mr, wr.Sink)
				case TestFetchAdd:
					assert.Equal(t, to, wr.RemoteTO, "op %d", seq)
				case TestCmpSwap:
					assert.Equal(t, to, wr.RemoteTO, "op %d", seq)
					assert.Equal(t, seq/n, wr.Compare, "op %d: its buffer's counter", seq)
					assert.Equal(t, seq/n+1, wr.Swap)
				}
			}
			batch := make([]rdmap.SendWR, 0, 1)
			var seq uint64
			allocs := testing.AllocsPerRun(100, func() {
				batch = c.appendOps(batch[:0], seq, region[:sz])
				seq++
			})
			assert.Zero(t, allocs, "choosing the buffer allocates nothing")
		})
	}
}

// TestRunBuffers runs every test with a stream cycling through buffers,
// both directions, over a real LLP pair: the atomics' check that
// operation i sees its buffer's counter at i/n (tally.complete) passes
// only if each lands on its own buffer at the responder; the server
// reserves the n buffers from its memory budget.
func TestRunBuffers(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, srv, stop := startServerStats(t, llp, ServerConfig{})
			defer stop()
			for _, test := range []Test{TestWrite, TestRead, TestSend, TestWriteImm, TestFetchAdd, TestCmpSwap} {
				for _, bidir := range []bool{false, true} {
					name := fmt.Sprintf("%v bidir=%v", test, bidir)
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					res, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: test, Size: 4096,
						Depth: 4, Iters: 11, Buffers: 3, Bidir: bidir})
					cancel()
					require.NoError(t, err, name)
					assert.Equal(t, uint64(11), res.Forward.Ops, name)
					assert.Equal(t, 3, res.Buffers, name)
					if bidir {
						assert.Equal(t, uint64(11), res.Reverse.Ops, name)
					}
				}
			}

			// The budget: 5 buffers of 4096 octets and two control-sized
			// receives (the Fin and the Report's spare, recvLen).
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ctr := &Counters{}
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: TestWrite, Size: 4096,
					Depth: 4, Iters: 3000, Buffers: 5, Counters: ctr})
				done <- err
			}()
			require.Eventually(t, func() bool { return ctr.Ops.Load() > 0 }, 10*time.Second, time.Millisecond)
			assert.Equal(t, int64(5*4096+2*ctrlLen), srv.Stats().Reserved)
			require.NoError(t, <-done)
		})
	}
}

// TestServerRejectsBuffers: a Setup asking for more buffers than the
// server's budget holds is refused with statusNoMemory before anything is
// allocated, and a ping with more than one buffer is malformed.
func TestServerRejectsBuffers(t *testing.T) {
	addr, srv, stop := startServerStats(t, transport.SCTPNative, ServerConfig{MaxMemory: 1 << 20})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Run(ctx, Config{Transport: transport.Options{LLP: transport.SCTPNative}, Addr: addr, Test: TestWrite, Size: 64 << 10,
		Depth: 4, Iters: 10, Buffers: 32})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "budget")
	assert.Zero(t, srv.Stats().Reserved)
	_, err = Run(ctx, Config{Transport: transport.Options{LLP: transport.SCTPNative}, Addr: addr, Test: TestPing, Size: 64,
		Iters: 10, Buffers: 2})
	require.ErrorIs(t, err, errMalformed)
}
