package fsbench

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/kscope-dev/kscope/internal/output"
)

// The page: self-contained (inline SVG, no script, nothing fetched), its
// head output.HTMLHead.
var pageTmpl = template.Must(template.New("labfs").Funcs(template.FuncMap{
	"mib": func(b int64) string { return num(float64(b) / (1 << 20)) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
{{.Head}}
</head>
<body>
<h1>kscope lab fs{{if .Interrupted}} (interrupted){{end}}</h1>
<p class="meta">{{.Describe}}.<br>{{.Environment}}.<br>{{.Start.UTC.Format "2006-01-02 15:04:05 MST"}} to {{.End.UTC.Format "15:04:05"}}.</p>
{{range .Warnings}}<p class="warn">warning: {{.}}</p>
{{end}}
<h2>Variants</h2>
<table id="variants"><tr><th>variant</th><th>mkfs</th><th>mount</th></tr>
{{range .VariantRows}}<tr><td>{{.Name}}</td><td><code>{{.Mkfs}}</code></td><td><code>{{.Mount}}</code></td></tr>
{{end}}</table>

<h2>Mean and 95% confidence interval over trials</h2>
<p class="note">Produce latency is the load generator's service latency (send to acknowledgement) in ms; over SLO is the share of messages slower than {{.SLOMs}} ms; write is the broker's write calls on its log segments; journal is jbd2 commits (ext4) or iclog writes (XFS). The interval is Student's t over the trials' values; n/a with one trial.</p>
<table id="summary"><tr><th>variant</th><th>n</th>{{range .Headers}}<th>{{.}}</th>{{end}}</tr>
{{range .SummaryRows}}<tr><td>{{.Variant}}</td><td class="num">{{.N}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table>

{{if .AboveRows}}<h2>Produce requests above thresholds</h2>
<p class="note">The share of all trials' produce requests above each threshold, its 95% interval from a bootstrap over the trials and then the seconds of each, and the count; the verdict against {{.AboveBaseline}} is the exact test of the shares with the design effect of the baseline's clustering (docs/compare.md).</p>
<table id="above"><tr><th>variant</th>{{range .AboveHeaders}}<th>{{.}}</th>{{end}}</tr>
{{range .AboveRows}}<tr><td>{{.Variant}}</td>{{range .Cells}}<td class="num {{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}

{{if .VerdictRows}}<h2>Verdicts against {{.Baseline}}</h2>
<p class="note">A verdict needs a change beyond {{.ThresholdPct}}% and an adjusted p below half of {{.Alpha}} (two families of tests share alpha). Produce latency is compared over all trials' requests as <code>kscope bench compare</code> does (docs/compare.md): p50 by Mann–Whitney on per-second p50, p99 and p99.9 by a bootstrap over trials and seconds, the share over the SLO by the exact test with the design effect; max is not tested. The other metrics: change of the mean over trials and a Mann–Whitney test on the per-second samples of all trials pooled, Holm-adjusted.</p>
<table id="verdicts"><tr><th>variant</th>{{range .Labels}}<th>{{.}}</th>{{end}}</tr>
{{range .VerdictRows}}<tr><td>{{.Variant}}</td>{{range .Cells}}<td class="{{.Class}}" title="p adjusted {{.P}}{{with .Reason}}; {{.}}{{end}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}

<h2>Charts</h2>
<p class="note">Bar: mean over trials; line: 95% confidence interval; dots: the trials.</p>
{{range .Charts}}<h3>{{.Title}}</h3>
{{.SVG}}
{{end}}

{{if .Heatmaps}}<h2>Produce latency over time</h2>
<p class="note">Per variant, the produce requests (service latency) of each second of the measured part, summed over the trials (second i of every trial), by latency bucket; colour on a log scale of the count, white for none. The dashed line is the SLO: what is above it is what the share over the SLO counts.</p>
{{range .Heatmaps}}<h3>{{.Title}}</h3>
{{.SVG}}
{{end}}{{end}}
{{if .JournalSVG}}<h2>Journal commit latency</h2>
<p class="note">Per variant, over its trials, the share of the file system's journal commits (jbd2 commits on ext4, iclog writes on XFS; their count in brackets) in each latency bucket (ms), those that started in the measured part. On ext4 made with fast_commit, the fast commits (run by the fsyncing thread, falling back to a jbd2 commit when ineligible) have a row of their own, ext4_fast_commit.</p>
{{.JournalSVG}}
{{end}}
{{if .Explained}}<h2>Explain on each recording</h2>
<p class="note">Each recorded run's recording (the format of <code>kscope record</code>), and what <code>kscope explain</code> says of it with its defaults (slow: the recording's p99 of produce latency): the causes of the slow requests, how many have a journal commit at their root, and the appends of 10 ms and more with the commits that overlapped them.</p>
<table id="explain"><tr><th>variant</th><th>trial</th><th>explain</th><th>recording</th></tr>
{{range .Explained}}<tr><td>{{.Variant}}</td><td class="num">{{.Trial}}</td><td>{{.Explain.Line}}</td><td><code>{{.Recording}}</code></td></tr>
{{end}}</table>{{end}}

<h2>Runs</h2>
<table id="runs"><tr><th>variant</th><th>trial</th><th>acked</th><th>msg/s</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>over SLO</th><th>write p99 ms</th><th>journal</th><th>commits</th><th>journal p99 ms</th><th>noise fsyncs</th><th>dirty MiB</th><th>freezes</th><th>device, mount options</th></tr>
{{range .Runs}}<tr><td>{{.Variant}}</td><td class="num">{{.Trial}}</td><td class="num">{{.Acked}}</td><td class="num">{{printf "%.0f" .MsgsPerSec}}</td><td class="num">{{printf "%.2f" .P50Ms}}</td><td class="num">{{printf "%.2f" .P99Ms}}</td><td class="num">{{printf "%.2f" .P999Ms}}</td><td class="num">{{printf "%.1f" .MaxMs}}</td><td class="num">{{printf "%.3f" .OverSLOPct}}% ({{.OverSLO}})</td><td class="num">{{printf "%.3f" .WriteP99Ms}}</td><td>{{.JournalKind}}</td><td class="num">{{.Journal}}</td><td class="num">{{printf "%.2f" .JournalP99Ms}}</td><td class="num">{{.NoiseFsyncs}}</td><td class="num">{{mib .NoiseDirtyBytes}}</td><td class="num">{{.Freezes}}</td><td>{{.Device}} {{.MountOptions}}{{with .Features}}<br>{{.}}{{end}}</td></tr>
{{end}}</table>
</body>
</html>
`))

type htmlPage struct {
	*Result
	Head         template.HTML
	VariantRows  []struct{ Name, Mkfs, Mount string }
	Headers      []string
	Labels       []string
	SummaryRows  []htmlSummaryRow
	Baseline     string
	ThresholdPct float64
	VerdictRows  []htmlVerdictRow
	Charts       []htmlChart
	Heatmaps     []htmlChart
	JournalSVG   template.HTML
	Explained    []*RunResult
	// The shares above thresholds.
	AboveBaseline string
	AboveHeaders  []string
	AboveRows     []htmlVerdictRow
}

type htmlSummaryRow struct {
	Variant string
	N       int
	Cells   []string
}

type htmlVerdictRow struct {
	Variant string
	Cells   []htmlVerdictCell
}

type htmlVerdictCell struct{ Text, Class, P, Reason string }

type htmlChart struct {
	Title string
	SVG   template.HTML
}

// WriteHTML writes res as one self-contained HTML page.
func WriteHTML(w io.Writer, res *Result) error {
	p := htmlPage{Result: res, Head: output.HTMLHead("kscope lab fs"), ThresholdPct: res.Threshold * 100}
	for _, v := range res.Variants {
		p.VariantRows = append(p.VariantRows, struct{ Name, Mkfs, Mount string }{
			v.Name, strings.Join(v.MkfsCommand("DEV"), " "), strings.Join(v.MountCommand("DEV", "DIR"), " ")})
	}
	for _, m := range Metrics {
		p.Headers = append(p.Headers, label(m, res))
		p.Labels = append(p.Labels, m.Label)
	}
	for _, s := range res.Summary {
		row := htmlSummaryRow{Variant: s.Variant, N: s.Runs}
		for _, m := range Metrics {
			row.Cells = append(row.Cells, meanCI(s.Metrics[m.Key]))
		}
		p.SummaryRows = append(p.SummaryRows, row)
	}
	for _, c := range res.Verdicts {
		p.Baseline = c.Baseline
		row := htmlVerdictRow{Variant: c.Variant}
		for _, r := range c.Rows {
			row.Cells = append(row.Cells, htmlVerdictCell{Text: verdictCell(r), Class: verdictClass(r.Verdict), P: fmt.Sprintf("%.3g", r.PAdjusted), Reason: r.Reason})
		}
		p.VerdictRows = append(p.VerdictRows, row)
	}
	if len(res.Summary) > 0 && len(res.Summary[0].Above) > 0 {
		p.AboveBaseline = res.Summary[0].Variant
		for _, a := range res.Summary[0].Above {
			p.AboveHeaders = append(p.AboveHeaders, fmt.Sprintf("> %g ms", a.AboveMs))
		}
		for _, s := range res.Summary {
			row := htmlVerdictRow{Variant: s.Variant}
			for _, a := range s.Above {
				v := aboveVerdict(res, s.Variant, a.AboveMs)
				row.Cells = append(row.Cells, htmlVerdictCell{Text: aboveCell(a, v), Class: verdictClass(v)})
			}
			p.AboveRows = append(p.AboveRows, row)
		}
	}
	for i, m := range Metrics {
		p.Charts = append(p.Charts, htmlChart{Title: label(m, res), SVG: ciChart(fmt.Sprintf("chart-%d", i), m, res.Summary)})
	}
	p.Heatmaps, p.JournalSVG = latencyCharts(res)
	for _, r := range res.Runs {
		if r.Explain != nil {
			p.Explained = append(p.Explained, r)
		}
	}
	return pageTmpl.Execute(w, p)
}

// verdictClass is a verdict's table cell class: green for better, red
// for worse.
func verdictClass(v string) string {
	switch v {
	case Better:
		return "better"
	case Worse:
		return "worse"
	}
	return ""
}

// ciChart draws one metric per variant: a bar to the mean, the 95%
// interval as a line with ticks, each trial as a dot.
func ciChart(id string, m Metric, sums []*Summary) template.HTML {
	const (
		width, labelW, rowH, right = 900, 150, 26, 90
		plotW                      = width - labelW - right
	)
	hi := 0.0
	for _, s := range sums {
		st := s.Metrics[m.Key]
		hi = math.Max(hi, st.Mean)
		if st.CI95 != nil {
			hi = math.Max(hi, st.Mean+*st.CI95)
		}
		for _, v := range st.Values {
			hi = math.Max(hi, v)
		}
	}
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	x := func(v float64) float64 { return labelW + math.Max(0, math.Min(v/hi, 1))*plotW }
	h := rowH*len(sums) + 22
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d">`, html.EscapeString(id), width, h)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	for i, s := range sums {
		st := s.Metrics[m.Key]
		y := float64(4 + i*rowH)
		mid := y + rowH/2 - 2
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, labelW-8, mid+4, html.EscapeString(s.Variant))
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.35"/>`,
			labelW, y+3, x(st.Mean)-labelW, rowH-10, colors[i%len(colors)])
		if st.CI95 != nil {
			lo, up := x(st.Mean-*st.CI95), x(st.Mean+*st.CI95)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5"/>`, lo, mid, up, mid)
			for _, xx := range []float64{lo, up} {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5"/>`, xx, mid-5, xx, mid+5)
			}
		}
		for _, v := range st.Values {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x(v), mid, colors[i%len(colors)])
		}
		text := num(st.Mean)
		if st.CI95 != nil {
			text += " ±" + num(*st.CI95)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%s %s</text>`, width-right+6, mid+4, html.EscapeString(text), html.EscapeString(m.Unit))
	}
	axisY := float64(4 + len(sums)*rowH + 2)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888"/>`, labelW, axisY, labelW+plotW, axisY)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, labelW+f*plotW, axisY+14, html.EscapeString(num(f*hi)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// latencyCharts are the page's heatmap per variant (from the runs' load
// results) and the journal commit distribution (nil without data).
func latencyCharts(res *Result) ([]htmlChart, template.HTML) {
	edges := res.BucketEdgesMs
	if len(edges) == 0 {
		edges = bucketEdgesMs(res.SLOMs)
	}
	var maps []htmlChart
	for i, v := range res.Variants {
		hm := produceHeatmap(v.Name, res.Runs, edges)
		if len(hm.Counts) == 0 {
			continue
		}
		title := v.Name
		if hm.Skipped > 0 || hm.Cut > 0 {
			title += fmt.Sprintf(" (%d seconds without a readable histogram, %d past %d s not drawn)", hm.Skipped, hm.Cut, maxHeatmapSeconds)
		}
		maps = append(maps, htmlChart{Title: title, SVG: hm.svg(fmt.Sprintf("heatmap-%d", i), res.SLOMs)})
	}
	var journal template.HTML
	if jd := journalDist(res); jd != nil {
		journal = jd.svg("journal-dist")
	}
	return maps, journal
}
