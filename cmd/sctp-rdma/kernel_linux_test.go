//go:build linux

package main

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// TestCLIKernelSCTPInVM runs the CLI against itself over Linux kernel SCTP
// on 127.0.0.1: serve, bench (every test, bandwidth and latency, several
// streams, --bidir, the table and --json) and ping with data verification,
// then a rejected session — what TestServeBenchEveryTest, TestPingVerified
// and TestServerRejectsSession do over sctp-pion and mpa. The development
// and CI kernels have no SCTP: the test then boots the qemu VM of
// internal/tools/vmtest and runs itself there (never a skip: a VM that cannot be
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
	t.Run("Pcap", func(t *testing.T) {
		// The kernel recorder's file (tshark decodes its format:
		// capture.TestTshark_DecodesEachRecorder; the guest has no tshark):
		// every packet an SCTP DATA chunk with a good CRC32c and PPID 16 or
		// 17, every DDP segment parses, and every opcode the run used is
		// there (RFC 5043 §5.2, RFC 5040 §4.3, RFC 7306 §4.1).
		path := filepath.Join(t.TempDir(), "k.pcapng")
		code, _, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--size", "4K", "--iters", "10", "--pcap", path, "all")
		require.Equal(t, 0, code, errOut)
		pkts, err := pcapread.ReadPackets(path)
		require.NoError(t, err)
		require.NotEmpty(t, pkts)
		ops := map[uint8]int{}
		ppids := map[uint32]int{}
		for _, p := range pkts {
			require.Equal(t, uint8(132), p.Proto)
			require.True(t, wire.ChecksumOK(p.Payload))
			pk, err := wire.ParsePacket(p.Payload)
			require.NoError(t, err)
			it := pk.Chunks()
			c, ok := it.Next()
			require.True(t, ok)
			d, err := wire.ParseData(c)
			require.NoError(t, err)
			assert.True(t, d.Unordered, "RFC 5043 §10")
			ppids[d.PPID]++
			if d.PPID != backend.PPIDSegment || !d.Beginning {
				continue
			}
			seg := d.UserData[pmtu.DDPSSNLen:]
			if seg[0]&0x80 != 0 {
				h, _, err := iwarpwire.ParseDDPTaggedHeader(seg)
				require.NoError(t, err)
				ops[h.RsvdULP&0x0f]++
			} else {
				h, _, err := iwarpwire.ParseDDPUntaggedHeader(seg)
				require.NoError(t, err)
				ops[h.RsvdULP[0]&0x0f]++
			}
		}
		assert.Positive(t, ppids[backend.PPIDControl], "session control recorded")
		for _, op := range []uint8{0x0, 0x1, 0x2, 0x3, 0x8, 0xA, 0xB} {
			assert.Positive(t, ops[op], "opcode %#x recorded", op)
		}
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
