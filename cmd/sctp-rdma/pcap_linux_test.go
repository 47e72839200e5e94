package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsharkFields runs tshark (with the shipped RFC 5043 dissector) over
// path and returns one line per frame matching filter.
func tsharkFields(t *testing.T, path, filter string, fields ...string) []string {
	t.Helper()
	args := []string{"-X", "lua_script:" + filepath.Join("..", "..", "wireshark", "iwarp-sctp.lua"),
		"-r", path, "-Y", filter, "-T", "fields"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	home := t.TempDir()
	cmd := exec.Command("tshark", args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "Running as user ") {
			t.Fatalf("tshark wrote to stderr: %q", stderr.String())
		}
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// opcodes returns the distinct values of a per-frame opcode field (a frame
// may carry several messages: comma separated).
func opcodes(lines []string) []string {
	set := map[string]bool{}
	for _, l := range lines {
		for _, v := range strings.Split(l, ",") {
			if n, err := strconv.ParseInt(v, 0, 16); err == nil {
				set[strconv.Itoa(int(n))] = true
			}
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// tsharkExpertWarnings returns the expert infos of severity warning and
// error in the capture, by summary, as tshark -z expert counts them (the
// Expert Info dialog's figures; -T fields output misses some).
func tsharkExpertWarnings(t *testing.T, path string) map[string]int {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("tshark", "-X", "lua_script:"+filepath.Join("..", "..", "wireshark", "iwarp-sctp.lua"),
		"-r", path, "-q", "-z", "expert,warn")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	out, err := cmd.Output()
	require.NoError(t, err)
	got := map[string]int{}
	row := regexp.MustCompile(`^\s+(\d+)\s+\S+\s+\S+\s+(.+?)\s*$`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			got[m[2]] += n
		}
	}
	return got
}

// TestBenchPcap_DecodesEveryLLP runs `bench --pcap FILE all` against
// `serve` over sctp-pion, sctp-native and mpa and decodes the file with tshark: the
// userspace SCTP packets with the shipped RFC 5043 dissector (the server's
// UDP port recorded as 9899, RFC 6951), MPA with Wireshark's own iWARP
// dissectors over the synthesized TCP stream. No frame is malformed, the
// only expert warnings are tshark's RFC 5044-only complaints about the
// enhanced MPA Request and Reply, and every RDMAP opcode the run used is decoded: RDMA
// Write, Read Request and Response, Send, Immediate Data (Write with
// Immediate), Atomic Request and Response (RFC 5040 §4.3, RFC 7306 §4.1).
// Kernel SCTP's recorder is tested in the VM (TestCLIKernelSCTPInVM).
func TestBenchPcap_DecodesEveryLLP(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs tshark from apt")
	}
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "tshark-setup.sh")).CombinedOutput()
	require.NoError(t, err, "scripts/tshark-setup.sh: %s", out)
	want := []string{"0", "1", "2", "3", "8", "10", "11"}
	for _, tc := range []struct{ llp, filter, opcode string }{
		{"sctp-pion", "rdmap", "rdmap.opcode"},
		{"sctp-native", "rdmap", "rdmap.opcode"},
		{"mpa", "iwarp_rdma", "iwarp_rdma.opcode"},
	} {
		t.Run(tc.llp, func(t *testing.T) {
			addr, stop := serve(t, "--llp", tc.llp)
			path := filepath.Join(t.TempDir(), "bench.pcapng")
			code, _, errOut := runCLI("bench", "--llp", tc.llp, "--connect", addr, "--iters", "20", "--size", "4K", "--pcap", path, "all")
			stop()
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, errOut, path+": ", "the capture summary line")
			assert.Empty(t, tsharkFields(t, path, "_ws.malformed", "frame.number"))
			// The Expert Info dialog's count (tshark -z expert): the
			// userspace SCTP captures have no warning; MPA has exactly
			// two on each enhanced Request and Reply, from Wireshark's
			// RFC 5044-only dissector (docs/wireshark.md).
			warns := tsharkExpertWarnings(t, path)
			if tc.llp == "mpa" {
				rr := len(tsharkFields(t, path, "iwarp_mpa.req || iwarp_mpa.rep", "frame.number"))
				require.Equal(t, 12, rr, "a Request and a Reply for each of the six tests' connections")
				assert.Equal(t, map[string]int{
					"Res field is NOT set to zero as required by RFC 5044": rr,
					"Rev field is NOT set to one as required by RFC 5044":  rr,
				}, warns)
			} else {
				assert.Empty(t, warns)
			}
			frames := tsharkFields(t, path, tc.filter, tc.opcode)
			require.NotEmpty(t, frames)
			got := opcodes(frames)
			for _, op := range want {
				assert.Contains(t, got, op, "opcode %s decoded", op)
			}
		})
	}
}
