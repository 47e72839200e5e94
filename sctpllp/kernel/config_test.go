package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The failover settings (RFC 9260 §8.1-§8.3, §16) are checked before a
// socket is made.
func TestConfigFailoverSettings(t *testing.T) {
	ok := Config{PathMaxRetrans: 2, AssocMaxRetrans: 20, RTOInitial: 200 * time.Millisecond,
		RTOMin: 100 * time.Millisecond, RTOMax: 400 * time.Millisecond, HeartbeatInterval: time.Second}
	c, err := ok.withDefaults()
	assert.NoError(t, err)
	assert.Equal(t, ok.RTOMin, c.RTOMin, "kept as given")
	for name, bad := range map[string]Config{
		"negative path retransmissions": {PathMaxRetrans: -1},
		"association retransmissions":   {AssocMaxRetrans: 70000},
		"RTO below a millisecond":       {RTOMin: time.Microsecond},
		"negative heartbeat":            {HeartbeatInterval: -time.Second},
		"min above max":                 {RTOMin: time.Second, RTOMax: 500 * time.Millisecond},
	} {
		_, err := bad.withDefaults()
		assert.Error(t, err, name)
	}
}
