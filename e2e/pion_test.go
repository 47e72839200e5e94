package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/sctpllp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// pionPair is the Factory of userspace SCTP (pion) over UDP loopback.
func pionPair(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ln, err := sctpllp.Listen("127.0.0.1:0", sctpllp.Config{})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		a   *sctpllp.Association
		err error
	}
	ch := make(chan res, 1)
	go func() {
		a, err := ln.Accept(ctx)
		ch <- res{a, err}
	}()
	client, err = sctpllp.Dial(ctx, ln.Addr(), sctpllp.Config{})
	require.NoError(t, err)
	r := <-ch
	if r.err != nil {
		client.Abort()
	}
	require.NoError(t, r.err)
	return client, r.a
}

// TestPionSuite runs the end-to-end suite over userspace SCTP (pion/sctp
// over UDP on 127.0.0.1).
func TestPionSuite(t *testing.T) {
	Run(t, pionPair, Options{Streams: 8, MaxSize: 64 << 10})
}

// nativePair is the Factory of the project's own userspace SCTP (package
// sctp) over UDP loopback.
func nativePair(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	cfg := sctpllp.Config{Stack: sctpllp.StackNative}
	ln, err := sctpllp.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		a   *sctpllp.Association
		err error
	}
	ch := make(chan res, 1)
	go func() {
		a, err := ln.Accept(ctx)
		ch <- res{a, err}
	}()
	client, err = sctpllp.Dial(ctx, ln.Addr(), cfg)
	require.NoError(t, err)
	r := <-ch
	if r.err != nil {
		client.Abort()
	}
	require.NoError(t, r.err)
	return client, r.a
}

// TestNativeSuite runs the end-to-end suite over the project's own
// userspace SCTP on 127.0.0.1.
func TestNativeSuite(t *testing.T) {
	Run(t, nativePair, Options{Streams: 8, MaxSize: 64 << 10})
}
