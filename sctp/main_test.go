package sctp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// association, listener, timer and delivery goroutine must end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
