package archtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryImportsNoTool: the tools live under internal/tools/ and
// bench/ (the benchmark, a top-level folder of the project's layout),
// apart from the library; only cmd/ and the tools themselves import them
// (a test file may: the graph holds non-test imports only).
func TestLibraryImportsNoTool(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var bad []string
	for pkg, deps := range moduleGraph(t, root) {
		if strings.HasPrefix(pkg, "internal/tools/") || strings.HasPrefix(pkg, "cmd/") ||
			pkg == "bench" || strings.HasPrefix(pkg, "bench/") {
			continue
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "internal/tools/") || d == "bench" || strings.HasPrefix(d, "bench/") {
				bad = append(bad, pkg+" -> "+d)
			}
		}
	}
	assert.Empty(t, bad, "library packages importing a tool")
}
