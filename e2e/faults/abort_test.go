package faults

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pion/sctp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// faultServer sizes the in-process servers like the child's.
var faultServer = childServer

// pionServer listens with pion SCTP on laddr, serves one association with
// a server and returns the listener address and a handle on the server's
// association (available once the client has dialled).
func pionServer(t *testing.T, laddr string, cfg sctpllp.Config, listen func(func() error) error) (addr string, assoc func() *sctpllp.Association) {
	t.Helper()
	srv, err := newServer(faultServer)
	require.NoError(t, err)
	var ln *sctpllp.Listener
	require.NoError(t, listen(func() error {
		var err error
		ln, err = sctpllp.Listen(laddr, cfg)
		return err
	}))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *sctpllp.Association, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, err := ln.Accept(ctx)
		_ = ln.Close()
		if err != nil {
			close(got)
			return
		}
		got <- a
		mgr := streams.New(a, srv.pd, streamsConfig(faultServer.Recvs))
		_ = srv.serveStreams(ctx, mgr)
		<-ctx.Done()
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = mgr.Close(cctx)
		ccancel()
		_ = a.Abort()
	}()
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		wg.Wait()
		srv.abortAll()
	})
	var a *sctpllp.Association
	return ln.Addr(), func() *sctpllp.Association {
		if a == nil {
			select {
			case a = <-got:
			case <-time.After(20 * time.Second):
			}
			require.NotNil(t, a, "server association not established")
		}
		return a
	}
}

// mpaServer listens for MPA on laddr and serves every connection; conns
// yields the server's connections.
func mpaServer(t *testing.T, laddr string, listen func(func() error) error) (addr string, conns <-chan *mpa.Conn) {
	t.Helper()
	srv, err := newServer(faultServer)
	require.NoError(t, err)
	var ln *mpa.Listener
	require.NoError(t, listen(func() error {
		var err error
		ln, err = mpa.Listen("tcp", laddr, srv.mpaConfig())
		return err
	}))
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *mpa.Conn, 4)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.serveMPA(ctx, ln, ch)
	}()
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		wg.Wait()
		srv.abortAll()
	})
	return ln.Addr().String(), ch
}

// here runs fn in the current network namespace.
func here(fn func() error) error { return fn() }

// TestPeerAbort_SCTP: the peer aborts the association (SCTP ABORT, RFC
// 9260 §9.1) while four streams have many work requests outstanding. RFC
// 5043 §11.3: every DDP stream session on the association ends with it;
// RFC 5040 §5.4, §6.2.1: each endpoint flushes its queues.
func TestPeerAbort_SCTP(t *testing.T) {
	leakCheck(t)
	addr, serverAssoc := pionServer(t, "127.0.0.1:0", sctpllp.Config{Stack: pion.Stack(pion.Config{})}, here)
	mgr, res := sctpFault(t, addr, sctpllp.Config{Stack: pion.Stack(pion.Config{})}, here, abortNow(t, serverAssoc))
	// The cause is the peer's ABORT chunk — or, when the peer's socket is
	// gone before pion read the ABORT, the ICMP port unreachable that the
	// next write draws (ECONNREFUSED). Never a graceful end.
	aerr := mgr.Association().Err()
	assert.True(t, errors.Is(aerr, sctp.ErrChunk) || errors.Is(aerr, syscall.ECONNREFUSED),
		"association error names the ABORT or the unreachable peer: %v", aerr)
	t.Logf("pion, peer ABORT: %v", res)
}

// TestPeerAbort_Native is TestPeerAbort_SCTP over the project's own SCTP
// stack: the association's error is the peer's ABORT.
func TestPeerAbort_Native(t *testing.T) {
	leakCheck(t)
	cfg := sctpllp.Config{Stack: native.Stack(native.Config{}, nil)}
	addr, serverAssoc := pionServer(t, "127.0.0.1:0", cfg, here)
	mgr, res := sctpFault(t, addr, cfg, here, abortNow(t, serverAssoc))
	aerr := mgr.Association().Err()
	assert.ErrorIs(t, aerr, llp.ErrAborted)
	var ae *nsctp.AbortError
	require.ErrorAs(t, aerr, &ae, "the peer's ABORT: %v", aerr)
	assert.False(t, ae.Local)
	t.Logf("native, peer ABORT: %v", res)
}

// abortNow is the fault of the peer aborting its association.
func abortNow(t *testing.T, serverAssoc func() *sctpllp.Association) func() time.Time {
	return func() time.Time {
		at := time.Now()
		require.NoError(t, serverAssoc().Abort())
		return at
	}
}

// TestPeerReset_TCP: the peer resets the TCP connection (SO_LINGER 0, then
// close: RST) under an MPA connection with many work requests
// outstanding: "TCP connection lost" (RFC 5044 §8 code 1) and a flush of
// everything (RFC 5040 §5.4, §6.2.1).
func TestPeerReset_TCP(t *testing.T) {
	leakCheck(t)
	addr, conns := mpaServer(t, "127.0.0.1:0", here)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := dialMPA(t, ctx, addr, here)
	var sc *mpa.Conn
	select {
	case sc = <-conns:
	case <-time.After(20 * time.Second):
		t.Fatal("server connection not established")
	}
	waitProgress(t, []*load{l}, progressLimit)
	out := totalOutstanding([]*load{l})
	tc, ok := sc.NetConn().(*net.TCPConn)
	require.True(t, ok)
	require.NoError(t, tc.SetLinger(0))
	at := time.Now()
	require.NoError(t, tc.Close())
	res := finish(t, []*load{l}, at, out, flushLimit)
	checkConnectionLost(t, l)
	assert.True(t, errors.Is(l.ep.Err(), syscall.ECONNRESET) || errors.Is(l.ep.Err(), syscall.EPIPE),
		"the RST surfaces as ECONNRESET or EPIPE: %v", l.ep.Err())
	t.Logf("MPA, peer RST: %v", res)
}
