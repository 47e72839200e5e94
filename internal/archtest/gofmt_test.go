package archtest

import (
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGofmt: every Go file of the module is as gofmt prints it.
func TestGofmt(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var bad []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := format.Source(src)
		if err != nil || string(out) != string(src) {
			rel, _ := filepath.Rel(root, path)
			bad = append(bad, rel)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, bad, "files gofmt would change (gofmt -w them)")
}
