package harness

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
)

func TestSpliceWAN(t *testing.T) {
	m := WANMarks
	sec := []byte(wanBegin + "\nnew\n" + wanEnd + "\n")
	assert.Equal(t, "# page\n\n"+string(sec), string(m.Splice([]byte("# page\n"), sec)), "appended")
	old := "# page\n\n" + wanBegin + "\nold\n" + wanEnd + "\n\ntail\n"
	assert.Equal(t, "# page\n\n"+string(sec)+"tail\n", string(m.Splice([]byte(old), sec)), "replaced in place")
	assert.Equal(t, wanBegin+"\nold\n"+wanEnd+"\n", string(m.Section([]byte(old))))
	assert.Nil(t, m.Section([]byte("# page\n")))
	assert.Equal(t, string(sec), string(m.Splice(nil, sec)))

	// The kernel section beside it: each run replaces its own only.
	ksec := []byte(wanKernelBegin + "\nkernel new\n" + wanKernelEnd + "\n")
	both := WANKernelMarks.Splice([]byte(old), ksec)
	assert.Equal(t, old+"\n"+string(ksec), string(both), "appended at the end")
	both = m.Splice(both, sec)
	assert.Contains(t, string(both), "kernel new")
	assert.Contains(t, string(both), "\nnew\n")
	assert.NotContains(t, string(both), "old")
	assert.Equal(t, string(ksec), string(WANKernelMarks.Section(both)))
}

// TestMedianShare: the run with the median index, every run's index;
// a failed run wins.
func TestMedianShare(t *testing.T) {
	m := medianShare([]Share{{MbpsA: 1, Jain: 0.9}, {MbpsA: 2, Jain: 0.5}, {MbpsA: 3, Jain: 0.7}})
	assert.Equal(t, 3.0, m.MbpsA)
	assert.Equal(t, []float64{0.9, 0.5, 0.7}, m.Jains)
	m = medianShare([]Share{{Jain: 0.9}, {Err: errors.New("x")}})
	assert.EqualError(t, m.Err, "x")
	assert.Equal(t, Share{}, medianShare(nil))
}

