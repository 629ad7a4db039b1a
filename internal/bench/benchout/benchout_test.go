package benchout

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

func spec(seed uint64) comparetest.Spec {
	return comparetest.Spec{Seed: seed, Seconds: 30, Rate: 2000, Target: 2000, RateNoise: 0.02, MedianUs: 2000, Sigma: 0.5}
}

func regressed(t *testing.T) *compare.Comparison {
	t.Helper()
	b := spec(2)
	b.Rate = 1600
	b.Sigma = 0.5 + math.Log(1.3)/2.326
	c, err := compare.Compare(comparetest.Result(spec(1)), comparetest.Result(b), compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.NameA, c.NameB = "base.json", "new\x1b[31m.json"
	return c
}

func TestComparisonTable(t *testing.T) {
	c := regressed(t)
	c.Warnings = append(c.Warnings, "evil \x1b]0;title\x07 warning")
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c, "table"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"A (baseline): base.json",
		`B:            new\x1b[31m.json`,
		"METRIC", "VERDICT",
		"regression",
		"-19.9%",
		"per-second p50 (30/30)",
		"bootstrap, 30/30 s",
		"> 10 ms",
		"% reqs",
		"] pp",
		"ms",
		"regressions: throughput msgs/s, throughput MB/s, service p90, service p99, service p99.9",
		`warning: evil \x1b]0;title\x07 warning`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters reached the output")
	}
	// Columns line up: every table row has VERDICT's column at one offset.
	lines := strings.Split(out, "\n")
	col := -1
	for _, l := range lines {
		if i := strings.Index(l, "VERDICT"); i >= 0 {
			col = i
		}
	}
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "throughput") || strings.HasPrefix(l, "service") || strings.HasPrefix(l, "response") {
			n++
			if len(l) < col || l[col-2:col] != "  " {
				t.Errorf("misaligned: %q", l)
			}
		}
	}
	if n != len(c.Rows) {
		t.Errorf("%d rows, want %d", n, len(c.Rows))
	}
}

func TestComparisonJSON(t *testing.T) {
	c := regressed(t)
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c, "json"); err != nil {
		t.Fatal(err)
	}
	var back compare.Comparison
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(c.Rows) || len(back.Regressions()) != len(c.Regressions()) || back.NameB != c.NameB {
		t.Errorf("JSON round trip lost rows")
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Error("raw escape in JSON")
	}
	if err := WriteComparison(&buf, c, "csv"); err == nil {
		t.Error("csv accepted")
	}
}

func TestNoRegressionLine(t *testing.T) {
	c, err := compare.Compare(comparetest.Result(spec(1)), comparetest.Result(spec(2)), compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, c, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), "\nno regression\n") || !strings.Contains(buf.String(), "A (baseline): A") {
		t.Errorf("%s", buf.String())
	}
}

func TestReport(t *testing.T) {
	a := comparetest.Result(spec(1))
	bs := spec(2)
	bs.Series = []string{bench.LatencyService, bench.LatencySyncWait}
	b := comparetest.Result(bs)
	b.Workload.Sync = true
	b.Workload.Topics = []string{"t\x1b[2Jx", strings.Repeat("long", 30)}
	b.Interrupted = true
	b.Totals.Lost = 2
	var buf bytes.Buffer
	if err := WriteReport(&buf, []Run{{"a.json", a}, {"b\n.json", b}}, ReportOptions{Merged: true}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"run", "a.json", `b\x0a.json`, "merged",
		"mode", "async", "sync",
		"interrupted",
		`t\x1b[2Jx,longlong`, "...",
		"service p99 (ms)", "sync_wait p99.99 (ms)", "response max (ms)",
		"service count", "6000", "12000", // per run and merged
		"client cpu/msg (us)", "2.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b") || strings.Contains(out, "b\n") {
		t.Error("control characters reached the output")
	}
	// Sums in the merged column; a series missing from a run is "-".
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "lost") && !strings.Contains(l, "2") {
			t.Errorf("lost row: %q", l)
		}
		if strings.HasPrefix(l, "response p50") && strings.Count(l, "-") != 1 {
			t.Errorf("response is only in run 1 (and merged): %q", l)
		}
	}
	// One run, no merged column.
	buf.Reset()
	if err := WriteReport(&buf, []Run{{"a.json", a}}, ReportOptions{Merged: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "merged") || strings.Contains(buf.String(), "interrupted") {
		t.Errorf("single run:\n%s", buf.String())
	}
}

// The timeline draws each series with a line per run; a stall in one run
// reaches the chart's top decade; names from files are escaped.
func TestTimeline(t *testing.T) {
	a := comparetest.Result(spec(1))
	bs := spec(2)
	bs.Stalls = []comparetest.Stall{{Second: 10, Ms: 1000}}
	b := comparetest.Result(bs)
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, []Run{{"a.json", a}, {"<b>&.json", b}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"Content-Security-Policy", "<h2>service latency (ms)</h2>", "<h2>response latency (ms)</h2>", "&lt;b&gt;&amp;.json", ">1000<"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	// Two series, two runs, a p50 and a p99 line each.
	if n := strings.Count(out, "<polyline"); n != 2*2*2 {
		t.Errorf("%d lines, want 8", n)
	}
	for _, bad := range []string{"<b>", "<script", "http://", "https://"} {
		if strings.Contains(out, bad) {
			t.Errorf("timeline has %q", bad)
		}
	}
}
