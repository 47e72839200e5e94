package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile("rtt=50ms,jitter=2ms,loss=0.1%,burst=3,duplicate=1,reorder=5%,rate=100M,queue=256K")
	require.NoError(t, err)
	assert.Equal(t, Profile{Delay: 25 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.001, LossBurst: 3,
		Duplicate: 0.01, Reorder: 0.05, Rate: 100e6, Queue: 256 << 10}, p)
	p, err = ParseProfile("delay=10ms, rate=1Gbit")
	require.NoError(t, err)
	assert.Equal(t, Profile{Delay: 10 * time.Millisecond, Rate: 1e9}, p)
	for _, bad := range []string{"", "rtt", "rtt=fast", "loss=200%", "speed=1", "rate=-1M", "jitter=20ms,delay=5ms", "queue=x"} {
		_, err := ParseProfile(bad)
		assert.ErrorIs(t, err, ErrProfile, bad)
	}
}

// FuzzParseProfile: any text either fails with ErrProfile or gives a
// profile that validates.
func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{"rtt=50ms,loss=1%,rate=100M", "delay=1ms,jitter=1ms,burst=4,loss=0.5", "queue=1M,rate=64k", "reorder=25%,duplicate=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProfile(s)
		if err != nil {
			assert.ErrorIs(t, err, ErrProfile)
			return
		}
		assert.NoError(t, p.Validate())
	})
}
