package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// Chart geometry, in SVG user units (the SVGs scale to the page width).
const (
	chartW  = 1000
	marginL = 70
	marginR = 20
	marginT = 10
	marginB = 30
	plotW   = chartW - marginL - marginR
)

// HeatColors is the heatmap's ramp, from one event to the fullest cell.
// The last color marks the fullest cells (the screenshot test looks for
// it).
var HeatColors = []string{"#fff5b8", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#662506"}

// heatColor maps a count to the ramp on a log scale.
func heatColor(n, maxN int64) string {
	if n <= 0 {
		return ""
	}
	if maxN <= 1 {
		return HeatColors[len(HeatColors)-1]
	}
	f := math.Log(float64(n)) / math.Log(float64(maxN))
	i := int(math.Round(f * float64(len(HeatColors)-1)))
	return HeatColors[min(max(i, 0), len(HeatColors)-1)]
}

// esc escapes text for SVG inside HTML.
func esc(s string) string { return html.EscapeString(s) }

// axis is a chart's time axis.
type axis struct{ start, end time.Time }

func (a axis) x(t time.Time) float64 {
	span := a.end.Sub(a.start)
	if span <= 0 {
		return marginL
	}
	return marginL + float64(t.Sub(a.start))/float64(span)*plotW
}

// timeTicks draws the x axis at y.
func (a axis) timeTicks(b *strings.Builder, y float64) {
	span := a.end.Sub(a.start)
	if span <= 0 {
		return
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888"/>`, marginL, y, chartW-marginR, y)
	for i := 0; i <= 5; i++ {
		t := a.start.Add(span * time.Duration(i) / 5)
		x := a.x(t)
		label := t.UTC().Format("15:04:05")
		if span < 10*time.Second {
			label = t.UTC().Format("15:04:05.000")
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/><text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`,
			x, y, x, y+4, x, y+16, esc(label))
	}
}

// latencyLabel formats a latency in ms as µs, ms or s.
func latencyLabel(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%gµs", math.Round(ms*1000))
	case ms < 1000:
		return fmt.Sprintf("%gms", math.Round(ms*10)/10)
	default:
		return fmt.Sprintf("%gs", math.Round(ms/100)/10)
	}
}

// latencyTicks draws the log-scaled y axis: 100µs, 1ms, ... 10s, 30s.
func latencyTicks(b *strings.Builder, y func(ms float64) float64) {
	for _, ms := range []float64{0.1, 1, 10, 100, 1000, 10000, 30000} {
		yy := y(ms)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" class="tick">%s</text>`,
			marginL, yy, chartW-marginR, yy, marginL-6, yy+4, esc(latencyLabel(ms)))
	}
}

// HeatmapSVG draws h over the time axis [start, end): one rectangle per
// non-empty cell, colored by count. id is the SVG element's id.
func HeatmapSVG(id string, h *Heatmap, start, end time.Time) template.HTML {
	const cellH = 6
	rows := h.Scale.Rows()
	plotH := rows * cellH
	H := marginT + plotH + marginB
	a := axis{start, end}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart heatmap" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, esc(id), chartW, H)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#ffffff" stroke="#ccc"/>`, marginL, marginT, plotW, plotH)
	maxN := h.MaxCount()
	for c, col := range h.Cols {
		if col == nil {
			continue
		}
		x0 := a.x(h.Origin.Add(time.Duration(c) * h.Step))
		x1 := a.x(h.Origin.Add(time.Duration(c+1) * h.Step))
		for r, n := range col {
			if n == 0 {
				continue
			}
			y := marginT + plotH - (r+1)*cellH
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s–%s: %d</title></rect>`,
				x0, y, max(x1-x0, 1), cellH, heatColor(n, maxN), esc(latencyLabel(h.Scale.Lower(r))), esc(latencyLabel(h.Scale.Lower(r+1))), n)
		}
	}
	latencyTicks(&b, func(ms float64) float64 {
		return marginT + float64(plotH) - math.Log10(ms/MinLatencyMs)*float64(h.Scale.PerDecade)*cellH
	})
	a.timeTicks(&b, float64(marginT+plotH))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Percentiles drawn per API, with their dash patterns.
var percentiles = []struct {
	Name string
	Q    float64
	Dash string
}{{"p50", 0.50, ""}, {"p99", 0.99, "6 3"}, {"p99.9", 0.999, "2 2"}}

// seriesColors color the APIs in the percentile chart.
var seriesColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// maxSeries bounds the APIs drawn (the busiest).
const maxSeries = 8

// PercentilesSVG draws p50, p99 and p99.9 of each API over time, on a log
// latency axis.
func PercentilesSVG(id string, apis []APISeries, start, end time.Time) template.HTML {
	const plotH = 300
	legendH := 20 * ((min(len(apis), maxSeries) + 3) / 4)
	H := marginT + plotH + marginB + legendH + 10
	a := axis{start, end}
	decades := math.Log10(MaxLatencyMs / MinLatencyMs)
	y := func(ms float64) float64 {
		ms = min(max(ms, MinLatencyMs), MaxLatencyMs)
		return marginT + plotH - math.Log10(ms/MinLatencyMs)/decades*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d">`, esc(id), chartW, H)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fff" stroke="#ccc"/>`, marginL, marginT, plotW, plotH)
	latencyTicks(&b, y)
	a.timeTicks(&b, marginT+plotH)
	for i, s := range apis {
		if i >= maxSeries {
			break
		}
		color := seriesColors[i%len(seriesColors)]
		for _, p := range percentiles {
			var pts []string
			for c := range s.Hist.Cols {
				v, ok := s.Hist.Quantile(c, p.Q)
				if !ok {
					continue
				}
				mid := s.Hist.Origin.Add(time.Duration(c)*s.Hist.Step + s.Hist.Step/2)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", a.x(mid), y(v)))
			}
			if len(pts) == 1 { // one column: a short flat line
				pts = append(pts, pts[0])
			}
			if len(pts) == 0 {
				continue
			}
			dash := ""
			if p.Dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, p.Dash)
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"><title>%s %s</title></polyline>`,
				color, dash, strings.Join(pts, " "), esc(s.API), p.Name)
		}
		lx := marginL + (i%4)*220
		ly := marginT + plotH + marginB + 10 + (i/4)*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d" class="legend">%s (%d)</text>`,
			lx, ly, lx+20, ly, color, lx+26, ly+4, esc(s.API), s.Hist.Total)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64 // 0..1
	Note  string
}

// BarsSVG draws horizontal bars of fractions 0..1.
func BarsSVG(id string, bars []Bar) template.HTML {
	const rowH, labelW, barW = 24, 140, 600
	H := rowH*len(bars) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart bars" viewBox="0 0 %d %d">`, esc(id), chartW, H)
	for i, bar := range bars {
		y := 5 + i*rowH
		w := min(max(bar.Value, 0), 1) * barW
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="legend">%s</text>`, labelW-8, y+15, esc(bar.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#eee"/>`, labelW, y+2, barW, rowH-6)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelW, y+2, w, rowH-6, seriesColors[i%len(seriesColors)])
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend">%s</text>`, labelW+barW+8, y+15, esc(bar.Note))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
