package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// userspacePair returns the Factory of a userspace SCTP stack
// (pion.Stack or native.Stack) over UDP loopback.
func userspacePair(stack backend.Stack) func(t *testing.T) (client, server *sctpllp.Association) {
	return securePair(stack, stack)
}

// securePair is userspacePair with the server's and the client's stack
// apart (as the two ends of DTLS).
func securePair(sstack, cstack backend.Stack) func(t *testing.T) (client, server *sctpllp.Association) {
	return func(t *testing.T) (client, server *sctpllp.Association) {
		t.Helper()
		cfg := sctpllp.Config{Stack: sstack}
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
		cfg.Stack = cstack
		client, err = sctpllp.Dial(ctx, ln.Addr(), cfg)
		require.NoError(t, err)
		r := <-ch
		if r.err != nil {
			client.Abort()
		}
		require.NoError(t, r.err)
		return client, r.a
	}
}

// TestPionSuite runs the end-to-end suite over userspace SCTP (pion/sctp
// over UDP on 127.0.0.1).
func TestPionSuite(t *testing.T) {
	Run(t, userspacePair(pion.Stack(pion.Config{})), Options{Streams: 8, MaxSize: 64 << 10})
}

// TestNativeSuite runs the end-to-end suite over the project's own
// userspace SCTP on 127.0.0.1.
func TestNativeSuite(t *testing.T) {
	Run(t, userspacePair(native.Stack(native.Config{}, nil)), Options{Streams: 8, MaxSize: 64 << 10})
}

// TestNativeDTLSSuite runs the end-to-end suite over the project's own
// SCTP inside DTLS (RFC 8261), with mutual certificate authentication:
// every operation on several streams, and a Terminate on one of them.
func TestNativeDTLSSuite(t *testing.T) {
	sf, cf := securetest.Mutual(t)
	sd, err := sf.DTLS(true)
	require.NoError(t, err)
	cd, err := cf.DTLS(false)
	require.NoError(t, err)
	Run(t, securePair(native.Stack(native.Config{}, sd), native.Stack(native.Config{}, cd)), Options{Streams: 8, MaxSize: 64 << 10})
}
