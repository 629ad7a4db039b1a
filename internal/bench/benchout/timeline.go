package benchout

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/kscope-dev/kscope/internal/output"
)

// The timeline page: self-contained (inline SVG, no script, nothing
// fetched), its head output.HTMLHead.
var timelineTmpl = template.Must(template.New("timeline").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
{{.Head}}
</head>
<body>
<h1>kscope bench report</h1>
<table><tr><th></th><th>run</th><th>start</th><th>measured</th><th>msgs/s</th></tr>
{{range .Runs}}<tr><td style="color: {{.Color}}">&#9632;</td><td>{{.Name}}</td><td>{{.Start}}</td><td>{{.Measured}}</td><td>{{.Rate}}</td></tr>
{{end}}</table>
<p class="note">Latency over time: for every second of each run's measured part (x, seconds from its start), the second's p50 (thin), p99 (solid) and maximum (dots), on a logarithmic scale. The response series is corrected for coordinated omission: a stall shows as the seconds whose requests waited for it.</p>
{{range .Charts}}<h2>{{.Title}}</h2>
{{.SVG}}
{{end}}
</body>
</html>
`))

var runColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

type timelineRun struct {
	Name, Start, Measured, Rate string
	Color                       string
}

type timelineChart struct {
	Title string
	SVG   template.HTML
}

// WriteTimeline writes an HTML page that draws each latency series over
// time for every run, one chart per series with a line per run: where a
// comparison's tail came from (a stall is a spike in a few seconds).
func WriteTimeline(w io.Writer, runs []Run) error {
	page := struct {
		Head   template.HTML
		Runs   []timelineRun
		Charts []timelineChart
	}{Head: output.HTMLHead("kscope bench report")}
	for i, r := range runs {
		page.Runs = append(page.Runs, timelineRun{Name: r.Name, Start: r.Result.Start.UTC().Format("2006-01-02 15:04:05"),
			Measured: fmt.Sprintf("%d s", len(r.Result.Series)), Rate: number(r.Result.Totals.MsgsPerSec), Color: runColors[i%len(runColors)]})
	}
	for _, s := range seriesOf(runs) {
		page.Charts = append(page.Charts, timelineChart{Title: s + " latency (ms)", SVG: timelineSVG(runs, s)})
	}
	return timelineTmpl.Execute(w, page)
}

// timelineSVG draws one series: x is seconds from each run's start, y the
// latency on a log scale from the smallest p50 to the largest maximum.
func timelineSVG(runs []Run, series string) template.HTML {
	const (
		width, height        = 1000, 320
		left, right, top, bo = 60, 20, 10, 30
		plotW, plotH         = width - left - right, height - top - bo
	)
	lo, hi, secs := math.Inf(1), 0.0, 1
	for _, r := range runs {
		secs = max(secs, len(r.Result.Series))
		for _, s := range r.Result.Series {
			if l, ok := s.Latency[series]; ok && l.Count > 0 {
				lo = min(lo, float64(max(l.P50Us, 1)))
				hi = max(hi, float64(l.MaxUs))
			}
		}
	}
	if hi <= 0 || math.IsInf(lo, 0) {
		return template.HTML(`<p class="note">no latencies</p>`)
	}
	// Whole decades, so the grid lines are 0.01, 0.1, 1, 10 ... ms.
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	x := func(t float64) float64 { return left + t/float64(max(secs-1, 1))*plotW }
	y := func(us int64) float64 {
		v := (math.Log10(float64(max(us, 1))) - dlo) / (dhi - dlo)
		return top + (1-math.Max(0, math.Min(v, 1)))*plotH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, width, height, html.EscapeString(series))
	for d := dlo; d <= dhi; d++ {
		yy := y(int64(math.Pow(10, d)))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			left, width-right, yy, yy, left-6, yy+4, html.EscapeString(strings.TrimSuffix(millis(math.Pow(10, d)), ".000")))
	}
	for t := 0; t < secs; t += max(1, secs/10) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d s</text>`, x(float64(t)), height-8, t)
	}
	for i, r := range runs {
		color := runColors[i%len(runColors)]
		var p50, p99 []string
		for t, s := range r.Result.Series {
			l, ok := s.Latency[series]
			if !ok || l.Count == 0 {
				continue
			}
			p50 = append(p50, fmt.Sprintf("%.1f,%.1f", x(float64(t)), y(l.P50Us)))
			p99 = append(p99, fmt.Sprintf("%.1f,%.1f", x(float64(t)), y(l.P99Us)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s, second %d: max %s ms</title></circle>`,
				x(float64(t)), y(l.MaxUs), color, html.EscapeString(r.Name), t, millis(float64(l.MaxUs)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1" stroke-opacity="0.6" points="%s"/>`, color, strings.Join(p50, " "))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, color, strings.Join(p99, " "))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and escaped names only
}
