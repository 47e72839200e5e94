package transport_test

import (
	"context"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// starter is a transport.Starter: each stream waits for one message
// without a goroutine (a CQ handler that removes itself), then answers
// it and closes the stream.
type starter struct {
	started, answered atomic.Int64
	serveCalled       atomic.Bool
}

func (*starter) Admit(netip.Addr, []byte) error { return nil }
func (*starter) Dropped(netip.Addr)             {}
func (*starter) Prepare(ep *rdmap.Endpoint) error {
	return ep.PostRecv(1, make([]byte, 64))
}
func (s *starter) Serve(context.Context, netip.Addr, *rdmap.Endpoint) { s.serveCalled.Store(true) }
func (s *starter) Start(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	s.started.Add(1)
	cq := ep.Config().RecvCQ
	cq.SetHandler(func() {
		cq.SetHandler(nil)
		go func() { // the handler must not block: Do and Close wait
			var c [1]rdmap.Completion
			if cq.PollN(c[:]) == 0 || c[0].Err != nil {
				return // flushed: the stream ended first
			}
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("pong")}); err == nil {
				s.answered.Add(1)
			}
			_ = ep.Close(ctx)
		}()
	})
}

// TestStarterHoldsNoGoroutine: a Starter's idle streams cost the Listener
// no goroutine each (over MPA each end's connection reader is one
// anyway); a stream runs its handler when its message arrives and ends
// when the handler closes it; ending Serve's context aborts the rest and
// Serve returns with every goroutine gone (goleak in TestMain).
func TestStarterHoldsNoGoroutine(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			const n = 200
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o := transport.Options{LLP: llp, Native: transport.SCTPOptions{Streams: n + 1}}
			ln, err := transport.Listen(o, "127.0.0.1:0")
			require.NoError(t, err)
			h := &starter{}
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			dev := new(rdmap.Device)
			go func() { served <- ln.Serve(sctx, dev.AllocPD(), h) }()
			before := runtime.NumGoroutine()
			cl, err := transport.Dial(ctx, o, ln.Addr(), n, dev.AllocPD(), func(ep *rdmap.Endpoint) error {
				return ep.PostRecv(2, make([]byte, 64))
			})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return h.started.Load() == n }, 10*time.Second, time.Millisecond)
			// What started the streams may still be returning (Start is
			// called before the Listener's goroutine for the stream ends).
			limit := n / 10
			if llp == transport.MPA {
				// Each end's MPA reader (a blocking TCP read), nothing of
				// the Listener's: three per stream before.
				limit = 2*n + n/10
			}
			assert.Eventually(t, func() bool { return runtime.NumGoroutine()-before < limit }, 10*time.Second, 10*time.Millisecond,
				"goroutines for %d idle streams (both ends): %d more, want fewer than %d", n, runtime.NumGoroutine()-before, limit)
			assert.False(t, h.serveCalled.Load(), "Serve is not called for a Starter")

			// Three streams get their message: each is answered, then closed
			// by the handler.
			var wg sync.WaitGroup
			for _, ep := range cl.Endpoints[:3] {
				wg.Go(func() {
					assert.NoError(t, errOf(ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("ping")})))
					c, err := ep.Config().RecvCQ.Poll(ctx)
					if assert.NoError(t, err) && assert.NoError(t, c.Err) {
						assert.Equal(t, 4, c.Length)
					}
					select {
					case <-ep.Done():
					case <-ctx.Done():
						t.Error("the handler's close did not end the stream")
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int64(3), h.answered.Load())
			for _, ep := range cl.Endpoints[3:] {
				select {
				case <-ep.Done():
					t.Fatal("an idle stream ended")
				default:
				}
			}

			stop() // the Listener aborts the idle streams and returns
			select {
			case err := <-served:
				require.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Fatal("Serve did not return after its context ended")
			}
			for _, ep := range cl.Endpoints {
				select {
				case <-ep.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("a client stream outlived the server's")
				}
			}
			cl.Abort()
		})
	}
}

// TestServeStopsWithSilentMPAClients: MPA clients that connected and never
// sent an FPDU do not hold a stopping Listener. The server's abort sends a
// Terminate, which an MPA responder may not send before its initiator's
// first FPDU (RFC 5044 §7.1.2 rule 4); it used to wait for ever for that
// FPDU, and Serve with it.
func TestServeStopsWithSilentMPAClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := transport.Options{LLP: transport.MPA}
	ln, err := transport.Listen(o, "127.0.0.1:0")
	require.NoError(t, err)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	dev := new(rdmap.Device)
	go func() { served <- ln.Serve(sctx, dev.AllocPD(), &shared{}) }()
	cl, err := transport.Dial(ctx, o, ln.Addr(), 3, dev.AllocPD(), nil)
	require.NoError(t, err)
	defer cl.Abort()
	time.Sleep(100 * time.Millisecond) // the server's handlers run
	stop()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
