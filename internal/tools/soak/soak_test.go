package soak

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var (
	duration = flag.Duration("soak.duration", 0, "soak duration (default 20s; -short skips the soak unless this is set)")
	nstreams = flag.Int("soak.streams", 64, "concurrent streams")
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSoak is the soak run of issue 8: 64 streams, every operation, random
// sizes, random deliberate terminations; at the end posted = completed,
// every byte verified, goroutines and heap back to their starting level.
// `make soak` runs it for 10 minutes; `make test` for a short while.
func TestSoak(t *testing.T) {
	d := *duration
	if d == 0 {
		if testing.Short() {
			t.Skip("full tier only (make test): needs 20 s of soak")
		}
		d = 20 * time.Second
	}
	sum, err := Run(context.Background(), Config{Streams: *nstreams, Duration: d, MaxSize: 128 << 10}, os.Stdout)
	require.NoError(t, err)
	require.NoError(t, sum.OK())
	require.NotZero(t, sum.Succeeded)
	require.Equal(t, sum.Posted, sum.Completed)
}

// TestSoak_ManyStreams_RFC5043_6_4 opens more streams at once than the
// default limit of Initiates waiting for the passive side's ULP (RFC 5043
// §6.4: beyond it an Initiate is answered with a Session Terminate): the
// soak raises the limit to its stream count.
func TestSoak_ManyStreams_RFC5043_6_4(t *testing.T) {
	sum, err := Run(context.Background(), Config{Streams: 600, Duration: 2 * time.Second, MaxSize: 1 << 10, NoKill: true}, nil)
	require.NoError(t, err)
	require.NoError(t, sum.OK())
	require.Equal(t, uint64(600), sum.StreamsOpened)
}
