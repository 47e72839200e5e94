//go:build linux

package kernel_test

import (
	"context"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// TestKernelTransportConformance runs the Transport contract suite over
// Linux kernel SCTP. Where the running kernel has no SCTP it boots the test
// VM (scripts/vm) and runs itself there; it never skips.
func TestKernelTransportConformance(t *testing.T) {
	if !vmtest.KernelHasSCTP() {
		if vmtest.InVM() {
			t.Fatal("running in the test VM but the kernel has no SCTP: sctp.ko not loaded")
		}
		vmtest.RunInVM(t, ".", "^TestKernelTransportConformance$")
		return
	}
	transporttest.Run(t, func(t *testing.T) (backend.Transport, backend.Transport) {
		st := kernel.Stack(kernel.Config{})
		ln, err := st.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return transporttest.Establish(t, ln.Accept,
			func(ctx context.Context) (backend.Transport, error) {
				return st.Dial(ctx, ln.Addr().String())
			})
	})
}
