package transport

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	return ep.PostRecv(rdmap.RecvWR{ID: 1, Buf: make([]byte, 64)})
}

func (echoHandler) Dropped(netip.Addr) {}

func (echoHandler) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	c, err := ep.RecvCQ().Poll(ctx)
	if err != nil || c.Err != nil {
		return
	}
	buf := make([]byte, c.Length)
	_ = ep.Send(ctx, buf)
	select {
	case <-ep.Done():
	case <-ctx.Done():
	}
}

func TestDialListenEachLLP(t *testing.T) {
	for _, llp := range []string{SCTPPion, MPA} {
		ln, err := Listen(Options{LLP: llp}, "127.0.0.1:0")
		require.NoError(t, err)
		assert.Equal(t, llp, ln.Kind())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		pd := rdmap.NewDevice(rdmap.DeviceOptions{}).AllocPD()
		go func() { done <- ln.Serve(ctx, pd, echoHandler{}) }()

		cpd := rdmap.NewDevice(rdmap.DeviceOptions{}).AllocPD()
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		bufs := map[*rdmap.Endpoint][]byte{}
		c, err := Dial(dctx, Options{LLP: llp, PrivateData: []byte("ok"), IRD: 4, ORD: 4}, ln.Addr(), 3, cpd,
			func(ep *rdmap.Endpoint) error {
				b := make([]byte, 64)
				bufs[ep] = b
				return ep.PostRecv(rdmap.RecvWR{ID: 7, Buf: b})
			})
		require.NoError(t, err, llp)
		require.Len(t, c.Endpoints, 3)
		assert.GreaterOrEqual(t, c.MULPDU, 128)
		for _, ep := range c.Endpoints {
			assert.Equal(t, 4, ep.ORD(), "RFC 6581 §9.1 negotiated ORD")
			require.NoError(t, ep.Send(dctx, []byte("hello")))
			comp, err := ep.RecvCQ().Poll(dctx)
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
	pd := rdmap.NewDevice(rdmap.DeviceOptions{}).AllocPD()
	_, err := Dial(context.Background(), Options{LLP: "udp"}, "x", 1, pd, nil)
	require.ErrorIs(t, err, ErrUnknownLLP)
	_, err = Listen(Options{LLP: "udp"}, "x")
	require.ErrorIs(t, err, ErrUnknownLLP)
	_, err = Dial(context.Background(), Options{}, "x", 0, pd, nil)
	require.Error(t, err)
}

func TestKernelUnavailableIsReported(t *testing.T) {
	pd := rdmap.NewDevice(rdmap.DeviceOptions{}).AllocPD()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Dial(ctx, Options{LLP: SCTPKernel}, "127.0.0.1:9", 1, pd, nil)
	require.Error(t, err)
	if errors.Is(err, kernel.ErrUnavailable) {
		assert.Contains(t, err.Error(), "sctp-kernel")
	}
}
