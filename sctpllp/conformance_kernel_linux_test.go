//go:build linux

package sctpllp_test

import (
	"context"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/vmtest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
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
	transporttest.Run(t, func(t *testing.T) (sctpllp.Transport, sctpllp.Transport) {
		ln, err := sctpllp.ListenKernel("127.0.0.1:0", sctpllp.KernelConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		return transporttest.Establish(t, ln.Accept,
			func(ctx context.Context) (sctpllp.Transport, error) {
				return sctpllp.DialKernel(ctx, ln.Addr().String(), sctpllp.KernelConfig{})
			})
	})
}
