package transport

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// TestHandlerAdapters: HandlerFuncs serves with OnServe alone, calls the
// functions it has (OnAdmit's error rejects the stream with its text, RFC
// 5043 §6.3) and defaults the others.
func TestHandlerAdapters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := Options{LLP: SCTPNative}
	dev := new(rdmap.Device)
	serve := func(h Handler) (addr string, stop func()) {
		ln, err := Listen(o, "127.0.0.1:0")
		require.NoError(t, err)
		sctx, cancel := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- ln.Serve(sctx, dev.AllocPD(), h) }()
		return ln.Addr(), func() { cancel(); require.NoError(t, <-served) }
	}

	var served atomic.Int32
	addr, stop := serve(&HandlerFuncs{OnServe: func(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint) {
		served.Add(1)
		assert.True(t, peer.IsLoopback())
		<-ctx.Done()
	}})
	cl, err := Dial(ctx, o, addr, 2, dev.AllocPD(), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return served.Load() == 2 }, 20*time.Second, 10*time.Millisecond)
	stop()
	cl.Abort()

	var admitted, dropped atomic.Int32
	addr, stop = serve(&HandlerFuncs{OnAdmit: func(_ netip.Addr, pd []byte) error {
		admitted.Add(1)
		if string(pd) != "let me in" {
			return errors.New("not on the list")
		}
		return nil
	}, OnDropped: func(netip.Addr) { dropped.Add(1) }})
	defer stop()
	_, err = Dial(ctx, o, addr, 1, dev.AllocPD(), nil)
	require.ErrorIs(t, err, ErrRejected)
	assert.Contains(t, err.Error(), "not on the list")
	o.PrivateData = []byte("let me in")
	cl, err = Dial(ctx, o, addr, 1, dev.AllocPD(), nil)
	require.NoError(t, err, "admitted; the nil OnServe holds the stream until it ends")
	require.NoError(t, cl.Close(ctx))
	assert.Equal(t, int32(2), admitted.Load())
	assert.Zero(t, dropped.Load())
}
