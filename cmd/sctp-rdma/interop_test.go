package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// interopStacks are the SCTP stacks every pair of which must work at
// their defaults, with no MTU set by hand.
var interopStacks = []string{"sctp-native", "sctp-pion"}

// interopBench is the bench of the interop tests: 4 streams, the three
// tests the issue names, 64 KiB messages (the size that outgrew pion's
// 8 KiB reads on loopback).
func interopBench(addr, llp string) []string {
	return []string{"bench", "--llp", llp, "--connect", addr, "--streams", "4", "--iters", "100", "--json",
		"write", "read", "send"}
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
