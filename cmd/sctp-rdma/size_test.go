package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"0", 0}, {"64", 64}, {"4K", 4096}, {"4k", 4096}, {"4KiB", 4096}, {"64KB", 65536},
		{"1M", 1 << 20}, {"2G", 2 << 30}, {" 8K ", 8192},
	} {
		got, err := parseSize(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "K", "-1", "1.5M", "4T", "5G", "abc"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("64-1K")
	require.NoError(t, err)
	assert.Equal(t, []int{64, 128, 256, 512, 1024}, got)
	got, err = parseSizes("1K,64K")
	require.NoError(t, err)
	assert.Equal(t, []int{1024, 65536}, got)
	_, err = parseSizes("1K-64")
	assert.Error(t, err)
	assert.Equal(t, "64K", formatSize(65536))
	assert.Equal(t, "100", formatSize(100))
}
