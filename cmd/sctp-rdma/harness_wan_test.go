package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"harness", "--wan", "--llp", "sctp-kernel"},
	} {
		code, _, errOut := runCLI(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}
