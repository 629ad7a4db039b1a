package fsbench

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/event"
)

// defaultEdgesMs are the latency bucket edges of the heatmaps and the
// journal commit distributions: a 1-2-5 scale from 1 ms to 5 s, to which
// the SLO is added so that "above the SLO" is a row of its own.
var defaultEdgesMs = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}

// maxHeatmapSeconds bounds a heatmap's columns (a --workload may ask for
// hours); longer runs are drawn up to it and the rest counted as cut.
const maxHeatmapSeconds = 3600

// bucketEdgesMs are the bucket edges of a result with this SLO.
func bucketEdgesMs(sloMs float64) []float64 {
	edges := slices.Clone(defaultEdgesMs)
	if sloMs > 0 && !math.IsInf(sloMs, 0) && !slices.Contains(edges, sloMs) {
		edges = append(edges, sloMs)
		slices.Sort(edges)
	}
	return edges
}

// bucketOf is the bucket of a latency: 0 below the first edge, i when
// edges[i-1] <= ms < edges[i], len(edges) from the last edge up.
func bucketOf(edges []float64, ms float64) int {
	i, found := slices.BinarySearch(edges, ms)
	if found {
		return i + 1
	}
	return i
}

// bucketLabel names bucket i of edges, in ms below a second and in s
// from one up, short enough for a chart's column: "<1", "50–65",
// "0.5–1s", "≥5s".
func bucketLabel(edges []float64, i int) string {
	switch {
	case i == 0:
		return "<" + edgeLabel(edges[0], edges[0] >= 1000)
	case i == len(edges):
		return "≥" + edgeLabel(edges[i-1], edges[i-1] >= 1000)
	}
	if edges[i] < 1000 {
		return edgeLabel(edges[i-1], false) + "–" + edgeLabel(edges[i], false)
	}
	return strings.TrimSuffix(edgeLabel(edges[i-1], true), "s") + "–" + edgeLabel(edges[i], true)
}

// edgeLabel is an edge in ms, or in seconds with an "s" when inSeconds.
func edgeLabel(ms float64, inSeconds bool) string {
	if inSeconds {
		return strconv.FormatFloat(ms/1000, 'g', 4, 64) + "s"
	}
	return strconv.FormatFloat(ms, 'g', 4, 64)
}

// addToBuckets adds h's counts to counts, by the lowest equivalent value
// of each of h's buckets (as countAbove counts), h's values scaled to ms
// by perMs.
func addToBuckets(counts []int64, edges []float64, h *hdrhistogram.Histogram, perMs float64) {
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			counts[bucketOf(edges, float64(b.From)/perMs)] += b.Count
		}
	}
}

// heatmap is one variant's produce latency over the measured part: per
// second (summed over the variant's trials, second i of each), the number
// of requests in each latency bucket.
type heatmap struct {
	Variant string
	Edges   []float64
	Counts  [][]int64 // [second][bucket]
	Max     int64
	// Skipped counts the seconds whose histogram could not be read (a
	// result written before they were kept), Cut those past
	// maxHeatmapSeconds.
	Skipped, Cut int
}

// produceHeatmap builds variant's heatmap from its runs' load results.
func produceHeatmap(variant string, runs []*RunResult, edges []float64) *heatmap {
	hm := &heatmap{Variant: variant, Edges: edges}
	for _, r := range runs {
		if r.Variant != variant || r.Load == nil {
			continue
		}
		for i, s := range r.Load.Series {
			if i >= maxHeatmapSeconds {
				hm.Cut += len(r.Load.Series) - i
				break
			}
			if !hm.addSecond(i, s) {
				hm.Skipped++
			}
		}
	}
	for _, row := range hm.Counts {
		for _, c := range row {
			hm.Max = max(hm.Max, c)
		}
	}
	return hm
}

// addSecond adds second i's service latency histogram; false when the
// second has one that cannot be read.
func (hm *heatmap) addSecond(i int, s bench.Second) bool {
	l, ok := s.Latency[bench.LatencyService]
	if !ok || l.Count == 0 {
		return true // nothing acknowledged that second
	}
	if l.Histogram == "" {
		return false
	}
	h, err := bench.DecodeHistogram(l.Histogram)
	if err != nil {
		return false
	}
	for len(hm.Counts) <= i {
		hm.Counts = append(hm.Counts, make([]int64, len(hm.Edges)+1))
	}
	addToBuckets(hm.Counts[i], hm.Edges, h, 1000) // µs
	return true
}

// heatColour is a count's colour: white for none, then from pale yellow
// to dark red on a log scale of the count against the map's largest.
func heatColour(c, maxCount int64) string {
	if c <= 0 || maxCount <= 0 {
		return "#ffffff"
	}
	f := math.Log1p(float64(c)) / math.Log1p(float64(maxCount))
	lerp := func(a, b float64) int { return int(math.Round(a + (b-a)*f)) }
	return fmt.Sprintf("#%02x%02x%02x", lerp(255, 128), lerp(237, 0), lerp(160, 38))
}

// inkOn is the text colour readable on heatColour(c, maxCount).
func inkOn(c, maxCount int64) string {
	if c > 0 && maxCount > 0 && math.Log1p(float64(c))/math.Log1p(float64(maxCount)) > 0.55 {
		return "#ffffff"
	}
	return "#222222"
}

