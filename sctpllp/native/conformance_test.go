package native_test

import (
	"context"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// TestNativeTransportConformance runs the Transport contract suite over
// the project's own SCTP stack (package sctp) on 127.0.0.1.
func TestNativeTransportConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (backend.Transport, backend.Transport) {
		ln, err := native.Listen("127.0.0.1:0", native.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return establish(t, ln.Addr().String(), func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
			func(ctx context.Context, addr string) (backend.Transport, error) {
				return native.Dial(ctx, addr, native.Config{})
			})
	})
}

// establish is transporttest.Establish with the dialer given the
// listener's address.
func establish(t *testing.T, addr string, accept func(context.Context) (backend.Transport, error),
	dial func(context.Context, string) (backend.Transport, error)) (backend.Transport, backend.Transport) {
	return transporttest.Establish(t, accept, func(ctx context.Context) (backend.Transport, error) { return dial(ctx, addr) })
}
