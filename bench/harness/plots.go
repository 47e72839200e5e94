package harness

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/sctp-rdma/sctp-rdma/bench/svgplot"
)

// Plot is one written chart.
type Plot struct {
	Title string
	// Path is the file as the Markdown page refers to it (relative to it).
	Path string
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
// the 0.90 target.
func (r *Results) charts() (names []string, charts []*svgplot.Chart) {
	add := func(name string, c *svgplot.Chart) {
		if len(c.Series) > 0 {
			names, charts = append(names, name), append(charts, c)
		}
	}
	series := func(cs []Curve) []svgplot.Series {
		var s []svgplot.Series
		for _, c := range cs {
			s = append(s, svgplot.Series{Name: c.Name, X: c.X, Y: c.Y, Dashed: c.Name == "raw LLP"})
		}
		return s
	}
	for _, llp := range r.Config.LLPs {
		add("throughput-"+llp+".svg", &svgplot.Chart{
			Title: llp + ": throughput against message size (median of " + fmt.Sprint(r.Config.Runs) + " runs)", XLabel: "message size (octets)", YLabel: "Gbit/s",
			LogX: true, XTickLabel: svgplot.SizeLabel, Series: series(r.curves(llp, KindThroughput))})
		add("rtt-"+llp+".svg", &svgplot.Chart{
			Title: llp + ": median round trip against message size", XLabel: "message size (octets)", YLabel: "µs",
			LogX: true, XTickLabel: svgplot.SizeLabel, Series: series(r.curves(llp, KindRTT))})
	}
	st := &svgplot.Chart{Title: "RDMA Write " + svgplot.SizeLabel(float64(r.Config.Size)) + ": aggregate throughput against streams, relative to 1 stream",
		XLabel: "streams on one association (one TCP connection each for mpa)", YLabel: "× one-stream throughput", LogX: true}
	var xmax float64
	for _, llp := range r.Config.LLPs {
		for _, c := range r.curves(llp, KindStreams) {
			if c.X[0] != 1 || c.Y[0] <= 0 {
				continue
			}
			s := svgplot.Series{Name: llp, X: c.X}
			for _, y := range c.Y {
				s.Y = append(s.Y, y/c.Y[0])
			}
			xmax = max(xmax, c.X[len(c.X)-1])
			st.Series = append(st.Series, s)
		}
	}
	if len(st.Series) > 0 {
		st.Series = append(st.Series, svgplot.Series{Name: "target 0.90", X: []float64{1, xmax}, Y: []float64{0.9, 0.9}, Dashed: true})
	}
	add("streams.svg", st)
	return names, charts
}

// WritePlots writes the charts as SVG files into dir and records them in
// r.Plots as rel/name: rel is dir as seen from the Markdown page ("img"
// for docs/img beside docs/benchmarks.md).
func (r *Results) WritePlots(dir, rel string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, charts := r.charts()
	r.Plots = nil
	for i, c := range charts {
		var b bytes.Buffer
		if err := c.WriteSVG(&b); err != nil {
			return fmt.Errorf("plot %s: %w", names[i], err)
		}
		if err := os.WriteFile(filepath.Join(dir, names[i]), b.Bytes(), 0o644); err != nil {
			return err
		}
		r.Plots = append(r.Plots, Plot{Title: c.Title, Path: path.Join(rel, names[i])})
	}
	return nil
}
