package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// userspacePair returns the Factory of a userspace SCTP stack
// (sctpllp.StackPion or sctpllp.StackNative) over UDP loopback.
func userspacePair(stack string) func(t *testing.T) (client, server *sctpllp.Association) {
	return securePair(stack, nil, nil)
}

// securePair is userspacePair with the server and client DTLS
// configurations (nil: plain).
func securePair(stack string, sdtls, cdtls *dtls.Config) func(t *testing.T) (client, server *sctpllp.Association) {
	return func(t *testing.T) (client, server *sctpllp.Association) {
		t.Helper()
		cfg := sctpllp.Config{Stack: stack, DTLS: sdtls}
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
		cfg.DTLS = cdtls
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
	Run(t, userspacePair(sctpllp.StackPion), Options{Streams: 8, MaxSize: 64 << 10})
}

// TestNativeSuite runs the end-to-end suite over the project's own
// userspace SCTP on 127.0.0.1.
func TestNativeSuite(t *testing.T) {
	Run(t, userspacePair(sctpllp.StackNative), Options{Streams: 8, MaxSize: 64 << 10})
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
	Run(t, securePair(sctpllp.StackNative, sd, cd), Options{Streams: 8, MaxSize: 64 << 10})
}
