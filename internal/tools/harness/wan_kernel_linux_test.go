//go:build linux

package harness

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// Environment of TestWANKernelInVM: envWANKernelFull=1 runs the whole grid
// (make wan-kernel-docs) instead of the one-path check of make test;
// envWANKernelOut names the page whose kernel section the host replaces
// with the run's.
const (
	envWANKernelFull = "SCTPRDMA_WAN_KERNEL_FULL"
	envWANKernelOut  = "SCTPRDMA_WAN_KERNEL_OUT"
	// wanKernelData prefixes the console lines that carry the section
	// from the guest to the host, base64 in numbered pieces (a console
	// line is no place for Markdown tables).
	wanKernelData = "VMTEST-DATA wan-kernel"
)

// wanKernelConfig is the kernel run: Linux kernel SCTP and MPA over the
// kernel's netem (veth; TUN for the head-of-line runs, which lose one
// stream's packets only) at a 20 Mbit/s bottleneck, which the TCG-emulated
// guest can carry. Without full: one path, no outage, fairness or
// head-of-line runs.
func wanKernelConfig(full bool) WANConfig {
	c := WANConfig{LLPs: []string{transport.SCTPKernel, transport.MPA}, Rate: 20e6, InVM: true, Progress: os.Stdout}
	if !full {
		c.RTTs, c.Losses = []time.Duration{10 * time.Millisecond}, []float64{0.001}
		c.Duration, c.PingIters, c.Backend = time.Second, 10, netem.BackendKernel
		c.OutageRTT, c.FairRTT, c.HOLRTT = -1, -1, -1
	}
	return c
}

// TestWANKernelInVM measures kernel SCTP (the RFC 5043 adaptation over
// Linux's SCTP) over emulated wide-area paths, where the host cannot: its
// kernel has neither SCTP nor sch_netem. The body runs in the qemu VM of
// internal/tools/vmtest and prints the page section; the host checks it and,
// with envWANKernelOut, writes it into that page (make wan-kernel-docs).
func TestWANKernelInVM(t *testing.T) {
	full := os.Getenv(envWANKernelFull) == "1"
	if vmtest.InVM() {
		wanKernelGuest(t, full)
		return
	}
	var pieces []string
	opts := []vmtest.Option{vmtest.WithRace(false), vmtest.WithOutput(func(line string) {
		if i := strings.Index(line, wanKernelData+" "); i >= 0 {
			pieces = append(pieces, line[i+len(wanKernelData)+1:])
		}
	})}
	if full {
		opts = append(opts, vmtest.WithEnv(envWANKernelFull+"=1"), vmtest.WithTimeout(80*time.Minute))
	}
	vmtest.RunInVM(t, ".", "^TestWANKernelInVM$", opts...)
	sec := joinPieces(t, pieces)
	s := string(sec)
	require.True(t, strings.HasPrefix(s, wanKernelBegin), "the section from the guest")
	require.True(t, strings.HasSuffix(s, wanKernelEnd+"\n"))
	assert.Contains(t, s, "Linux kernel SCTP")
	assert.Contains(t, s, "the kernel's netem on a veth pair")
	if !full {
		assert.NotContains(t, s, "error:", "every figure measured")
	}
	if out := os.Getenv(envWANKernelOut); out != "" {
		page, err := os.ReadFile(out)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out, WANKernelMarks.Splice(page, sec), 0o644))
		t.Logf("wrote the kernel-SCTP WAN section of %s", out)
	}
}

// wanKernelGuest is the body in the VM: the run, its checks, and the
// section on the console.
func wanKernelGuest(t *testing.T, full bool) {
	require.True(t, vmtest.KernelHasSCTP(), "the VM's kernel has SCTP")
	res, err := RunWAN(wanKernelConfig(full))
	require.NoError(t, err)
	assert.Equal(t, netem.BackendKernel, res.Backend, "the guest's kernel has sch_netem")
	// The emulated guest CPU (TCG), shared with whatever else the host
	// runs, caps what crosses the bottleneck: half its rate proves the
	// emulator passes traffic at the configured order; the section states
	// the figures measured.
	assert.Greater(t, res.EmulatorUDP, 10.0, "UDP through the 20 Mbit/s bottleneck")
	assert.Greater(t, res.EmulatorTCP, 10.0, "TCP through it")
	for _, c := range res.Cells {
		for _, k := range []struct{ llp, what string }{{"tcp", "raw"}, {transport.SCTPKernel, "raw"},
			{transport.SCTPKernel, "write"}, {transport.SCTPKernel, "read"}, {transport.SCTPKernel, "rtt"},
			{transport.MPA, "write"}, {transport.MPA, "read"}, {transport.MPA, "rtt"}} {
			f, ok := c.figure(k.llp, k.what)
			require.True(t, ok, "%v %g: %s %s", c.RTT, c.Loss, k.llp, k.what)
			if full && f.Err != nil {
				// The grid's lossy long paths may stall a run for longer
				// than the watchdog allows (Linux SCTP's RTO.Min is 1 s,
				// its backoff doubles it): the page shows the error.
				t.Logf("%v %g%%: %s %s: %v", c.RTT, c.Loss*100, k.llp, k.what, f.Err)
				continue
			}
			require.NoError(t, f.Err, "%v %g: %s %s", c.RTT, c.Loss, k.llp, k.what)
			assert.Positive(t, f.Value, "%v %g: %s %s", c.RTT, c.Loss, k.llp, k.what)
		}
	}
	var sec bytes.Buffer
	res.Markdown(&sec, nil)
	enc := base64.StdEncoding.EncodeToString(sec.Bytes())
	const piece = 600
	n := (len(enc) + piece - 1) / piece
	for i := range n {
		fmt.Printf("%s %d/%d %s\n", wanKernelData, i+1, n, enc[i*piece:min((i+1)*piece, len(enc))])
	}
}

// joinPieces reassembles the numbered base64 pieces of the section.
func joinPieces(t *testing.T, pieces []string) []byte {
	t.Helper()
	require.NotEmpty(t, pieces, "the guest printed its section")
	var parts []string
	for i, p := range pieces {
		idx, data, ok := strings.Cut(p, " ")
		require.True(t, ok, "piece %q", p)
		num, total, ok := strings.Cut(idx, "/")
		require.True(t, ok, "piece %q", p)
		k, err1 := strconv.Atoi(num)
		n, err2 := strconv.Atoi(total)
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.Equal(t, i+1, k, "pieces in order")
		require.Len(t, pieces, n, "every piece")
		parts = append(parts, strings.TrimSpace(data))
	}
	b, err := base64.StdEncoding.DecodeString(strings.Join(parts, ""))
	require.NoError(t, err)
	return b
}
