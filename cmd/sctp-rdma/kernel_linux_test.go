//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/vmtest"
)

// TestCLIKernelSCTPInVM runs the CLI against itself over Linux kernel SCTP
// on 127.0.0.1: serve, bench (every test, bandwidth and latency, several
// streams, --bidir, the table and --json) and ping with data verification,
// then a rejected session — what TestServeBenchEveryTest, TestPingVerified
// and TestServerRejectsSession do over sctp-pion and mpa. The development
// and CI kernels have no SCTP: the test then boots the qemu VM of
// internal/vmtest and runs itself there (never a skip: a VM that cannot be
// set up fails the test). Sizes and counts are small: the guest is
// TCG-emulated.
func TestCLIKernelSCTPInVM(t *testing.T) {
	if !vmtest.KernelHasSCTP() {
		if vmtest.InVM() {
			t.Fatal("running in the test VM but the kernel has no SCTP: sctp.ko not loaded")
		}
		start := time.Now()
		vmtest.RunInVM(t, ".", "^TestCLIKernelSCTPInVM$", vmtest.WithTimeout(4*time.Minute))
		t.Logf("CLI over kernel SCTP in the VM: %v including build and boot", time.Since(start).Round(time.Second))
		return
	}
	const llp = "sctp-kernel"
	addr, stop := serve(t, "--llp", llp)

	t.Run("BenchEveryTest", func(t *testing.T) {
		code, out, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--size", "512,4K", "--iters", "20",
			"--streams", "3", "--json", "all")
		require.Equal(t, 0, code, errOut)
		code2, out2, errOut2 := runCLI("bench", "--llp", llp, "--connect", addr, "--size", "64", "--iters", "20", "--lat",
			"--json", "all")
		require.Equal(t, 0, code2, errOut2)
		checkBenchJSON(t, out+out2, llp, 3, 20)
	})
	t.Run("BenchTableBidir", func(t *testing.T) {
		code, out, errOut := runCLI("bench", "write", "--llp", llp, "--connect", addr, "--size", "16K", "--iters", "20",
			"--streams", "2", "--bidir")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "RDMA Write BW Test")
		assert.Contains(t, out, "bidirectional")
		assert.Regexp(t, `(?m)^ 16384 +all-rev +40 `, out)
	})
	t.Run("PingVerified", func(t *testing.T) {
		code, out, errOut := runCLI("ping", "--llp", llp, "--connect", addr, "--count", "4", "--size", "3000", "--streams", "2")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, 8, strings.Count(out, "3000 octets verified"), out)
		assert.Contains(t, out, "8 iterations verified on 2 streams")
	})
	assert.Contains(t, stop(), "stopped after")

	t.Run("Rejected", func(t *testing.T) {
		addr, stop := serve(t, "--llp", llp, "--max-streams", "1")
		defer stop()
		code, _, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--streams", "2", "--iters", "1", "--size", "64")
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "rejected")
		assert.Contains(t, errOut, "server busy")
	})
}
