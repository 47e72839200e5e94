package sctpllp_test

import (
	"context"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// TestPionTransportConformance runs the Transport contract suite over the
// userspace backend (pion/sctp over UDP) on 127.0.0.1.
func TestPionTransportConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (sctpllp.Transport, sctpllp.Transport) {
		ln, err := sctpllp.ListenPion("127.0.0.1:0", sctpllp.PionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return establish(t, ln.Addr().String(), func(ctx context.Context) (sctpllp.Transport, error) { return ln.Accept(ctx) },
			func(ctx context.Context, addr string) (sctpllp.Transport, error) {
				return sctpllp.DialPion(ctx, addr, sctpllp.PionConfig{})
			})
	})
}

// TestNativeTransportConformance runs the Transport contract suite over
// the project's own SCTP stack (package sctp) on 127.0.0.1.
func TestNativeTransportConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (sctpllp.Transport, sctpllp.Transport) {
		ln, err := sctpllp.ListenNative("127.0.0.1:0", sctpllp.NativeConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return establish(t, ln.Addr().String(), func(ctx context.Context) (sctpllp.Transport, error) { return ln.Accept(ctx) },
			func(ctx context.Context, addr string) (sctpllp.Transport, error) {
				return sctpllp.DialNative(ctx, addr, sctpllp.NativeConfig{})
			})
	})
}

// establish is transporttest.Establish with the dialer given the
// listener's address.
func establish(t *testing.T, addr string, accept func(context.Context) (sctpllp.Transport, error),
	dial func(context.Context, string) (sctpllp.Transport, error)) (sctpllp.Transport, sctpllp.Transport) {
	return transporttest.Establish(t, accept, func(ctx context.Context) (sctpllp.Transport, error) { return dial(ctx, addr) })
}
