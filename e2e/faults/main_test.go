package faults

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the child role of a re-executed test binary (childEnv),
// else the tests under goleak.
func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}
