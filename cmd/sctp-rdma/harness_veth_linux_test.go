package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/harness"
)

// TestHarnessVeth runs the veth mode once, briefly (one round, MTU 1500,
// GRO on), with this test binary as the child processes: every cell has
// a throughput and both sides' CPU per GB, and the section has its
// markers, a row per operation in both tables and a raw sctp-native row.
func TestHarnessVeth(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: two network namespaces joined by a veth pair")
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "ethtool-setup.sh")).CombinedOutput()
	require.NoError(t, err, "scripts/ethtool-setup.sh: %s", out)
	t.Setenv(asCLI, "1")
	exe, err := os.Executable()
	require.NoError(t, err)
	var progress lockedBuffer
	res, err := harness.RunVeth(harness.VethConfig{Exe: exe, MTUs: []int{1500}, GRO: []bool{true}, Runs: 1,
		Duration: 300 * time.Millisecond, Progress: &progress})
	require.NoError(t, err, progress.String())
	require.Len(t, res.Paths, 1)
	p := res.Paths[0]
	assert.Contains(t, p.OffloadA, "generic-receive-offload on")
	assert.Contains(t, p.OffloadB, "generic-receive-offload on")
	require.Len(t, p.Figures, 2+2*3, "raw TCP, raw sctp-native and three operations on each of sctp-native and mpa")
	for _, f := range p.Figures {
		require.NoError(t, f.Err, "%s %s", f.LLP, f.Op)
		assert.Positive(t, f.Gbps, "%s %s", f.LLP, f.Op)
		assert.Positive(t, f.Passive, "%s %s: passive CPU per GB", f.LLP, f.Op)
		assert.Positive(t, f.Active, "%s %s: active CPU per GB", f.LLP, f.Op)
	}
	var md bytes.Buffer
	res.Markdown(&md)
	page := md.String()
	assert.True(t, strings.HasPrefix(page, harness.VethMarks.Begin), page)
	assert.Contains(t, page, harness.VethMarks.End)
	assert.NotContains(t, page, "failed")
	for _, op := range []string{"RDMA Write", "RDMA Read", "Send"} {
		assert.Equal(t, 2, strings.Count(page, "| 1500 | on | "+op+" |"), "%s: a row in each table\n%s", op, page)
	}
	assert.Contains(t, page, "| raw TCP | sctp-native | mpa | sctp-native/mpa | sctp-native/TCP | mpa/TCP |")
	assert.Contains(t, page, "### Raw sctp-native against raw TCP")
	assert.Equal(t, 1, strings.Count(page, "| 1500 | on | "+strconv.FormatFloat(p.Figures[0].Gbps, 'f', 2, 64)+" |"), "a raw row\n%s", page)
}

func TestHarnessVethFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"harness", "--veth", "--veth-mtus", "100"},
		{"harness", "--veth", "--veth-gro", "maybe"},
		{"harness", "--veth", "--veth-duration", "1ms"},
		{"harness", "--veth", "--llp", "sctp-kernel"},
		{"harness", "--veth", "--runs", "0"},
	} {
		code, _, errOut := runCLI(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}
