package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemoReport runs `sctp-rdma demo` in-process and checks its printed
// report: the header, one table row per stream in ID order, the broken
// stream's Terminate (RFC 5041 §7.2) and the verdict lines.
func TestDemoReport(t *testing.T) {
	code, out, errOut := runCLI("demo", "--streams", "5", "--size", "16K", "--break", "1")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	lines := strings.Split(out, "\n")
	require.Greater(t, len(lines), 10, out)
	assert.Regexp(t, `^sctp-rdma demo: RDMAP/DDP over userspace SCTP \(native\) on loopback, MULPDU \d+$`, lines[0])
	assert.Regexp(t, `^stream\s+size\s+ops\s+bytes\s+time\s+result$`, lines[2])
	row := regexp.MustCompile(`^(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+(.*)$`)
	sizes := []string{"16384", "8192", "4096", "2048", "16384"}
	for i := range 5 {
		m := row.FindStringSubmatch(lines[3+i])
		require.NotNil(t, m, lines[3+i])
		assert.Equal(t, []string{string(rune('1' + i)), sizes[i]}, m[1:3])
		if i == 1 {
			assert.Equal(t, "0", m[3], "the broken stream runs no operation")
			assert.Contains(t, m[5], "broken on purpose: peer sent Terminate DDP tagged buffer error: invalid STag (1/1/0x00); stream labelled erroneous=true")
			continue
		}
		assert.True(t, strings.HasPrefix(m[5], "ok: write, read-back, send"), m[5])
		assert.Contains(t, m[5], "verified at both ends")
	}
	assert.Contains(t, out, "\nassociation shut down after the last stream: true\n")
	assert.Regexp(t, `\nRESULT: PASS \(5 streams, \S+\)\n$`, out)
}

// TestDemoBadFlags: the demo refuses what it cannot run.
func TestDemoBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"demo", "--llp", "mpa"}, "userspace SCTP (sctp-native or sctp-pion) only"},
		{[]string{"demo", "--size", "0"}, "--size"},
		{[]string{"demo", "--streams", "0"}, "--streams must be"},
	} {
		code, _, errOut := runCLI(tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, tc.args)
	}
}
