// Command traceplot draws an association's congestion window from a
// protocol trace (package trace; sctp-rdma's --trace FILE): cwnd, flight
// size and ssthresh in KiB against time, with a mark at each Fast
// Retransmit (RFC 9260 §7.2.4) and T3-rtx expiry (§6.3.3).
//
//	go run ./trace/traceplot -o cwnd.png trace.jsonl
//
// -assoc selects an association by its tag ("assoc" in the trace); by
// default the one with the most records.
package main

import (
	"flag"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sctp-rdma/sctp-rdma/trace"
)

func main() {
	out := flag.String("o", "cwnd.png", "the PNG (or SVG, PDF: by its extension) to write")
	assoc := flag.String("assoc", "", "the association to draw (its \"assoc\" tag; default: the one with the most records)")
	title := flag.String("title", "", "the plot's title (default: the trace file and association)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: traceplot [-o FILE] [-assoc TAG] [-title T] TRACE.jsonl")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out, *assoc, *title); err != nil {
		fmt.Fprintln(os.Stderr, "traceplot:", err)
		os.Exit(1)
	}
}

func run(in, out, assoc, title string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	recs, err := trace.Parse(f)
	f.Close()
	if err != nil {
		return err
	}
	if assoc == "" {
		assoc = busiest(recs)
	}
	var cwnd, flight, ssthresh, frtx, t3 plotter.XYs
	for _, r := range recs {
		if r.Assoc != assoc || (r.Event != "sctp:sack" && r.Event != "sctp:t3_expiry") {
			continue
		}
		x := r.T / 1000
		cwnd = append(cwnd, plotter.XY{X: x, Y: kib(r.Cwnd)})
		flight = append(flight, plotter.XY{X: x, Y: kib(r.Flight)})
		ssthresh = append(ssthresh, plotter.XY{X: x, Y: kib(r.SSThresh)})
		switch {
		case r.FastRetransmit:
			frtx = append(frtx, plotter.XY{X: x, Y: kib(r.Cwnd)})
		case r.Event == "sctp:t3_expiry":
			t3 = append(t3, plotter.XY{X: x, Y: kib(r.Cwnd)})
		}
	}
	if len(cwnd) == 0 {
		return fmt.Errorf("%s: no SACK of association %q (the trace of an sctp-native run has them)", in, assoc)
	}
	p := plot.New()
	p.Title.Text = title
	if title == "" {
		p.Title.Text = fmt.Sprintf("%s: association %s", in, assoc)
	}
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "KiB"
	p.Y.Min = 0
	p.Y.Max = max(maxY(cwnd), maxY(flight)) * 1.1 // ssthresh may start far above
	p.Legend.Top = true
	add := func(name string, xy plotter.XYs, c color.Color, dashed bool) error {
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(1)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	if err := add("cwnd", cwnd, color.RGBA{B: 200, A: 255}, false); err != nil {
		return err
	}
	if err := add("flight", flight, color.RGBA{G: 150, A: 255}, false); err != nil {
		return err
	}
	if err := add("ssthresh", clip(ssthresh, p.Y.Max), color.Gray{Y: 110}, true); err != nil {
		return err
	}
	for _, m := range []struct {
		name  string
		xy    plotter.XYs
		c     color.Color
		shape draw.GlyphDrawer
	}{
		{fmt.Sprintf("fast retransmit (%d)", len(frtx)), frtx, color.RGBA{R: 220, A: 255}, draw.CircleGlyph{}},
		{fmt.Sprintf("T3-rtx expiry (%d)", len(t3)), t3, color.Black, draw.CrossGlyph{}},
	} {
		if len(m.xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(m.xy)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Shape, s.GlyphStyle.Radius = m.c, m.shape, vg.Points(3)
		p.Add(s)
		p.Legend.Add(m.name, s)
	}
	return p.Save(8*vg.Inch, 4*vg.Inch, out)
}

// busiest is the association with the most records.
func busiest(recs []trace.Record) string {
	n := map[string]int{}
	best := ""
	for _, r := range recs {
		if r.Assoc == "" {
			continue
		}
		n[r.Assoc]++
		if n[r.Assoc] > n[best] {
			best = r.Assoc
		}
	}
	return best
}

func kib(v int64) float64 { return float64(v) / 1024 }

func maxY(xy plotter.XYs) float64 {
	m := 0.0
	for _, p := range xy {
		m = max(m, p.Y)
	}
	return m
}

// clip holds the points of xy at most ceil (ssthresh before the first
// loss is the peer's window, off the chart).
func clip(xy plotter.XYs, ceil float64) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i, p := range xy {
		out[i] = plotter.XY{X: p.X, Y: min(p.Y, ceil)}
	}
	return out
}
