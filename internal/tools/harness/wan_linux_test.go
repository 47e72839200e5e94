//go:build linux

package harness

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/transport"
)

// TestRunWAN_OneCell runs the WAN mode on one path (10 ms, 0.1% loss, 50
// Mbit/s) with every LLP: the emulator passes the bottleneck's rate, every
// figure is measured beside raw TCP's, and every flow recovers from the
// outage.
func TestRunWAN_OneCell(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs root and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the WAN mode needs root (network namespaces); make test runs as root")
	}
	res, err := RunWAN(WANConfig{
		RTTs: []time.Duration{10 * time.Millisecond}, Losses: []float64{0.001}, Rate: 50e6,
		Duration: time.Second, PingIters: 20, Backend: "tun", Progress: testWriter{t},
		FairDuration: time.Second, HOLRTT: 10 * time.Millisecond, HOLDuration: 2 * time.Second,
		TargetRuns: 1, TargetDuration: time.Second, TargetRTT: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	// The userspace emulator shares the host's cores with the load beside
	// it: it must hold traffic to the rate (never above) and pass it at the
	// rate's order (half of it or more); the section states what it measured.
	assert.LessOrEqual(t, res.EmulatorUDP, 55.0, "UDP through the emulator, held to the rate")
	assert.GreaterOrEqual(t, res.EmulatorUDP, 25.0, "UDP through the emulator at the rate's order")
	assert.GreaterOrEqual(t, res.EmulatorTCP, 25.0, "TCP through the emulator at the rate's order")
	require.Len(t, res.Cells, 1)
	require.Len(t, res.Targets, 1, "one paired target run")
	tr := res.Targets[0]
	require.NoError(t, tr.RawErr)
	require.NoError(t, tr.WriteErr)
	require.NoError(t, tr.ReadErr)
	assert.Positive(t, tr.Raw)
	assert.Positive(t, tr.Write)
	assert.Positive(t, tr.Read)
	c := res.Cells[0]
	for _, llp := range []string{transport.SCTPNative, transport.SCTPPion, transport.MPA} {
		for _, what := range []string{"write", "read", "rtt"} {
			f, ok := c.figure(llp, what)
			require.True(t, ok, "%s %s", llp, what)
			require.NoError(t, f.Err, "%s %s", llp, what)
			assert.Positive(t, f.Value, "%s %s", llp, what)
			assert.Positive(t, f.Ratio, "%s %s", llp, what)
		}
	}
	for _, llp := range []string{"tcp", transport.SCTPNative, transport.SCTPPion} {
		f, ok := c.figure(llp, "raw")
		require.True(t, ok, llp)
		require.NoError(t, f.Err, llp)
		assert.Positive(t, f.Value, llp)
	}
	rtt, _ := c.figure("tcp", "rtt")
	assert.GreaterOrEqual(t, rtt.Value, 10.0, "a round trip is at least the path's 10 ms")
	require.Len(t, res.Outages, 4)
	for _, o := range res.Outages {
		assert.NoError(t, o.Err, o.LLP)
		assert.Positive(t, o.Recovery, o.LLP)
	}
	require.Len(t, res.Shares, 5, "tcp+tcp, and each SCTP stack against TCP and itself")
	for _, s := range res.Shares {
		require.NoError(t, s.Err, "%s+%s", s.A, s.B)
		assert.Positive(t, s.MbpsA, "%s+%s", s.A, s.B)
		assert.Positive(t, s.MbpsB, "%s+%s", s.A, s.B)
		assert.LessOrEqual(t, s.MbpsA+s.MbpsB, 55.0, "two flows share the 50 Mbit/s bottleneck")
		assert.InDelta(t, 0.75, s.Jain, 0.25)
	}
	require.Len(t, res.HOL, 4, "native, pion, mpa on one connection, mpa on 16")
	// Each run expects about 5 losses in 2 s (1% of one stream's packets,
	// or 1/16 % of all): any one may see none (e^-5.6, 0.4%), all four
	// together practically never (e^-22).
	var lost uint64
	for _, h := range res.HOL {
		lost += h.PacketsLost
	}
	assert.Positive(t, lost, "the HOL paths lost packets")
	for _, h := range res.HOL {
		require.NoError(t, h.Err, h.Name)
		assert.Positive(t, h.OpsPerSec, h.Name)
		assert.GreaterOrEqual(t, h.All.Median, 10*time.Millisecond, "%s: a Read takes a round trip", h.Name)
		assert.Len(t, h.AllQ, len(holQuantiles), h.Name)
		if h.Streams > 1 {
			assert.Positive(t, h.Lossy.Count, h.Name)
			assert.Equal(t, h.All.Count, h.Lossy.Count+h.Others.Count, h.Name)
			assert.Len(t, h.OthersQ, len(holQuantiles), h.Name)
		}
	}
}

func TestJainIndex(t *testing.T) {
	assert.InDelta(t, 1, jainIndex(50, 50), 1e-9)
	assert.InDelta(t, 0.5, jainIndex(100, 0), 1e-9)
	assert.InDelta(t, 0.9, jainIndex(75, 25), 0.1)
	assert.Zero(t, jainIndex(0, 0))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
