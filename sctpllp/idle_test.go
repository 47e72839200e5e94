package sctpllp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// TestListener_IdleAssociationsClosed: associations that never open a
// session (2000 of them held +113 MB and outlived the dead-peer timeout)
// are aborted after IdleTimeout, counted, and their memory and goroutines
// given back; an association that carries a session stays.
func TestListener_IdleAssociationsClosed(t *testing.T) {
	const n = 30
	ln, err := Listen("127.0.0.1:0", Config{Stack: pion.Stack(pion.Config{}), IdleTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := runtime.NumGoroutine()
	srv := make(chan *Association, n+1)
	go func() {
		for {
			a, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			srv <- a
		}
	}()
	var idle []*Association
	for range n {
		c, err := Dial(ctx, ln.Addr(), Config{Stack: pion.Stack(pion.Config{})})
		require.NoError(t, err)
		idle = append(idle, c)
	}
	legit, err := Dial(ctx, ln.Addr(), Config{Stack: pion.Stack(pion.Config{})})
	require.NoError(t, err)
	defer legit.Abort()
	// Associations are accepted in the order their handshakes completed
	// on the listener's side, which need not be the dial order: the
	// legitimate one is found by its peer's address.
	var servers []*Association
	var legitSrv *Association
	for range n + 1 {
		a := <-srv
		if a.Transport().RemoteAddr().String() == legit.Transport().LocalAddr().String() {
			legitSrv = a
			continue
		}
		servers = append(servers, a)
	}
	require.NotNil(t, legitSrv, "the legitimate association accepted")
	go func() {
		in, err := legitSrv.Accept(ctx)
		if err == nil {
			_, _ = in.Accept(AcceptParams{})
		}
	}()
	_, err = legit.Open(ctx, 1, OpenRequest{})
	require.NoError(t, err)

	for _, a := range servers {
		select {
		case <-a.Done():
			assert.Equal(t, uint64(1), a.Stats().IdleClosed)
		case <-time.After(10 * time.Second):
			t.Fatal("an idle association was not closed")
		}
	}
	for _, c := range idle {
		select {
		case <-c.Done(): // the ABORT reached the dialer
		case <-time.After(10 * time.Second):
			t.Fatal("the idle dialer did not see the ABORT")
		}
	}
	time.Sleep(500 * time.Millisecond) // longer than IdleTimeout again
	select {
	case <-legitSrv.Done():
		t.Fatalf("the association with a session was closed: %v", legitSrv.Err())
	default:
	}
	assert.Zero(t, legitSrv.Stats().IdleClosed)
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+40 }, 10*time.Second, 20*time.Millisecond,
		"goroutines of the idle associations released")
}

// TestIdle_EarlyChunksWithoutInitiateClosed (issue 43): an association
// that never sends an Initiate but keeps sending chunks that claim to
// follow one (held for QuietTime each, on ever new streams) used to keep
// the idle timer from ever closing it. It is now aborted at most
// IdleTimeout + QuietTime after it started, however long it keeps on.
func TestIdle_EarlyChunksWithoutInitiateClosed(t *testing.T) {
	ft := newFake(64)
	a := NewAssociation(ft, Config{IdleTimeout: 300 * time.Millisecond, QuietTime: 200 * time.Millisecond})
	defer a.Abort()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the peer reads nothing
		for {
			select {
			case <-ft.out:
			case <-stop:
				return
			}
		}
	}()
	sent := 0
	for sid := uint16(1); ; sid = sid%63 + 1 {
		select {
		case <-a.Done():
			assert.Equal(t, uint64(1), a.Stats().IdleClosed)
			require.ErrorIs(t, a.Err(), llp.ErrAborted)
			assert.Greater(t, sent, 5, "the peer kept sending until the end")
			return
		case <-time.After(30 * time.Millisecond):
		}
		if sent > 2000 {
			t.Fatal("the association was not closed while its peer sent chunks without an Initiate")
		}
		ft.injectSeg(sid, 1, []byte{1})
		sent++
	}
}

// TestIdle_StalledSessionClosed (issue 43): a session whose peer leaves a
// DDP-SSN gap and stalls ends after MaxGapTime; with KeepIdle the
// association is then idle and aborted after IdleTimeout, without it shut
// down at once (RFC 5040 §7). Either way its memory comes back.
func TestIdle_StalledSessionClosed(t *testing.T) {
	for _, keepIdle := range []bool{false, true} {
		t.Run(map[bool]string{false: "shutdown", true: "keep-idle"}[keepIdle], func(t *testing.T) {
			b := membudget.New(1 << 20)
			ft := newFake(64)
			a := NewAssociation(ft, Config{MaxGapTime: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
				KeepIdle: keepIdle, Budget: b})
			defer a.Abort()
			_, h := passiveSession(t, a, ft, 1)
			ft.injectSeg(1, 3, make([]byte, 100)) // DDP-SSN 1 and 2 never come
			assert.Positive(t, b.Used())
			require.ErrorIs(t, h.waitClosed(t), errHeldLimit)
			select {
			case <-a.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the stalled association was not closed")
			}
			st := a.Stats()
			assert.Equal(t, uint64(1), st.GapTimeouts)
			if keepIdle {
				assert.Equal(t, uint64(1), st.IdleClosed)
			} else {
				require.NoError(t, a.Err(), "a graceful shutdown")
			}
			assert.Zero(t, b.Used())
		})
	}
}
