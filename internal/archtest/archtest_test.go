package archtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/sctp-rdma/sctp-rdma"

// moduleGraph is `go list -deps`' view of the module's non-test imports.
func moduleGraph(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	g := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		require.NoError(t, dec.Decode(&p))
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		deps := []string{}
		for _, d := range p.Imports {
			if rel, ok := strings.CutPrefix(d, module+"/"); ok {
				deps = append(deps, rel)
			}
		}
		g[pkg] = deps
	}
	return g
}

// TestArchitectureDocMatchesImports fails on any import arrow that
// docs/architecture.md does not declare, and on declared arrows that are
// gone.
func TestArchitectureDocMatchesImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	rules, err := ParseRules(string(md))
	require.NoError(t, err)
	bad := Check(moduleGraph(t, root), rules)
	assert.Empty(t, bad, "docs/architecture.md's imports block and the code disagree:\n%s",
		strings.Join(bad, "\n"))
}

func TestCheckFindsUndeclaredAndStale(t *testing.T) {
	rules, err := ParseRules("x\n```imports\n# c\nrdmap: ddp llp\nddp: llp\nllp:\nbench: internal/...\n```\n")
	require.NoError(t, err)
	graph := map[string][]string{
		"rdmap": {"ddp", "llp"},
		"ddp":   {"llp"},
		"llp":   {},
		"bench": {"internal/ring", "internal"},
	}
	assert.Empty(t, Check(graph, rules))

	graph["llp"] = []string{"rdmap"} // an upward arrow
	graph["ddp"] = []string{}        // an arrow the doc still states
	graph["new"] = []string{}        // a package without a line, importing nothing: fine
	assert.Equal(t, []string{
		"stale arrow ddp -> llp (no longer imported)",
		"undeclared arrow llp -> rdmap",
	}, Check(graph, rules))

	delete(graph, "bench")
	assert.Contains(t, Check(graph, rules), "listed package bench does not exist")
}

func TestParseRulesErrors(t *testing.T) {
	for name, md := range map[string]string{
		"no block":     "text",
		"unterminated": "```imports\na: b\n",
		"no colon":     "```imports\na b\n```\n",
		"duplicate":    "```imports\na: b\na: c\n```\n",
	} {
		_, err := ParseRules(md)
		assert.Error(t, err, name)
	}
}
