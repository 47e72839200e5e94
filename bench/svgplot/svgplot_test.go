package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wellFormed parses s as XML to the end.
func wellFormed(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
	}
}

func TestChartSVG(t *testing.T) {
	c := Chart{
		Title: "Throughput <raw & RDMA>", XLabel: "message size", YLabel: "Gbit/s", LogX: true, XTickLabel: SizeLabel,
		Series: []Series{
			{Name: "raw", X: []float64{1024, 4096, 65536}, Y: []float64{0.5, 1.2, 2}, Dashed: true},
			{Name: "write", X: []float64{1024, 4096, 65536}, Y: []float64{0.4, 1.1, math.NaN()}},
		},
	}
	var b bytes.Buffer
	require.NoError(t, c.WriteSVG(&b))
	s := b.String()
	wellFormed(t, s)
	assert.Contains(t, s, "Throughput &lt;raw &amp; RDMA&gt;")
	assert.Equal(t, 2, strings.Count(s, "<polyline"))
	assert.Equal(t, 5, strings.Count(s, "<circle"), "the NaN point is left out")
	assert.Equal(t, 1+1, strings.Count(s, `stroke-dasharray`), "dashed line and its legend")
	for _, l := range []string{">1K<", ">4K<", ">16K<", ">64K<", ">raw<", ">write<", ">Gbit/s<"} {
		assert.Contains(t, s, l)
	}
	var b2 bytes.Buffer
	require.NoError(t, c.WriteSVG(&b2))
	assert.Equal(t, s, b2.String(), "deterministic output")
}

func TestChartLinearAndErrors(t *testing.T) {
	c := Chart{Series: []Series{{Name: "a", X: []float64{0, 10}, Y: []float64{3, 7}}}}
	var b bytes.Buffer
	require.NoError(t, c.WriteSVG(&b))
	wellFormed(t, b.String())
	assert.Contains(t, b.String(), ">10<")

	assert.ErrorIs(t, (&Chart{}).WriteSVG(io.Discard), ErrNoData)
	assert.Error(t, (&Chart{Series: []Series{{X: []float64{1}, Y: nil}}}).WriteSVG(io.Discard))
	assert.Error(t, (&Chart{LogX: true, Series: []Series{{X: []float64{0}, Y: []float64{1}}}}).WriteSVG(io.Discard))
	// A single point and all-zero values still draw.
	require.NoError(t, (&Chart{LogX: true, Series: []Series{{X: []float64{8}, Y: []float64{0}}}}).WriteSVG(io.Discard))
}

func TestNiceStepAndLabels(t *testing.T) {
	assert.Equal(t, 0.5, niceStep(0.42))
	assert.Equal(t, 2.0, niceStep(1.3))
	assert.Equal(t, 10.0, niceStep(6))
	assert.Equal(t, 1.0, niceStep(0))
	assert.Equal(t, "64", SizeLabel(64))
	assert.Equal(t, "4K", SizeLabel(4096))
	assert.Equal(t, "1M", SizeLabel(1<<20))
	assert.Equal(t, "1536", SizeLabel(1536))
}

func TestManyLogTicksThinned(t *testing.T) {
	c := Chart{LogX: true}
	ticks := c.xTicks(1, 1<<20)
	assert.LessOrEqual(t, len(ticks), 10)
	assert.Equal(t, 1.0, ticks[0])
}
