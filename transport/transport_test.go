package transport

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
)

// TestMain runs a re-executed test binary's server role (endofpeer_test.go),
// else the tests under goleak.
func TestMain(m *testing.M) {
	if llp := os.Getenv(childEnv); llp != "" {
		os.Exit(runChild(llp))
	}
	goleak.VerifyTestMain(m)
}

// echoHandler admits streams whose private data is "ok" and answers every
// Send with the same octets.
type echoHandler struct{}

func (echoHandler) Admit(_ netip.Addr, pd []byte) error {
	if string(pd) != "ok" {
		return errors.New("go away")
	}
	return nil
}

func (echoHandler) Prepare(ep *rdmap.Endpoint) error {
	return ep.PostRecv(1, make([]byte, 64))
}

func (echoHandler) Dropped(netip.Addr) {}

func (echoHandler) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	c, err := ep.Config().RecvCQ.Poll(ctx)
	if err != nil || c.Err != nil {
		return
	}
	buf := make([]byte, c.Length)
	_, _ = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: buf})
	select {
	case <-ep.Done():
	case <-ctx.Done():
	}
}

func TestDialListenEachLLP(t *testing.T) {
	for _, llp := range []string{SCTPPion, MPA} {
		ln, err := Listen(Options{LLP: llp}, "127.0.0.1:0")
		require.NoError(t, err)
		assert.Equal(t, llp, ln.Stats().LLP)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		pd := new(rdmap.Device).AllocPD()
		go func() { done <- ln.Serve(ctx, pd, echoHandler{}) }()

		cpd := new(rdmap.Device).AllocPD()
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		bufs := map[*rdmap.Endpoint][]byte{}
		c, err := Dial(dctx, Options{LLP: llp, PrivateData: []byte("ok"), IRD: 4, ORD: 4}, ln.Addr(), 3, cpd,
			func(ep *rdmap.Endpoint) error {
				b := make([]byte, 64)
				bufs[ep] = b
				return ep.PostRecv(7, b)
			})
		require.NoError(t, err, llp)
		require.Len(t, c.Endpoints, 3)
		assert.GreaterOrEqual(t, c.MULPDU, 128)
		for _, ep := range c.Endpoints {
			assert.Equal(t, 4, ep.Config().ORD, "RFC 6581 §9.1 negotiated ORD")
			require.NoError(t, errOf(ep.Do(dctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("hello")})))
			comp, err := ep.Config().RecvCQ.Poll(dctx)
			require.NoError(t, err)
			require.NoError(t, comp.Err)
			assert.Equal(t, 5, comp.Length)
		}
		require.NoError(t, c.Close(dctx))

		_, err = Dial(dctx, Options{LLP: llp, PrivateData: []byte("nope")}, ln.Addr(), 1, cpd, nil)
		require.ErrorIs(t, err, ErrRejected, llp)
		assert.Contains(t, err.Error(), "go away")
		dcancel()
		cancel()
		require.NoError(t, <-done)
	}
}

func TestOptionErrors(t *testing.T) {
	pd := new(rdmap.Device).AllocPD()
	_, err := Dial(context.Background(), Options{LLP: "udp"}, "x", 1, pd, nil)
	require.ErrorIs(t, err, errUnknownLLP)
	_, err = Listen(Options{LLP: "udp"}, "x")
	require.ErrorIs(t, err, errUnknownLLP)
	_, err = Dial(context.Background(), Options{}, "x", 0, pd, nil)
	require.Error(t, err)
}

func TestKernelUnavailableIsReported(t *testing.T) {
	pd := new(rdmap.Device).AllocPD()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Dial(ctx, Options{LLP: SCTPKernel}, "127.0.0.1:9", 1, pd, nil)
	require.Error(t, err)
	if errors.Is(err, kernel.ErrUnavailable) {
		assert.Contains(t, err.Error(), "sctp-kernel")
	}
}

// Options.SendCQ and RecvCQ make every stream of a client use the same
// CQs: one goroutine polls the completions of all of them, told apart by
// their WRIDs, over each LLP.
func TestDialSharedCQs(t *testing.T) {
	for _, llp := range []string{SCTPNative, SCTPPion, MPA} {
		t.Run(llp, func(t *testing.T) {
			ln, err := Listen(Options{LLP: llp}, "127.0.0.1:0")
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ln.Serve(ctx, new(rdmap.Device).AllocPD(), echoHandler{}) }()
			defer func() { cancel(); require.NoError(t, <-done) }()

			sendCQ, recvCQ := rdmap.NewCQ(16), rdmap.NewCQ(16)
			dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer dcancel()
			const n = 3
			bufs := make([][]byte, 0, n)
			c, err := Dial(dctx, Options{LLP: llp, PrivateData: []byte("ok"), SendCQ: sendCQ, RecvCQ: recvCQ},
				ln.Addr(), n, new(rdmap.Device).AllocPD(),
				func(ep *rdmap.Endpoint) error {
					b := make([]byte, 64)
					bufs = append(bufs, b)
					return ep.PostRecv(uint64(100+len(bufs)-1), b)
				})
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close(dctx)) }()
			for i, ep := range c.Endpoints {
				assert.Same(t, sendCQ, ep.Config().SendCQ)
				assert.Same(t, recvCQ, ep.Config().RecvCQ)
				msg := []byte{'s', byte('0' + i)}
				require.NoError(t, errOf(ep.PostSend(rdmap.SendWR{ID: uint64(i), Op: rdmap.WRSend, Local: msg})))
			}
			sent, echoed := map[uint64]bool{}, map[uint64]string{}
			wake := make(chan struct{}, 1)
			notify := func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			sendCQ.SetHandler(notify)
			recvCQ.SetHandler(notify)
			defer sendCQ.SetHandler(nil)
			defer recvCQ.SetHandler(nil)
			var one [1]rdmap.Completion
			for len(sent) < n || len(echoed) < n {
				select {
				case <-wake:
				case <-dctx.Done():
					t.Fatalf("%d sends and %d echoes of %d", len(sent), len(echoed), n)
				}
				for sendCQ.PollN(one[:]) == 1 {
					require.NoError(t, one[0].Err)
					sent[one[0].WRID] = true
				}
				for recvCQ.PollN(one[:]) == 1 {
					c := one[0]
					require.NoError(t, c.Err)
					echoed[c.WRID] = string(bufs[c.WRID-100][:c.Length])
				}
			}
			assert.Equal(t, map[uint64]bool{0: true, 1: true, 2: true}, sent)
			assert.Len(t, echoed, n)
			for id, s := range echoed {
				assert.Len(t, s, 2, "echo of stream %d", id-100)
			}
		})
	}
}
