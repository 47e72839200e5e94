package sctpllp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestShrinkGrace: after the MULPDU decreases, the previous value is
// accepted for shrinkGraceTime and no longer; increases grant nothing
// (RFC 5043 §9, RFC 8899 §5.4).
func TestShrinkGrace(t *testing.T) {
	now := time.Unix(1000, 0)
	g := shrinkGrace{now: func() time.Time { return now }}
	tests := []struct {
		name    string
		advance time.Duration
		observe int // 0: no new report
		want    int // limit(current)
	}{
		{"first report", 0, 8130, 8130},
		{"unchanged", time.Second, 8130, 8130},
		{"drop to 1190: previous still accepted", 0, 1190, 8130},
		{"within the grace", shrinkGraceTime - time.Millisecond, 0, 8130},
		{"grace over", 2 * time.Millisecond, 0, 1190},
		{"rise to 1400: no grace needed", 0, 1400, 1400},
		{"drop to 1000", 0, 1000, 1400},
		{"second drop within the grace keeps the largest", time.Millisecond, 600, 1400},
		{"over again", shrinkGraceTime, 0, 600},
	}
	cur := 0
	for _, tc := range tests {
		now = now.Add(tc.advance)
		if tc.observe != 0 {
			g.observe(tc.observe)
			cur = tc.observe
		}
		assert.Equal(t, tc.want, g.limit(cur), tc.name)
	}
}
