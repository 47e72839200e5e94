package sctpllp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListener_IdleAssociationsClosed: associations that never open a
// session (2000 of them held +113 MB and outlived the dead-peer timeout)
// are aborted after IdleTimeout, counted, and their memory and goroutines
// given back; an association that carries a session stays.
func TestListener_IdleAssociationsClosed(t *testing.T) {
	const n = 30
	ln, err := Listen("127.0.0.1:0", Config{IdleTimeout: 300 * time.Millisecond})
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
		c, err := Dial(ctx, ln.Addr(), Config{})
		require.NoError(t, err)
		idle = append(idle, c)
	}
	legit, err := Dial(ctx, ln.Addr(), Config{})
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
