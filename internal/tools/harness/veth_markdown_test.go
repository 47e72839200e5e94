package harness

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVethMarkdown: the section has its markers, a row per operation in
// both tables with the ratios of the medians, a row per path of raw
// sctp-native against raw TCP, and a failed raw TCP cell is listed once
// however many rows show it.
func TestVethMarkdown(t *testing.T) {
	cfg := VethConfig{Exe: "x", MTUs: []int{1500}, GRO: []bool{false}, Runs: 3}
	cfg.defaults()
	s := newVethSamples()
	s.errs[[2]string{"tcp", "raw"}] = errors.New("no route")
	for _, op := range vethOps {
		for llp, g := range map[string]float64{"sctp-native": 4, "mpa": 8} {
			k := [2]string{llp, op}
			s.gbps[k] = []float64{g, g / 2, g * 2}
			s.cpuA[k] = []float64{1, 1, 1}
			s.cpuB[k] = []float64{1, 3, 2}
		}
	}
	k := [2]string{"sctp", "raw"}
	s.gbps[k], s.cpuA[k], s.cpuB[k] = []float64{3, 3, 3}, []float64{1, 1, 1}, []float64{2, 2, 2}
	res := &VethResults{Config: cfg, Machine: describe(),
		Paths: []VethPath{{MTU: 1500, GRO: false, OffloadA: "generic-receive-offload off", OffloadB: "generic-receive-offload off", Figures: s.figures(cfg.LLPs)}}}
	var b bytes.Buffer
	res.Markdown(&b)
	page := b.String()
	require.True(t, strings.HasPrefix(page, VethMarks.Begin), page)
	assert.True(t, strings.HasSuffix(page, VethMarks.End+"\n"), page)
	assert.Contains(t, page, "MTU 1500, GRO off, both ends: generic-receive-offload off")
	assert.Contains(t, page, "| 1500 | off | RDMA Write | failed [1] | 4.00 | 8.00 | 0.50 | – | – |")
	assert.Contains(t, page, "| 1500 | off | Send | – | 1.00 / 2.00 | 1.00 / 2.00 | 1.00 |")
	assert.Contains(t, page, "| 1500 | off | failed [1] | 3.00 | – | – | 1.00 / 2.00 |", "the raw sctp-native row")
	assert.Equal(t, 4, strings.Count(page, "failed [1]"))
	assert.NotContains(t, page, "failed [2]")
	assert.Contains(t, page, "1. MTU 1500, GRO off, tcp raw: no route")
	// The section splices into a page and replaces itself there.
	p := VethMarks.Splice([]byte("# Benchmarks\n"), b.Bytes())
	p = VethMarks.Splice(p, b.Bytes())
	assert.Equal(t, 1, bytes.Count(p, []byte(VethMarks.Begin)))
}
