// Package svgplot draws the line charts of docs/benchmarks.md as small,
// self-contained SVG files: several series of (x, y) points, an optional
// logarithmic x axis (message sizes, stream counts), a linear y axis from
// zero, ticks, grid, axis titles and a legend. It exists so that `make
// bench` can draw its plots with the standard library alone
// (docs/dependencies.md says why no plotting library is used). The output
// is deterministic text: the same figures give the same file, so plots
// diff like the Markdown beside them.
package svgplot

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name string
	// X and Y are the points, in order of X; both have the same length.
	X, Y []float64
	// Dashed draws the line dashed (e.g. for a reference such as the raw
	// LLP).
	Dashed bool
}

// Chart is a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	// LogX draws the x axis in powers of two; every X must be positive.
	LogX bool
	// XTickLabel formats an x tick (default: %g).
	XTickLabel func(float64) string
	// Width and Height in pixels (default 640×400).
	Width, Height int
	Series        []Series
}

// palette: colour-blind-safe (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

// ErrNoData reports a chart without a single finite point.
var ErrNoData = errors.New("svgplot: no data to plot")

const (
	marginL, marginR, marginT, marginB = 64, 16, 36, 76
)

// WriteSVG writes the chart as an SVG document.
func (c *Chart) WriteSVG(w io.Writer) error {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 640
	}
	if height <= 0 {
		height = 400
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	points := 0
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("svgplot: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i, x := range s.X {
			y := s.Y[i]
			if !finite(x) || !finite(y) {
				continue
			}
			if c.LogX && x <= 0 {
				return fmt.Errorf("svgplot: series %q: x %g on a logarithmic axis", s.Name, x)
			}
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, y)
			points++
		}
	}
	if points == 0 {
		return ErrNoData
	}
	tx := func(x float64) float64 { return x }
	if c.LogX {
		tx = math.Log2
	}
	lo, hi := tx(xmin), tx(xmax)
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	ystep := niceStep(ymax / 5)
	if ymax <= 0 {
		ystep = 1
	}
	ytop := math.Ceil(ymax/ystep) * ystep
	if ytop == 0 {
		ytop = ystep
	}
	pw, ph := float64(width-marginL-marginR), float64(height-marginT-marginB)
	px := func(x float64) float64 { return marginL + (tx(x)-lo)/(hi-lo)*pw }
	py := func(y float64) float64 { return marginT + ph - y/ytop*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, esc(c.Title))
	// y grid and ticks
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		yy := py(y)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(marginL), f(yy), f(marginL+pw), f(yy))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", f(marginL-6), f(yy+4), esc(fmtNum(y)))
	}
	// x ticks: every data x on a log axis, else 5 nice steps
	label := c.XTickLabel
	if label == nil {
		label = fmtNum
	}
	for _, x := range c.xTicks(xmin, xmax) {
		xx := px(x)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(xx), f(marginT), f(xx), f(marginT+ph))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f(xx), f(marginT+ph+16), esc(label(x)))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%s" height="%s" fill="none" stroke="#333"/>`+"\n", marginL, marginT, f(pw), f(ph))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f(marginL+pw/2), f(marginT+ph+34), esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", f(marginT+ph/2), esc(c.YLabel))
	// series
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for j, x := range s.X {
			if finite(x) && finite(s.Y[j]) {
				pts = append(pts, f(px(x))+","+f(py(s.Y[j])))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", col, dash, strings.Join(pts, " "))
		}
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, col)
		}
	}
	// legend below the x axis title, in rows of up to three entries
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		lx := marginL + float64(i%3)*pw/3
		ly := marginT + ph + 52 + float64(i/3)*16
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f(lx), f(ly-4), f(lx+24), f(ly-4), col, dash)
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text>`+"\n", f(lx+30), f(ly), esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Chart) xTicks(xmin, xmax float64) []float64 {
	if c.LogX {
		var t []float64
		for e := math.Floor(math.Log2(xmin)); e <= math.Ceil(math.Log2(xmax)); e++ {
			if v := math.Exp2(e); v >= xmin && v <= xmax {
				t = append(t, v)
			}
		}
		// Too many labels overlap: keep every other power of two.
		for len(t) > 10 {
			var k []float64
			for i := 0; i < len(t); i += 2 {
				k = append(k, t[i])
			}
			t = k
		}
		return t
	}
	if xmax == xmin {
		return []float64{xmin}
	}
	step := niceStep((xmax - xmin) / 5)
	var t []float64
	for x := math.Ceil(xmin/step) * step; x <= xmax+step/1e6; x += step {
		t = append(t, x)
	}
	return t
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 || !finite(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// f formats a coordinate with one decimal.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func esc(s string) string { return html.EscapeString(s) }

// SizeLabel formats an octet count as 64, 1K, 64K, 1M.
func SizeLabel(v float64) string {
	n := int64(v)
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmtNum(v)
}
