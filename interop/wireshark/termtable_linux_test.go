package wireshark

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLuaTerminateCodes_MatchIwarpTable: the dissector's code_names table
// holds exactly the (Layer, EType, Code) rows of iwarp's one Terminate
// table (RFC 5040 §4.8 Figure 9, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8).
// The Local Catastrophic RDMA error has no code (Figure 9), which the
// dissector names without a table row. It reads the plugin, needs no tshark.
func TestLuaTerminateCodes_MatchIwarpTable(t *testing.T) {
	f, err := os.Open(pluginPath(t))
	require.NoError(t, err)
	defer f.Close()
	open := regexp.MustCompile(`^\s*\[(0x[0-9A-Fa-f]+|\d+)\]\s*=\s*\{\s*(.*)$`)
	entry := regexp.MustCompile(`\[(0x[0-9A-Fa-f]+|\d+)\]\s*=\s*"[^"]*"`)
	num := func(s string) uint8 {
		v, err := strconv.ParseUint(s, 0, 8)
		require.NoError(t, err, s)
		return uint8(v)
	}
	got := map[iwarp.TermCode]bool{}
	var stack []uint8
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !in {
			in = strings.HasPrefix(line, "local code_names = {")
			continue
		}
		if line == "}" {
			break
		}
		if m := open.FindStringSubmatch(line); m != nil {
			stack = append(stack, num(m[1]))
			line = m[2]
		}
		for _, m := range entry.FindAllStringSubmatch(line, -1) {
			require.Len(t, stack, 2, "code entry outside a layer/type: %q", line)
			c := iwarp.TermCode{Layer: stack[0], EType: stack[1], Code: num(m[1])}
			assert.False(t, got[c], "%v twice in the dissector", c)
			got[c] = true
		}
		for range strings.Count(line, "}") {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, in, "code_names table not found")
	got[iwarp.Term.LocalCatastrophic] = true
	want := map[iwarp.TermCode]bool{}
	for _, r := range iwarp.TermCodes() {
		want[r.Code] = true
	}
	assert.Equal(t, want, got)
}
