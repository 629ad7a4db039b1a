package compare

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// base is a 60-second run at 2000 msgs/s with log-normal latencies
// (median 2 ms, p99 about 6.4 ms).
func base(seed uint64) comparetest.Spec {
	return comparetest.Spec{Seed: seed, Seconds: 60, Rate: 2000, Target: 2000, RateNoise: 0.02, MedianUs: 2000, Sigma: 0.5}
}

func row(t *testing.T, c *Comparison, metric, stat string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.Metric == metric && r.Stat == stat {
			return r
		}
	}
	t.Fatalf("no row %s %s", metric, stat)
	return Row{}
}

func countMethod(c *Comparison, method string) int {
	n := 0
	for _, r := range c.Rows {
		if r.Method == method {
			n++
		}
	}
	return n
}

func TestCompare(t *testing.T) {
	// B's latency: sigma raised so that p99 is 30% higher while the median
	// stays: e^(2.326·Δσ) = 1.3.
	slowTail := base(2)
	slowTail.Rate = 1600
	slowTail.Sigma = 0.5 + math.Log(1.3)/2.326

	small := base(2)
	small.Rate = 1960
	small.RateNoise = 0.005
	smallA := base(1)
	smallA.RateNoise = 0.005

	tinyA, tinyB := base(1), base(2)
	tinyA.Seconds, tinyB.Seconds = 3, 3
	tinyA.RateNoise, tinyB.RateNoise = 0.3, 0.3
	tinyB.Rate = 1400
	tinyB.Sigma = 1.0

	faster := base(2)
	faster.Rate = 2600

	type want struct {
		metric, stat string
		verdict      Verdict
		significant  *bool
	}
	yes, no := true, false
	tests := []struct {
		name        string
		a, b        comparetest.Spec
		want        []want
		onlyListed  bool // every row not listed must be "no change"
		regressions bool
		warnings    int
	}{
		{name: "identical workloads", a: base(1), b: base(2), onlyListed: true},
		{name: "20% less throughput, 30% higher p99", a: base(1), b: slowTail, regressions: true, want: []want{
			{"throughput", "msgs/s", Regression, &yes},
			{"throughput", "MB/s", Regression, &yes},
			{bench.LatencyService, "p99", Regression, &yes},
			{bench.LatencyResponse, "p99", Regression, &yes},
			{bench.LatencyService, "p50", NoChange, nil},
		}},
		{name: "2% less throughput: significant, below threshold", a: smallA, b: small, onlyListed: true, want: []want{
			{"throughput", "msgs/s", NoChange, &yes},
		}},
		// Too few seconds for the tail tests: a warning per series.
		{name: "big difference in 3 noisy seconds", a: tinyA, b: tinyB, onlyListed: true, warnings: 2, want: []want{
			{"throughput", "msgs/s", NoChange, &no},
			{bench.LatencyService, "p99", NoChange, &no},
		}},
		{name: "more throughput is an improvement", a: base(1), b: faster, want: []want{
			{"throughput", "msgs/s", Improvement, &yes},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(comparetest.Result(tc.a), comparetest.Result(tc.b), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.Rows) - countMethod(c, MethodExceedance); n != 2+2*6 {
				t.Fatalf("%d rows besides the exceedance rows, want 14", n)
			}
			listed := map[string]bool{}
			for _, w := range tc.want {
				listed[w.metric+" "+w.stat] = true
				r := row(t, c, w.metric, w.stat)
				if r.Verdict != w.verdict {
					t.Errorf("%s %s: %s (change %v, p %.4g, reason %q), want %s", w.metric, w.stat, r.Verdict, deref(r.ChangePct), r.Test.P, r.Reason, w.verdict)
				}
				if w.significant != nil && r.Significant != *w.significant {
					t.Errorf("%s %s: significant %v (p %.4g), want %v", w.metric, w.stat, r.Significant, r.Test.P, *w.significant)
				}
			}
			if tc.onlyListed {
				for _, r := range c.Rows {
					if !listed[r.Metric+" "+r.Stat] && r.Verdict != NoChange {
						t.Errorf("%s %s: %s (change %.1f%%, p %.4g), want no change", r.Metric, r.Stat, r.Verdict, deref(r.ChangePct), r.Test.P)
					}
				}
			}
			if got := len(c.Regressions()) > 0; got != tc.regressions {
				t.Errorf("regressions %v, want %v", got, tc.regressions)
			}
			if len(c.Warnings) != tc.warnings {
				t.Errorf("warnings: %q, want %d", c.Warnings, tc.warnings)
			}
			if _, err := json.Marshal(c); err != nil {
				t.Error(err)
			}
		})
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestCompareFalseVerdicts: comparisons of two runs of one workload
// seldom get any verdict: every row needs a change beyond the threshold
// and a p-value, adjusted for the comparison's other tests, below alpha.
func TestCompareFalseVerdicts(t *testing.T) {
	const pairs = 40
	flagged := 0
	for seed := uint64(100); seed < 100+2*pairs; seed += 2 {
		c, err := Compare(comparetest.Result(base(seed)), comparetest.Result(base(seed+1)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for _, r := range c.Rows {
			if r.Verdict != NoChange {
				t.Logf("seed %d: %s %s %s: change %.1f%%, p %.3g, adjusted %.3g", seed, r.Metric, r.Stat, r.Verdict, deref(r.ChangePct), r.Test.P, r.PAdjusted)
				hit = true
			}
		}
		if hit {
			flagged++
		}
	}
	// Alpha 0.05 allows about 2 of 40; 4 leaves room for chance.
	if flagged > 4 {
		t.Errorf("%d of %d comparisons of identical workloads got a verdict", flagged, pairs)
	}
}

func TestCompareWarnings(t *testing.T) {
	a := comparetest.Result(base(1))
	bs := base(2)
	w := a.Workload
	w.Rate = 1000
	w.Topics = []string{"other\x1b[2J"}
	bs.Workload = &w
	cl := a.Client
	cl.Compression = "zstd"
	bs.Client = &cl
	bs.Series = []string{bench.LatencyService, bench.LatencyEndToEnd}
	b := comparetest.Result(bs)
	b.Interrupted = true
	b.Totals.Lost = 3
	b.Environment.BrokerVersion = "3.9.0"

	c, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(c.Warnings, "\n")
	for _, want := range []string{
		`workloads differ: topics: ["bench"] → ["other\x1b[2J"]; rate: 2000 → 1000`,
		`client configs differ: compression: "none" → "zstd"`,
		`latency "response" is only in A`,
		`latency "end_to_end" is only in B`,
		"B was interrupted",
		"B lost 3 and duplicated 0 messages",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "\x1b") {
		t.Error("a control character from the file reached a warning")
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], `broker_version: "4.1.2" → "3.9.0"`) {
		t.Errorf("notes: %q", c.Notes)
	}
	for _, r := range c.Rows {
		if r.Metric != "throughput" && r.Metric != bench.LatencyService {
			t.Errorf("row %s %s: want throughput and service only", r.Metric, r.Stat)
		}
	}
	if n := len(c.Rows) - countMethod(c, MethodExceedance); n != 2+6 {
		t.Errorf("%d rows besides the exceedance rows, want 8", n)
	}
}

func TestCompareEdges(t *testing.T) {
	a := comparetest.Result(base(1))
	if _, err := Compare(a, nil, Options{}); err == nil {
		t.Error("nil result accepted")
	}
	for _, o := range []Options{{Threshold: -1}, {Alpha: 1}, {Alpha: -0.1}, {Threshold: math.Inf(1)}, {Threshold: math.NaN()}} {
		if _, err := Compare(a, a, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	// A result with no series and zero totals: every row is no change, no
	// change is undefined, nothing panics.
	empty := &bench.Result{Version: bench.ResultVersion, Latency: map[string]*bench.Latency{
		bench.LatencyService: {Count: 1, P50Us: 0}}}
	c, err := Compare(empty, a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Verdict != NoChange || r.ChangePct != nil {
			t.Errorf("%s %s: %s, change %v", r.Metric, r.Stat, r.Verdict, r.ChangePct)
		}
	}
	// Huge values: the change overflows to infinity and is left out.
	big := comparetest.Result(base(3))
	big.Totals.MsgsPerSec = 1e308
	small := comparetest.Result(base(4))
	small.Totals.MsgsPerSec = 1e-308
	c, err = Compare(small, big, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, c, "throughput", "msgs/s"); r.ChangePct != nil {
		t.Errorf("infinite change kept: %v", *r.ChangePct)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Error(err)
	}
}

// TestCompareDirectionMismatch: a significant shift of the seconds
// against the direction of the overall change is no verdict.
func TestCompareDirectionMismatch(t *testing.T) {
	a := comparetest.Result(base(1))
	b := comparetest.Result(base(2))
	for i := range b.Series {
		b.Series[i].MsgsPerSec *= 1.2 // the seconds say faster
	}
	b.Totals.MsgsPerSec = a.Totals.MsgsPerSec * 0.8 // the total says slower
	c, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, c, "throughput", "msgs/s")
	if r.Verdict != NoChange || !r.Significant || !strings.Contains(r.Reason, "other way") {
		t.Errorf("%+v", r)
	}
}
