//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchEmulate: bench --emulate runs its own server across an
// emulated 20 ms, 50 Mbit/s path: a Write run moves data at no more than
// the bottleneck's rate, and a Send round trip takes at least the path's
// 20 ms; over each userspace LLP.
func TestBenchEmulate(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("bench --emulate needs root (network namespaces); make test runs as root")
	}
	// Each with a congestion control that is not its default: the
	// server's end (in this process) takes it too.
	for llp, cc := range map[string][]string{"sctp-native": {"--sctp-cc", "cubic"}, "mpa": {"--tcp-cc", "reno"}} {
		t.Run(llp, func(t *testing.T) {
			args := append([]string{"bench", "--llp", llp, "--emulate", "rtt=20ms,rate=50M", "--duration", "1s", "--json"}, cc...)
			code, out, errOut := runCLI(append(args, "write")...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, errOut, "emulated path delay 10ms rate 50Mbit")
			if llp == "mpa" {
				assert.Contains(t, errOut, "TCP reno")
			}
			var r jsonResult
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &r), out)
			assert.Positive(t, r.Forward.Ops)
			assert.LessOrEqual(t, r.Forward.Gbps, 0.052, "no faster than the bottleneck")
			assert.Greater(t, r.Forward.Gbps, 0.02, "near the bottleneck's rate")

			code, out, errOut = runCLI("bench", "--llp", llp, "--emulate", "rtt=20ms", "--lat", "--iters", "20", "--json", "send")
			require.Equal(t, 0, code, errOut)
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &r), out)
			assert.GreaterOrEqual(t, r.Forward.LatMedUS, 20000.0, "a round trip takes the path's 20 ms")
			assert.Less(t, r.Forward.LatMedUS, 30000.0)
		})
	}
}

// TestBenchEmulateTraceHoldsServer: the emulated server writes to the
// run's trace, so a Read's data sender (the server's association) is in
// it with its SACKs, beside the client's.
func TestBenchEmulateTraceHoldsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("bench --emulate needs root (network namespaces); make test runs as root")
	}
	tf := filepath.Join(t.TempDir(), "read.jsonl")
	code, _, errOut := runCLI("bench", "--llp", "sctp-native", "--emulate", "rtt=10ms,rate=50M", "--size", "65536", "--duration", "1s", "--trace", tf, "read")
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(tf)
	require.NoError(t, err)
	acked := map[string]int64{} // per association, octets its SACKs acknowledged
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Event, Assoc string
			Acked        int64
		}
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		if r.Event == "sctp:sack" {
			acked[r.Assoc] += r.Acked
		}
	}
	require.Len(t, acked, 2, "the client's association and the server's")
	var most int64
	for _, v := range acked {
		most = max(most, v)
	}
	assert.Greater(t, most, int64(1<<20), "the server's association sent the Read Responses")
}

func TestBenchEmulateFlagErrors(t *testing.T) {
	psk := filepath.Join(t.TempDir(), "psk")
	require.NoError(t, os.WriteFile(psk, []byte("00112233445566778899aabbccddeeff\n"), 0o600))
	for args, want := range map[string]string{
		"--emulate rtt=fast write":                            "--emulate",
		"--emulate rtt=10ms --connect 127.0.0.1:1 write":      "no server address",
		"--emulate rtt=10ms --secure --psk " + psk + " write": "in the clear",
		"--llp sctp-native --tcp-cc cubic write":              "--tcp-cc applies to --llp mpa only",
		"--llp mpa --sctp-cc cubic write":                     "--sctp-cc applies to --llp sctp-native only",
		"--llp sctp-native --sctp-cc vegas write":             `--sctp-cc "vegas": want rfc9260 or cubic`,
		"--llp mpa --no-offload write":                        "--no-offload applies to --llp sctp-native only",
	} {
		code, _, errOut := runCLI(append([]string{"bench"}, strings.Fields(args)...)...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, want, args)
	}
}
