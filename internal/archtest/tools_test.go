package archtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryImportsNoTool: the tools live under internal/tools/, apart
// from the library; only cmd/ and the tools themselves import them (a test
// file may: the graph holds non-test imports only).
func TestLibraryImportsNoTool(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var bad []string
	for pkg, deps := range moduleGraph(t, root) {
		if strings.HasPrefix(pkg, "internal/tools/") || strings.HasPrefix(pkg, "cmd/") {
			continue
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "internal/tools/") {
				bad = append(bad, pkg+" -> "+d)
			}
		}
	}
	assert.Empty(t, bad, "library packages importing a tool")
}
