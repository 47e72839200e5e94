package transport

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// countingHandler counts Admit/Dropped/Serve like bench.Server's stream
// counter; Admit runs hook (if set) before it admits.
type countingHandler struct {
	echoHandler
	admitted, dropped, served atomic.Int64
	hook                      func()
}

func (h *countingHandler) Admit(peer netip.Addr, pd []byte) error {
	if err := h.echoHandler.Admit(peer, pd); err != nil {
		return err
	}
	if h.hook != nil {
		h.hook()
	}
	h.admitted.Add(1)
	return nil
}

func (h *countingHandler) Dropped(netip.Addr) { h.dropped.Add(1) }

func (h *countingHandler) Serve(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint) {
	defer h.served.Add(1)
	h.echoHandler.Serve(ctx, peer, ep)
}

// balanced reports whether every admitted stream was either served or
// dropped: the invariant bench.Server's --max-streams counter relies on.
func (h *countingHandler) balanced() bool {
	return h.admitted.Load() == h.dropped.Load()+h.served.Load()
}

// sendMPARequest dials addr over plain TCP and sends an enhanced MPA
// Request carrying pd, as transport.Dial's mpa.Dial would.
func sendMPARequest(t *testing.T, addr string, pd string) *net.TCPConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	req := mpa.Frame{CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 4}, PrivateData: []byte(pd)}
	_, err = nc.Write(req.Append(nil))
	require.NoError(t, err)
	return nc.(*net.TCPConn)
}

// TestMPAFailedHandshakeIsDropped is the regression test of the stream
// counter leak: a peer that resets its TCP connection after the server
// admitted its MPA Request (so the MPA Reply cannot be sent) used to leave
// the admission counted for ever (bench.Server's active count never came
// down, and --max-streams eventually rejected every client). Now the
// failed start-up reports Dropped.
func TestMPAFailedHandshakeIsDropped(t *testing.T) {
	ln, err := Listen(Options{LLP: MPA}, "127.0.0.1:0")
	require.NoError(t, err)
	inAdmit, resetDone := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	h := &countingHandler{hook: func() {
		if first.CompareAndSwap(false, true) { // only the first peer's
			inAdmit <- struct{}{}
			<-resetDone
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	pd := new(rdmap.Device).AllocPD()
	go func() { done <- ln.Serve(ctx, pd, h) }()

	nc := sendMPARequest(t, ln.Addr(), "ok")
	<-inAdmit
	// The client gives up mid-handshake with a reset (SO_LINGER 0): the
	// server's MPA Reply write then fails with ECONNRESET or EPIPE.
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close())
	time.Sleep(50 * time.Millisecond) // the RST reaches the server socket
	close(resetDone)
	// Admit counts the stream only after the hook returns.
	require.Eventually(t, func() bool { return h.admitted.Load() == 1 && h.balanced() }, 5*time.Second, time.Millisecond,
		"admitted %d, dropped %d, served %d", h.admitted.Load(), h.dropped.Load(), h.served.Load())
	assert.Equal(t, int64(1), h.admitted.Load())
	// Usually the Reply's write fails (ECONNRESET/EPIPE) and the start-up
	// is dropped; if the RST arrives only after the Reply was written, the
	// stream is served and ends at once. Either way it is accounted once.
	assert.Equal(t, int64(1), h.dropped.Load()+h.served.Load())

	// A well-behaved client is still served after the failed one.
	cpd := new(rdmap.Device).AllocPD()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	c, err := Dial(dctx, Options{LLP: MPA, PrivateData: []byte("ok")}, ln.Addr(), 1, cpd, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close(dctx))
	cancel()
	require.NoError(t, <-done)
	assert.True(t, h.balanced(), "admitted %d, dropped %d, served %d", h.admitted.Load(), h.dropped.Load(), h.served.Load())
}

// TestMPAHandshakeCutByShutdown: the server stops (ctx ends) while a
// start-up it admitted is still sending its Reply: the admission is
// dropped, not leaked.
func TestMPAHandshakeCutByShutdown(t *testing.T) {
	ln, err := Listen(Options{LLP: MPA}, "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	h := &countingHandler{hook: func() {
		cancel()
		time.Sleep(50 * time.Millisecond) // the start-up's deadline fires
	}}
	done := make(chan error, 1)
	pd := new(rdmap.Device).AllocPD()
	go func() { done <- ln.Serve(ctx, pd, h) }()
	nc := sendMPARequest(t, ln.Addr(), "ok")
	defer nc.Close()
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), h.admitted.Load())
	assert.True(t, h.balanced(), "admitted %d, dropped %d, served %d", h.admitted.Load(), h.dropped.Load(), h.served.Load())
}

// TestMPASlowPeerDoesNotBlockOthers: start-ups run concurrently, so a peer
// that connects and sends nothing does not hold up the next one.
func TestMPASlowPeerDoesNotBlockOthers(t *testing.T) {
	ln, err := Listen(Options{LLP: MPA}, "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := &countingHandler{}
	pd := new(rdmap.Device).AllocPD()
	go func() { done <- ln.Serve(ctx, pd, h) }()
	silent, err := net.Dial("tcp", ln.Addr())
	require.NoError(t, err)
	defer silent.Close()
	time.Sleep(20 * time.Millisecond)
	cpd := new(rdmap.Device).AllocPD()
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	c, err := Dial(dctx, Options{LLP: MPA, PrivateData: []byte("ok")}, ln.Addr(), 1, cpd, nil)
	require.NoError(t, err, "the silent peer must not block the start-up of the next")
	require.NoError(t, c.Close(dctx))
	cancel()
	require.NoError(t, <-done)
	assert.True(t, h.balanced())
}
