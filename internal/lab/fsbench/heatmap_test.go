package fsbench

import (
	"bytes"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// TestBuckets: the SLO is an edge of its own, and a latency on an edge
// belongs to the bucket above it.
func TestBuckets(t *testing.T) {
	edges := bucketEdgesMs(65)
	cases := []struct {
		ms    float64
		label string
	}{
		{0.3, "<1"},
		{1, "1–2"},
		{49.9, "20–50"},
		{50, "50–65"},
		{65, "65–100"},
		{99, "65–100"},
		{700, "0.5–1s"},
		{1500, "1–2s"},
		{5000, "≥5s"},
		{1e9, "≥5s"},
	}
	for _, c := range cases {
		if got := bucketLabel(edges, bucketOf(edges, c.ms)); got != c.label {
			t.Errorf("%g ms: bucket %q, want %q", c.ms, got, c.label)
		}
	}
	if n := len(bucketEdgesMs(50)); n != len(defaultEdgesMs) {
		t.Errorf("an SLO on an edge added one: %d edges", n)
	}
}

// heatmapResult is ext4 without and xfs with a 300 ms stall in second 9
// of each trial, their load results from comparetest, and journal
// commits of 6 ms on ext4 and 250 ms on xfs.
func heatmapResult(t *testing.T) *Result {
	t.Helper()
	vs, _ := ParseVariants("ext4,xfs")
	res := &Result{Variants: vs, Trials: 2, Workload: DefaultWorkload(), SLOMs: 65, Threshold: 0.05, Alpha: 0.05, BucketEdgesMs: bucketEdgesMs(65)}
	seed := uint64(7)
	for _, v := range []struct {
		name      string
		stall     bool
		journalMs int64
	}{{"ext4", false, 6}, {"xfs", true, 250}} {
		for _, r := range fakeRuns(v.name, 2, 40) {
			spec := comparetest.Spec{Seed: seed, Seconds: 12, Rate: 1000, MedianUs: 2000, Sigma: 0.3, PerSecond: 200}
			if v.stall {
				spec.Stalls = []comparetest.Stall{{Second: 9, Ms: 300}}
			}
			seed++
			r.Load = comparetest.Result(spec)
			h := hdrhistogram.New(1, histMaxNs, 3)
			for range 10 {
				_ = h.RecordValue(v.journalMs * 1e6)
			}
			r.JournalBuckets = make([]int64, len(res.BucketEdgesMs)+1)
			addToBuckets(r.JournalBuckets, res.BucketEdgesMs, h, 1e6)
			res.Runs = append(res.Runs, r)
		}
	}
	summarize(res)
	return res
}

// TestProduceHeatmap: each second's requests land in the buckets of their
// latency, summed over trials; the stall's requests are above the SLO in
// its second only; every request is counted once.
func TestProduceHeatmap(t *testing.T) {
	res := heatmapResult(t)
	edges := res.BucketEdgesMs
	slo := bucketOf(edges, 65)
	cases := []struct {
		variant        string
		aboveSLOSecond int // -1: none
	}{{"ext4", -1}, {"xfs", 9}}
	for _, c := range cases {
		hm := produceHeatmap(c.variant, res.Runs, edges)
		if len(hm.Counts) != 12 || hm.Skipped != 0 {
			t.Fatalf("%s: %d seconds, %d skipped", c.variant, len(hm.Counts), hm.Skipped)
		}
		var total, want int64
		for _, r := range res.Runs {
			if r.Variant == c.variant {
				want += r.Load.Latency[bench.LatencyService].Count
			}
		}
		for i, row := range hm.Counts {
			var above int64
			for k, n := range row {
				total += n
				if k >= slo {
					above += n
				}
			}
			if (above > 0) != (i == c.aboveSLOSecond) {
				t.Errorf("%s second %d: %d above the SLO", c.variant, i, above)
			}
		}
		if total != want {
			t.Errorf("%s: %d requests in the heatmap, %d in the results", c.variant, total, want)
		}
	}
	// A second whose histogram is damaged is counted as skipped.
	bad := fakeRuns("ext4", 1, 40)[0]
	bad.Load = comparetest.Result(comparetest.Spec{Seed: 1, Seconds: 3, Rate: 100, MedianUs: 2000, Sigma: 0.3})
	l := bad.Load.Series[1].Latency[bench.LatencyService]
	l.Histogram = "not base64!"
	bad.Load.Series[1].Latency[bench.LatencyService] = l
	if hm := produceHeatmap("ext4", []*RunResult{bad}, edges); hm.Skipped != 1 {
		t.Errorf("damaged second: %d skipped, want 1", hm.Skipped)
	}
}

// TestLatencyChartsInOutputs: the page has a heatmap per variant and the
// journal distribution, escaped and without script; the table has the
// journal commits by latency.
func TestLatencyChartsInOutputs(t *testing.T) {
	res := heatmapResult(t)
	var page bytes.Buffer
	if err := WriteHTML(&page, res); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	for _, want := range []string{`id="heatmap-0"`, `id="heatmap-1"`, `id="journal-dist"`, ">SLO 65 ms</text>", "Journal commit latency", "xfs (jbd2-commit, 20)"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "javascript:"} {
		if strings.Contains(h, bad) {
			t.Errorf("HTML has %q", bad)
		}
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Journal commits by latency", "5–10", "200–500"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	// A variant's name is escaped where it is drawn.
	hm := &heatmap{Variant: "<b>", Edges: bucketEdgesMs(65), Counts: [][]int64{make([]int64, 14)}}
	hm.Counts[0][3] = 1
	hm.Max = 1
	jd := &journalDistribution{Edges: hm.Edges, Variants: []string{"<b>"}, Kinds: []string{"<i>"}, Counts: hm.Counts}
	for _, svg := range []string{string(hm.svg("x", 65)), string(jd.svg("y"))} {
		if strings.Contains(svg, "<b>") || strings.Contains(svg, "<i>") {
			t.Errorf("unescaped: %s", svg)
		}
	}
}
