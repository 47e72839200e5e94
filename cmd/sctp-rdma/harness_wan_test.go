package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int64{"100M": 100e6, "1G": 1e9, "64k": 64000, "2.5Gbit": 2.5e9, "50Mbps": 50e6, "1000000": 1e6} {
		got, err := parseRate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "fast", "10", "-5M", "1T"} {
		_, err := parseRate(bad)
		assert.Error(t, err, bad)
	}
}

func TestHarnessWANFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"harness", "--wan", "--wan-rtts", "soon"},
		{"harness", "--wan", "--wan-losses", "150"},
		{"harness", "--wan", "--wan-rate", "fast"},
		{"harness", "--wan", "--llp", "bogus"},
	} {
		code, _, errOut := runCLI(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
	// sctp-kernel is measured where the kernel has SCTP; this host's has
	// not: a usage error before any measurement.
	require.Error(t, kernel.Available(), "this test expects a kernel without SCTP (make test runs on one)")
	code, _, errOut := runCLI("harness", "--wan", "--llp", "sctp-kernel")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "kernel SCTP unavailable")
	assert.Contains(t, errOut, "make wan-kernel-docs")
	assert.NotContains(t, errOut, "emulator", "nothing was measured")
}
