package harness

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunSmall runs the whole harness with tiny volumes: every row gets a
// figure and the Markdown page carries the machine description.
func TestRunSmall(t *testing.T) {
	res := Run(Config{Size: 16 << 10, Bytes: 1 << 20, PingIters: 50, ManyStreams: 32, Runs: 1,
		SweepSizes: []int{4 << 10, 16 << 10}, SweepBytes: 256 << 10, RTTSizes: []int{64, 1 << 10}, SweepPingIters: 20})
	require.Len(t, res.Rows, 28) // 3 raw stack comparisons, 7 per LLP, 2 per secure mode
	for _, r := range res.Rows {
		require.NoError(t, r.Err, "%s %s", r.LLP, r.Metric)
		assert.Positive(t, r.Value, "%s %s", r.LLP, r.Metric)
	}
	assert.Equal(t, "raw", res.Rows[0].LLP)
	assert.Equal(t, "sctp-native+dtls", res.Rows[3].LLP)
	assert.Equal(t, "≥ 0.50", res.Rows[3].Target, "issue 47's DTLS target")
	assert.Equal(t, res.Rows[3].Ratio >= 0.5, res.Rows[3].Met)
	assert.Equal(t, "mpa+tls", res.Rows[5].LLP)
	assert.Equal(t, "≥ 0.80", res.Rows[5].Target)
	assert.Equal(t, res.Rows[5].Ratio >= 0.8, res.Rows[5].Met)
	assert.Empty(t, res.Rows[4].Target, "the secure round trips have no target")
	assert.Equal(t, transport.SCTPPion, res.Rows[7].LLP)
	assert.Equal(t, transport.SCTPNative, res.Rows[14].LLP)
	assert.Equal(t, transport.MPA, res.Rows[21].LLP)
	// Curves: per LLP 4 throughput, 2 round-trip, 1 streams (1, 4, 16, 32).
	require.Len(t, res.Curves, 21)
	for _, c := range res.Curves {
		require.NoError(t, c.Err, "%s %s %s", c.LLP, c.Kind, c.Name)
		require.Len(t, c.Y, len(c.X), "%s %s %s", c.LLP, c.Kind, c.Name)
		for _, y := range c.Y {
			assert.Positive(t, y, "%s %s %s", c.LLP, c.Kind, c.Name)
		}
	}
	assert.Equal(t, []float64{1, 4, 16, 32}, res.Curves[6].X)
	dir := t.TempDir()
	require.NoError(t, res.WritePlots(filepath.Join(dir, "img"), "img"))
	require.Len(t, res.Plots, 7)
	for _, p := range res.Plots {
		b, err := os.ReadFile(filepath.Join(dir, p.Path))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n"), p.Path)
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		require.NoError(t, err, p.Path)
		assert.Greater(t, cfg.Width, 400, p.Path)
	}
	var b bytes.Buffer
	res.Markdown(&b)
	for _, s := range []string{"nproc", "GOGC", "Go", "RDMA Write 16K throughput vs raw LLP", "| sctp-pion |", "| sctp-native |", "| mpa |", "| raw |",
		"](img/throughput-sctp-pion.png)", "](img/streams.png)", "sctp-pion, rtt (µs)", "## Targets not met and why", "](benchmarks-notes.md)"} {
		assert.Contains(t, b.String(), s)
	}
}

// TestNotesLinked: the page's analysis section, as the harness writes it,
// is the one docs/benchmarks.md holds, and the lab notes it links exist
// with the heading the page names.
func TestNotesLinked(t *testing.T) {
	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	require.NoError(t, err)
	assert.Contains(t, string(page), notesLink)
	assert.Contains(t, string(page), otherRuns)
	lab, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks-notes.md"))
	require.NoError(t, err)
	assert.Contains(t, string(lab), "\n## Targets not met and why\n")
}

func TestNoSweep(t *testing.T) {
	res := Run(Config{LLPs: []string{transport.MPA}, Size: 4 << 10, Bytes: 64 << 10, PingIters: 10, ManyStreams: 2, Runs: 1, NoSweep: true, NoSecure: true})
	require.Len(t, res.Rows, 7)
	assert.Empty(t, res.Curves)
	var b bytes.Buffer
	res.Markdown(&b)
	assert.NotContains(t, b.String(), "## Plots")
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 0.0, median(nil))
}

// pairedRatio pairs each measurement with the reference taken before it:
// a drift of the host that moves both cancels out, where the ratio of the
// two medians would compare a fast reference with a slow measurement.
func TestPairedRatio(t *testing.T) {
	// Two modes: pairs 1 and 3 ran fast, 2 and 4 slow; RDMA is 1.1× its
	// raw partner in every pair.
	raw := []float64{4, 8, 4, 8, 8}
	rdma := []float64{4.4, 8.8, 4.4, 8.8, 8.8}
	assert.InDelta(t, 1.1, pairedRatio(raw, rdma), 1e-9)
	assert.InDelta(t, 8.8/4, median(rdma[2:])/median(raw[:3]), 1e-9, "medians taken apart mix the modes")
	assert.InDelta(t, 2.0, pairedRatio([]float64{0, 1, 2}, []float64{5, 2, 4}), 1e-9, "a zero reference is skipped")
	assert.Zero(t, pairedRatio(nil, []float64{1}))
}

// Config.Server runs the multistream figures against its server (in
// sctp-rdma harness, a "serve" process of its own): called once per LLP,
// stopped afterwards, and the row says so.
func TestServerElsewhere(t *testing.T) {
	var started, stopped []string
	cfg := Config{LLPs: []string{transport.SCTPNative, transport.MPA}, Size: 4 << 10, Bytes: 64 << 10, PingIters: 10,
		ManyStreams: 2, Runs: 1, NoSweep: true, NoSecure: true,
		Server: func(llp string) (string, func(), error) {
			srv, err := startServer(llp)
			if err != nil {
				return "", nil, err
			}
			started = append(started, llp)
			return srv.addr, func() { stopped = append(stopped, llp); srv.stop() }, nil
		}}
	res := Run(cfg)
	assert.Equal(t, []string{transport.SCTPNative, transport.MPA}, started)
	assert.Equal(t, started, stopped)
	n := 0
	for _, r := range res.Rows {
		require.NoError(t, r.Err, "%s %s", r.LLP, r.Metric)
		if strings.Contains(r.Metric, "streams vs 1 stream") {
			assert.Contains(t, r.Metric, "(server in its own process)")
			assert.Positive(t, r.Value)
			assert.Positive(t, r.Base)
			n++
		}
	}
	assert.Equal(t, 4, n, "per LLP: against one stream of one buffer, and of as many buffers as streams")
}

// TestRawReverse: every raw pair moves data both ways (a Read's baseline
// is the server-to-client flow), and a reverse run leaves the pair usable
// for the forward flow and the round trip.
func TestRawReverse(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			r, err := newRaw(llp)
			require.NoError(t, err)
			defer r.close()
			const total = 1 << 20
			for range 2 {
				d, err := r.reverse(16<<10, total)
				require.NoError(t, err)
				assert.Positive(t, d)
				d, err = r.throughput(16<<10, total)
				require.NoError(t, err)
				assert.Positive(t, d)
			}
			s, err := r.rtt(64, 20)
			require.NoError(t, err)
			assert.Len(t, s, 20)
			if rs, ok := r.(*rawSCTP); ok {
				assert.False(t, rs.back.Load(), "the client takes round-trip samples again")
				assert.GreaterOrEqual(t, rs.got.Load(), int64(total))
			}
		})
	}
}