// svg draws the heatmap: seconds along x, latency buckets up y (the
// slowest at the top), each cell's colour its count, with a tooltip; the
// edge at the SLO is a dashed line.
func (hm *heatmap) svg(id string, sloMs float64) template.HTML {
	const (
		width, labelW, right, cellH, top = 900, 80, 20, 16, 6
		plotW                            = width - labelW - right
	)
	rows := len(hm.Edges) + 1
	secs := max(len(hm.Counts), 1)
	cellW := float64(plotW) / float64(secs)
	h := top + rows*cellH + 34
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d">`, html.EscapeString(id), width, h)
	y := func(bucket int) int { return top + (rows-1-bucket)*cellH }
	for k := range rows {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y(k)+cellH-4, html.EscapeString(bucketLabel(hm.Edges, k)))
	}
	for i, row := range hm.Counts {
		for k, c := range row {
			if c == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.2f" height="%d" fill="%s"><title>second %d, %s: %d</title></rect>`,
				labelW+float64(i)*cellW, y(k), cellW, cellH, heatColour(c, hm.Max), i, html.EscapeString(bucketLabel(hm.Edges, k)), c)
		}
	}
	if k := slices.Index(hm.Edges, sloMs); k >= 0 {
		ly := y(k+1) + cellH
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1f77b4" stroke-width="1.5" stroke-dasharray="6 3"/>`, labelW, ly, labelW+plotW, ly)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1f77b4">SLO %s ms</text>`, labelW+plotW-90, ly-3, html.EscapeString(edgeLabel(sloMs, false)))
	}
	axisY := top + rows*cellH
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, labelW, axisY, labelW+plotW, axisY)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%ds</text>`, labelW+f*float64(plotW), axisY+14, int(math.Round(f*float64(secs))))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">produce latency (ms) per second of the measured part, summed over trials; darkest: %d requests</text>`, labelW, axisY+30, hm.Max)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// journalDistribution is every variant's journal commit latencies: per
// variant (a row), the commits in each latency bucket, over its trials. A
// variant with ext4 fast commits has a second row for them, of kind
// ext4_fast_commit.
type journalDistribution struct {
	Edges    []float64
	Variants []string
	Kinds    []string
	Counts   [][]int64 // [row][bucket]
}

// journalDist sums the runs' journal buckets per variant, in res's
// variant order, and their fast commits' where they have some; nil when
// no run has commits.
func journalDist(res *Result) *journalDistribution {
	edges := res.BucketEdgesMs
	if len(edges) == 0 {
		return nil
	}
	jd := &journalDistribution{Edges: edges}
	seen := false
	for _, v := range res.Variants {
		row, kind, counted := sumBuckets(res, v.Name, len(edges)+1, func(r *RunResult) ([]int64, string) { return r.JournalBuckets, r.JournalKind })
		jd.Variants, jd.Kinds, jd.Counts = append(jd.Variants, v.Name), append(jd.Kinds, kind), append(jd.Counts, row)
		seen = seen || counted
		fast, _, fastCounted := sumBuckets(res, v.Name, len(edges)+1, func(r *RunResult) ([]int64, string) { return r.FastCommitBuckets, "" })
		if fastCounted {
			jd.Variants, jd.Kinds, jd.Counts = append(jd.Variants, v.Name), append(jd.Kinds, event.KindExt4FastCommit), append(jd.Counts, fast)
			seen = true
		}
	}
	if !seen {
		return nil
	}
	return jd
}

// sumBuckets sums over variant's runs the buckets of, with the kind, of
// each; counted says some bucket counted something.
func sumBuckets(res *Result, variant string, n int, of func(*RunResult) ([]int64, string)) (row []int64, kind string, counted bool) {
	row = make([]int64, n)
	for _, r := range res.Runs {
		buckets, k := of(r)
		if r.Variant != variant || len(buckets) != n {
			continue
		}
		kind = k
		for b, c := range buckets {
			row[b] += c
			counted = counted || c > 0
		}
	}
	return row, kind, counted
}

// svg draws the distribution as a grid: a row per variant, a column per
// latency bucket, each cell shaded by its share of the variant's commits
// and labelled with it.
func (jd *journalDistribution) svg(id string) template.HTML {
	const (
		width, labelW, right, rowH, top = 900, 230, 10, 24, 18
		plotW                           = width - labelW - right
	)
	cols := len(jd.Edges) + 1
	cellW := float64(plotW) / float64(cols)
	h := top + len(jd.Variants)*rowH + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d">`, html.EscapeString(id), width, h)
	for k := range cols {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" style="font-size:11px">%s</text>`, labelW+(float64(k)+0.5)*cellW, top-5, html.EscapeString(bucketLabel(jd.Edges, k)))
	}
	for i, row := range jd.Counts {
		var total int64
		for _, c := range row {
			total += c
		}
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s (%s, %d)</text>`, labelW-6, y+rowH-8,
			html.EscapeString(jd.Variants[i]), html.EscapeString(orDash(jd.Kinds[i])), total)
		for k, c := range row {
			if c == 0 {
				continue
			}
			share := float64(c) / float64(total)
			permille := int64(math.Round(share * 1000))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s: %d commits</title></rect>`,
				labelW+float64(k)*cellW, y, cellW-1, rowH-2, heatColour(permille, 1000),
				html.EscapeString(jd.Variants[i]), html.EscapeString(bucketLabel(jd.Edges, k)), c)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" style="fill:%s">%s%%</text>`,
				labelW+(float64(k)+0.5)*cellW, y+rowH-8, inkOn(permille, 1000), html.EscapeString(num(share*100)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
