package archtest

import (
	"bytes"
	"go/format"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGofmt: every Go file of the module is as gofmt prints it.
func TestGofmt(t *testing.T) {
	var bad []string
	for _, f := range moduleFiles(t) {
		if out, err := format.Source(f.src); err != nil || !bytes.Equal(out, f.src) {
			bad = append(bad, f.rel)
		}
	}
	assert.Empty(t, bad, "files gofmt would change (gofmt -w them)")
}
