package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// interopStacks are the SCTP stacks every pair of which must work at
// their defaults, with no MTU set by hand.
var interopStacks = []string{"sctp-native", "sctp-pion"}

// interopBench is the bench of the interop tests: 4 streams, the three
// tests the issue names, 64 KiB messages (the size that outgrew pion's
// 8 KiB reads on loopback). These tests check that every operation
// completes, not how soon: the stall limit is 30 s. A pion pair on a
// host loaded by two busy loops once passed the default 8 s after all
// 400 operations had completed, before the run's end (pion's T3-rtx
// backs off from an RTO.Min of 1 s: four expiries take 15 s).
func interopBench(addr, llp string) []string {
	return []string{"bench", "--llp", llp, "--connect", addr, "--streams", "4", "--iters", "100", "--json",
		"--stall", "30s", "write", "read", "send"}
}

// checkInterop checks bench's JSON lines: write, read and send each
// completed every operation on every stream, without an error.
func checkInterop(t *testing.T, out, llp string) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r jsonResult
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.Empty(t, r.Error, r.Test)
		assert.Equal(t, llp, r.LLP)
		assert.Equal(t, uint64(4*100), r.Forward.Ops, r.Test)
		assert.Len(t, r.PerStream, 4, r.Test)
		seen[r.Test] = true
	}
	assert.Equal(t, map[string]bool{"write": true, "read": true, "send": true}, seen)
}

// TestInteropDefaults_RFC8899Loopback: `serve --llp X` and `bench --llp Y
// --streams 4 write read send` complete for every pair of sctp-native and
// sctp-pion on loopback at their defaults: pion reads 8 KiB datagrams, so
// sctp-native must not send 64 KiB ones to a loopback peer; RFC 8899
// probing on loopback too (sctp/assoc_plpmtud.go) finds what it takes.
func TestInteropDefaults_RFC8899Loopback(t *testing.T) {
	for _, srv := range interopStacks {
		for _, cli := range interopStacks {
			t.Run(fmt.Sprintf("serve=%s,bench=%s", srv, cli), func(t *testing.T) {
				addr, stop := serve(t, "--llp", srv)
				code, out, errOut := runCLI(interopBench(addr, cli)...)
				require.Equal(t, 0, code, "bench: %s\n%s", errOut, out)
				checkInterop(t, out, cli)
				stop()
			})
		}
	}
}

// TestStallDefault_RFC9260_6_3_3: --stall's default outlasts three T3-rtx
// expiries back to back over the SCTP LLPs (from RTO.Initial or pion's
// RTO.Min, 1 s, doubled at each expiry, §6.3.3 E2), keeps 3 s over mpa,
// and a given --stall wins.
func TestStallDefault_RFC9260_6_3_3(t *testing.T) {
	rto := time.Second
	backoff := rto + 2*rto + 4*rto
	for _, c := range []struct {
		llp  string
		flag time.Duration
		want time.Duration
	}{
		{"", 0, bench.SCTPStallTimeout},
		{transport.SCTPNative, 0, bench.SCTPStallTimeout},
		{transport.SCTPPion, 0, bench.SCTPStallTimeout},
		{transport.SCTPKernel, 0, bench.SCTPStallTimeout},
		{transport.MPA, 0, bench.DefaultStallTimeout},
		{transport.SCTPPion, time.Second, time.Second},
		{transport.SCTPNative, -1, -1},
	} {
		assert.Equal(t, c.want, stallTimeout(c.flag, c.llp), "llp %q flag %v", c.llp, c.flag)
	}
	assert.Greater(t, bench.SCTPStallTimeout, backoff)
}
