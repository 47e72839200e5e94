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
		st := native.Stack(native.Config{}, nil)
		ln, err := st.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		addr := ln.Addr().String()
		return transporttest.Establish(t, ln.Accept,
			func(ctx context.Context) (backend.Transport, error) { return st.Dial(ctx, addr) })
	})
}