func TestWANMarkdown(t *testing.T) {
	r := &WANResults{Config: WANConfig{Runs: 1}, Backend: "tun", EmulatorUDP: 99.8, EmulatorTCP: 95.1}
	r.Config.defaults()
	r.Config.LLPs = []string{"sctp-native", "mpa"}
	r.Shares = []Share{{A: "sctp-native", B: "tcp", MbpsA: 30.9, MbpsB: 65.4, Jain: 0.887, Jains: []float64{0.95, 0.887, 0.8}}}
	r.Cells = []WANCell{{RTT: 50 * time.Millisecond, Loss: 0.001, Figures: []WANFigure{
		{LLP: "tcp", What: "raw", Value: 10},
		{LLP: "sctp-native", What: "raw", Value: 9, Base: 10, Ratio: 0.9},
	}}, {RTT: 10 * time.Millisecond, Loss: 0.001, Figures: []WANFigure{
		{LLP: "tcp", What: "raw", Value: 90},
		{LLP: "sctp-native", What: "raw", Value: 80, Base: 90, Ratio: 0.89},
		{LLP: "sctp-native", What: "write", Value: 70, Base: 90, Ratio: 0.78},
		{LLP: "mpa", What: "write", Err: errors.New("stalled")},
		{LLP: "tcp", What: "rtt", Value: 10.4},
		{LLP: "mpa", What: "rtt", Value: 10.6, Base: 10.4, Ratio: 1.02},
	}}}
	r.Targets = []TargetRun{{Raw: 10, Write: 9, Read: 12}, {Raw: 20, Write: 8, ReadErr: errors.New("stalled")}, {Raw: 5, Write: 6, Read: 4}, {RawErr: errors.New("refused"), Write: 7, Read: 7}}
	r.Outages = []Outage{{LLP: "tcp", Recovery: 612 * time.Millisecond}, {LLP: "mpa", Err: errors.New("no progress")}}
	q := func(base time.Duration) []time.Duration {
		out := make([]time.Duration, len(holQuantiles))
		for i, v := range holQuantiles {
			out[i] = base + time.Duration(v*float64(base))
		}
		return out
	}
	r.HOL = []HOL{
		{Name: "sctp-native, 16 streams", LLP: "sctp-native", Streams: 16, Depth: 1,
			Lossy:  bench.Latency{Median: 52 * time.Millisecond, P99: 121 * time.Millisecond},
			Others: bench.Latency{Median: 51500 * time.Microsecond, P99: 104 * time.Millisecond, P999: 150 * time.Millisecond},
			All:    bench.Latency{P99: 105 * time.Millisecond}, LossyQ: q(60 * time.Millisecond), OthersQ: q(50 * time.Millisecond), AllQ: q(50 * time.Millisecond),
			PacketsLost: 10, Packets: 30000, OpsPerSec: 263},
		{Name: "mpa, one TCP connection", LLP: "mpa", Streams: 1, Depth: 16, All: bench.Latency{P99: 104 * time.Millisecond}, AllQ: q(50 * time.Millisecond), PacketsLost: 19, Packets: 28000, OpsPerSec: 283},
		{Name: "mpa, 16 TCP connections", LLP: "mpa", Streams: 16, Depth: 1, Err: errors.New("refused")},
	}
	var b bytes.Buffer
	r.Markdown(&b, []Plot{{Title: "t", Path: "img/wan.png"}})
	s := b.String()
	assert.True(t, strings.HasPrefix(s, wanBegin))
	assert.True(t, strings.HasSuffix(s, wanEnd+"\n"))
	for _, want := range []string{
		"UDP offered at 1.2x its rate arrived at 99.8 Mbit/s and raw TCP moved 95.1 Mbit/s",
		"| 10ms | 0.1% | 90 | 80 (0.89) |",
		"| 10ms | 0.1% | 70 (0.78) | error: stalled |",
		"| 10ms | 0.1% | 10.4 | | 10.6 (1.02) |",
		"| RDMA Write 64 KiB / raw sctp-native at 50ms RTT, 0.1% loss (median of 3 paired runs of 30s; range 0.40–1.20) | ≥ 0.85 | 0.90 | met |",
		"| RDMA Read 64 KiB / raw sctp-native at 50ms RTT, 0.1% loss (median of 2 paired runs of 30s; range 0.80–1.20) | ≥ 0.85 | 1.20 | met |",
		"| 1 | 10 | 9 (0.90) | 12 (1.20) |",
		"| 2 | 20 | 8 (0.40) | error: stalled |",
		"| 4 | error: refused | 7 | 7 |",
		"A path of 50ms round trip and 0.1% loss, 100Mbit: 4 runs",
		"| raw TCP | 612ms |", "| mpa | error: no progress |",
		"![t](img/wan.png)",
		"| sctp-native, 16 streams | 52.0 ms | 121.0 ms | 51.5 ms | 104.0 ms | 150.0 ms | 105.0 ms | 10 of 30000 | 263 |",
		"| mpa, one TCP connection | – | – | – | – | – | 104.0 ms | 19 of 28000 | 283 |",
		"| mpa, 16 TCP connections | error: refused |",
		"sctp-native runs CUBIC (RFC 9438), the stack's default for DDP (`--wan-sctp-cc`)",
		"| raw sctp-native / raw TCP at 50 ms RTT, 0.1% loss | ≥ 0.8 | 0.90 (9.0 / 10.0 Mbit/s) | met |",
		"| raw sctp-native | raw TCP | 30.9 | 65.4 | 0.887 (runs: 0.950, 0.887, 0.800) |",
		"| Jain's index, raw sctp-native beside raw TCP | ≥ 0.9 | 0.887 (30.9 / 65.4 Mbit/s) | **not met** |",
		"| p99 Read latency of the streams beside the lossy one (sctp-native) / p99 of every Read on one MPA connection | well below 1 | 1.00 (104ms / 104ms) | **not met** |",
	} {
		assert.Contains(t, s, want)
	}

	// The CDF: the native run's two lines and the one connection's.
	ch := r.holChart()
	require.NotNil(t, ch)
	require.Len(t, ch.series, 3)
	assert.Equal(t, "sctp-native: other streams", ch.series[0].name)
	assert.Equal(t, "sctp-native: the stream that loses", ch.series[1].name)
	assert.True(t, ch.series[1].dashed)
	assert.Equal(t, "mpa, one connection, every Read", ch.series[2].name)
	assert.Equal(t, holQuantiles, ch.series[0].y)
	assert.InDelta(t, 50, ch.series[0].x[0], 1e-9, "ms")
	dir := t.TempDir()
	plots, err := r.WritePlots(dir, "img")
	require.NoError(t, err)
	require.NotEmpty(t, plots)
	last := plots[len(plots)-1]
	assert.Equal(t, "img/wan-hol-cdf.png", last.Path)
	st, err := os.Stat(filepath.Join(dir, "wan-hol-cdf.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}
