package harness

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot is one written chart.
type Plot struct {
	Title string
	// Path is the file as the Markdown page refers to it (relative to it).
	Path string
}

// series is one line of a chart.
type series struct {
	name   string
	x, y   []float64
	dashed bool
	// color, if not 0, is 1 + the palette index of the line (and a dashed
	// line keeps it rather than turning grey): series drawn as pairs.
	color int
}

// chart is one figure before rendering.
type chart struct {
	title, xLabel, yLabel string
	logX                  bool
	series                []series
	// legendBottomRight places the legend in the lower right corner
	// (for curves that rise steeply on the left, such as CDFs).
	legendBottomRight bool
}

// curves returns the curves of one LLP and kind.
func (r *Results) curves(llp, kind string) []Curve {
	var out []Curve
	for _, c := range r.Curves {
		if c.LLP == llp && c.Kind == kind && len(c.X) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// charts builds the charts of r keyed by file name: per LLP, throughput
// and round trip against message size (raw LLP dashed); over all LLPs,
// aggregate throughput against stream count relative to one stream, with
// the 0.95 target.
func (r *Results) charts() (names []string, charts []*chart) {
	add := func(name string, c *chart) {
		if len(c.series) > 0 {
			names, charts = append(names, name), append(charts, c)
		}
	}
	lines := func(cs []Curve) []series {
		var s []series
		for _, c := range cs {
			s = append(s, series{name: c.Name, x: c.X, y: c.Y, dashed: c.Name == "raw LLP"})
		}
		return s
	}
	for _, llp := range r.Config.LLPs {
		add("throughput-"+llp+".png", &chart{
			title:  llp + ": throughput against message size (median of " + fmt.Sprint(r.Config.Runs) + " runs)",
			xLabel: "message size (octets)", yLabel: "Gbit/s", logX: true,
			series: lines(r.curves(llp, kindThroughput))})
		add("rtt-"+llp+".png", &chart{
			title:  llp + ": median round trip against message size",
			xLabel: "message size (octets)", yLabel: "µs", logX: true,
			series: lines(r.curves(llp, kindRTT))})
	}
	st := &chart{title: "RDMA Write " + sizeLabel(float64(r.Config.Size)) + ": aggregate throughput against streams, relative to 1 stream",
		xLabel: "streams on one association (one TCP connection each for mpa)", yLabel: "× one-stream throughput", logX: true}
	var xmax float64
	for _, llp := range r.Config.LLPs {
		for _, c := range r.curves(llp, kindStreams) {
			if c.X[0] != 1 || c.Y[0] <= 0 {
				continue
			}
			s := series{name: llp, x: c.X}
			for _, y := range c.Y {
				s.y = append(s.y, y/c.Y[0])
			}
			xmax = max(xmax, c.X[len(c.X)-1])
			st.series = append(st.series, s)
		}
	}
	if len(st.series) > 0 {
		st.series = append(st.series, series{name: "target 0.95", x: []float64{1, xmax}, y: []float64{0.95, 0.95}, dashed: true})
	}
	add("streams.png", st)
	return names, charts
}

// sizeLabel prints 65536 as 64K and 1048576 as 1M.
func sizeLabel(v float64) string {
	n := int64(v)
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// sizeTicks labels a logarithmic size axis at the powers of two.
type sizeTicks struct{}

// Ticks implements plot.Ticker.
func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for e := math.Floor(math.Log2(max(lo, 1))); math.Pow(2, e) <= hi*1.0001; e++ {
		v := math.Pow(2, e)
		if v < lo*0.9999 {
			continue
		}
		label := ""
		if int(e)%2 == 0 || hi/lo < 64 {
			label = sizeLabel(v)
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}

// render draws c with gonum/plot.
func (c *chart) render() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xLabel
	p.Y.Label.Text = c.yLabel
	p.Y.Min = 0
	if c.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
	}
	p.Add(plotter.NewGrid())
	// Top left, inside the axes: every curve here rises to the right.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
	if c.legendBottomRight {
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	}
	p.Legend.ThumbnailWidth = vg.Points(28)
	p.Title.Padding = vg.Points(6)
	for i, s := range c.series {
		xy := make(plotter.XYs, 0, len(s.x))
		for j := range s.x {
			if c.logX && s.x[j] <= 0 {
				continue // no place on a log axis
			}
			xy = append(xy, plotter.XY{X: s.x[j], Y: s.y[j]})
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.name, err)
		}
		col := plotutil.Color(i)
		if s.color > 0 {
			col = plotutil.Color(s.color - 1)
		}
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2.5)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			if s.color == 0 {
				l.Color, pts.Color = color.Gray{Y: 0x40}, color.Gray{Y: 0x40}
			}
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return p, nil
}

// WritePlots writes the charts as PNG files (gonum/plot) into dir and
// records them in r.Plots as rel/name: rel is dir as seen from the
// Markdown page ("img" for docs/img beside docs/benchmarks.md).
func (r *Results) WritePlots(dir, rel string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, charts := r.charts()
	r.Plots = nil
	for i, c := range charts {
		p, err := c.render()
		if err != nil {
			return fmt.Errorf("plot %s: %w", names[i], err)
		}
		if err := p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, names[i])); err != nil {
			return fmt.Errorf("plot %s: %w", names[i], err)
		}
		r.Plots = append(r.Plots, Plot{Title: c.title, Path: path.Join(rel, names[i])})
	}
	return nil
}
