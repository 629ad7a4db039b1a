package fsbench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
)

// Metric is one figure of a run, how it is summarised over trials and
// which per-second sample its verdict is tested on.
type Metric struct {
	Key   string // as in RunResult's JSON
	Label string // column header
	Unit  string
	// Better is +1 when higher is better, -1 when lower is, 0 when
	// neither (the verdict then says "higher" or "lower").
	Better int
	// Sample names the per-second sample of the test.
	Sample string
	// Latency is the produce latency statistic of internal/bench/compare
	// whose row gives this metric's verdict ("p99", or "slo" for the
	// share above the SLO); empty: the metric is tested here.
	Latency string
	value   func(*RunResult) float64
	perSec  func(SecondSample) (float64, bool)
}

func opt(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// Metrics are the figures compared, in table order. The produce latency
// metrics get their verdicts from internal/bench/compare over the
// trials' load results (docs/compare.md); the others from a Mann–Whitney
// test on per-second samples. The Sample of a latency metric is the
// stand-in used only for results without per-second histograms.
var Metrics = []Metric{
	{Key: "msgs_per_sec", Label: "msg/s", Unit: "msg/s", Better: +1, Sample: "per-second msgs/s",
		value: func(r *RunResult) float64 { return r.MsgsPerSec }, perSec: func(s SecondSample) (float64, bool) { return s.MsgsPerSec, true }},
	{Key: "produce_p50_ms", Latency: "p50", Label: "p50", Unit: "ms", Better: -1, Sample: "per-second p50",
		value: func(r *RunResult) float64 { return r.P50Ms }, perSec: func(s SecondSample) (float64, bool) { return opt(s.P50Ms) }},
	{Key: "produce_p99_ms", Latency: "p99", Label: "p99", Unit: "ms", Better: -1, Sample: "per-second p99",
		value: func(r *RunResult) float64 { return r.P99Ms }, perSec: func(s SecondSample) (float64, bool) { return opt(s.P99Ms) }},
	{Key: "produce_p999_ms", Latency: "p99.9", Label: "p99.9", Unit: "ms", Better: -1, Sample: "per-second max",
		value: func(r *RunResult) float64 { return r.P999Ms }, perSec: func(s SecondSample) (float64, bool) { return opt(s.MaxMs) }},
	{Key: "produce_max_ms", Latency: "max", Label: "max", Unit: "ms", Better: -1, Sample: "per-second max",
		value: func(r *RunResult) float64 { return r.MaxMs }, perSec: func(s SecondSample) (float64, bool) { return opt(s.MaxMs) }},
	{Key: "over_slo_pct", Latency: "slo", Label: "over SLO", Unit: "%", Better: -1, Sample: "per-second max",
		value: func(r *RunResult) float64 { return r.OverSLOPct }, perSec: func(s SecondSample) (float64, bool) { return opt(s.MaxMs) }},
	{Key: "write_p99_ms", Label: "write p99", Unit: "ms", Better: -1, Sample: "per-second write p99",
		value: func(r *RunResult) float64 { return r.WriteP99Ms }, perSec: func(s SecondSample) (float64, bool) { return opt(s.WriteP99Ms) }},
	{Key: "journal_p99_ms", Label: "journal p99", Unit: "ms", Better: -1, Sample: "per-second journal p99",
		value: func(r *RunResult) float64 { return r.JournalP99Ms }, perSec: func(s SecondSample) (float64, bool) { return opt(s.JournalP99Ms) }},
	{Key: "journal_per_sec", Label: "commits/s", Unit: "/s", Better: 0, Sample: "per-second journal commits",
		value: func(r *RunResult) float64 { return r.JournalPerSec }, perSec: func(s SecondSample) (float64, bool) { return float64(s.JournalCommits), true }},
}

// Stat is one metric of one variant over its trials.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// CI95 is the half-width of the 95% confidence interval of the mean
	// (Student's t with N-1 degrees of freedom); null with one trial.
	CI95   *float64  `json:"ci95"`
	Values []float64 `json:"values"` // per trial
}

// Summary is one variant over its trials.
type Summary struct {
	Variant string          `json:"variant"`
	Runs    int             `json:"runs"`
	Metrics map[string]Stat `json:"metrics"`
	// Above is the share of produce requests above each of
	// AboveThresholdsMs and the SLO, over all trials.
	Above []AboveShare `json:"above,omitempty"`
}

// AboveShare is a variant's produce requests (service latency) above one
// threshold, over its trials.
type AboveShare struct {
	AboveMs float64 `json:"above_ms"`
	Count   int64   `json:"count"`
	Total   int64   `json:"total"`
	// Share is the fraction above, with a 95% interval from a bootstrap
	// over the trials and then the seconds of each (a bad trial widens
	// it).
	Share compare.Interval `json:"share"`
}

// Comparison is one variant against the first.
type Comparison struct {
	Variant  string        `json:"variant"`
	Baseline string        `json:"baseline"`
	Rows     []*VerdictRow `json:"rows"`
	// Latency is internal/bench/compare's comparison of the produce
	// latency over the trials: every percentile and every threshold's
	// share, with intervals (the produce latency Rows come from it).
	Latency *compare.Comparison `json:"latency,omitempty"`
}

// Verdicts.
const (
	Better   = "better"
	Worse    = "worse"
	Higher   = "higher"
	Lower    = "lower"
	NoChange = "no change"
	// NotTested: compare has no test for the metric here (a maximum is
	// one value; a share at or below the baseline's p99 is the p99's
	// question): the row shows the values and their change, no verdict.
	NotTested = "not tested"
)

// VerdictRow is one metric's verdict.
type VerdictRow struct {
	Metric string  `json:"metric"`
	A      float64 `json:"a"` // the baseline's mean over trials
	B      float64 `json:"b"`
	// ChangePct is (B−A)/A in percent; null when A is 0.
	ChangePct *float64 `json:"change_pct"`
	Sample    string   `json:"sample"`
	// Test is the Mann–Whitney test's detail, when the row's test is
	// one (a produce latency row tested otherwise leaves it zero).
	Test compare.MannWhitneyResult `json:"test"`
	// PAdjusted is Holm's adjustment over the comparison's tests.
	PAdjusted float64 `json:"p_adjusted"`
	Verdict   string  `json:"verdict"`
	Reason    string  `json:"reason,omitempty"`
}

// summarize fills res.Summary and res.Verdicts from res.Runs.
func summarize(res *Result) {
	byVariant := map[string][]*RunResult{}
	for _, r := range res.Runs {
		byVariant[r.Variant] = append(byVariant[r.Variant], r)
	}
	res.Summary, res.Verdicts = nil, nil
	var base string
	for _, v := range res.Variants {
		runs := byVariant[v.Name]
		if len(runs) == 0 {
			continue
		}
		s := &Summary{Variant: v.Name, Runs: len(runs), Metrics: map[string]Stat{}}
		for _, m := range Metrics {
			vals := make([]float64, len(runs))
			for i, r := range runs {
				vals[i] = m.value(r)
			}
			s.Metrics[m.Key] = stat(vals)
		}
		if above, err := aboveShares(runs, time.Duration(res.SLOMs*float64(time.Millisecond))); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: shares above thresholds: %v", v.Name, err))
		} else {
			s.Above = above
		}
		res.Summary = append(res.Summary, s)
		if base == "" {
			base = v.Name
			continue
		}
		c, err := judgeAll(base, byVariant[base], v.Name, runs, res.Threshold, res.Alpha, time.Duration(res.SLOMs*float64(time.Millisecond)))
		if err != nil {
			res.Warnings = append(res.Warnings, err.Error())
			continue
		}
		res.Verdicts = append(res.Verdicts, c)
	}
	for _, r := range res.Runs {
		if r.TraceLost > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s trial %d: the kernel dropped %d traced events (write and journal figures undercount)", r.Variant, r.Trial, r.TraceLost))
		}
		if r.Failed > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s trial %d: %d produce errors", r.Variant, r.Trial, r.Failed))
		}
	}
	if res.Trials < 2 {
		res.Warnings = append(res.Warnings, "one trial per variant: no confidence intervals, and the verdicts rest on the seconds of a single run of each")
	}
}

// aboveShares counts a variant's produce requests above each threshold
// over its trials (nil, nil when a run has no load result).
func aboveShares(runs []*RunResult, slo time.Duration) ([]AboveShare, error) {
	ls := loads(runs)
	if ls == nil {
		return nil, nil
	}
	ts := aboveThresholdsUs(slo)
	shares, err := compare.ShareIntervals(ls, bench.LatencyService, ts)
	if err != nil {
		return nil, err
	}
	out := make([]AboveShare, len(ts))
	for i, t := range ts {
		out[i] = AboveShare{AboveMs: float64(t) / 1000, Count: shares[i].Above, Total: shares[i].Total, Share: shares[i].Fraction}
	}
	return out, nil
}

// stat is the mean and 95% confidence interval of vals.
func stat(vals []float64) Stat {
	s := Stat{N: len(vals), Values: vals}
	if s.N == 0 {
		return s
	}
	for _, v := range vals {
		s.Mean += v
	}
	s.Mean /= float64(s.N)
	if s.N < 2 {
		return s
	}
	var ss float64
	for _, v := range vals {
		ss += (v - s.Mean) * (v - s.Mean)
	}
	sd := math.Sqrt(ss / float64(s.N-1))
	ci := tQuantile975(s.N-1) * sd / math.Sqrt(float64(s.N))
	s.CI95 = &ci
	return s
}

// t975 is Student's t 0.975 quantile for 1..30 degrees of freedom.
var t975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom: the table up to 30, then the first terms of its expansion
// around the normal quantile (error below 0.001).
func tQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	const z = 1.959964
	d := float64(df)
	return z + (z*z*z+z)/(4*d) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*d*d)
}

// judgeAll compares runs of variant b against those of the baseline a,
// metric by metric. Produce latency (the Metrics with Latency set) is
// compared by internal/bench/compare over the trials' load results:
// percentiles from the trials' histograms merged, the tail by a bootstrap
// over trials and seconds and by the share of requests above thresholds
// (docs/compare.md). The other metrics: the change between the means over
// trials, and a Mann–Whitney test on the per-second samples of all trials
// pooled, Holm-adjusted over the distinct samples tested. The two
// families of tests split alpha between them (Bonferroni), so the chance
// of any false verdict for a variant stays at alpha.
func judgeAll(a string, runsA []*RunResult, b string, runsB []*RunResult, threshold, alpha float64, slo time.Duration) (*Comparison, error) {
	c := &Comparison{Variant: b, Baseline: a}
	familyAlpha := alpha
	la, lb := loads(runsA), loads(runsB)
	if la != nil && lb != nil {
		familyAlpha = alpha / 2
		lat, err := compare.CompareTrials(la, lb, compare.Options{Threshold: threshold, Alpha: familyAlpha,
			Rungs: aboveThresholdsUs(slo), Series: []string{bench.LatencyService}})
		if err != nil {
			return nil, fmt.Errorf("%s against %s: %w", b, a, err)
		}
		c.Latency = lat
	}
	tests := map[string]compare.MannWhitneyResult{}
	pooled := func(runs []*RunResult, m Metric) []float64 {
		var out []float64
		for _, r := range runs {
			for _, s := range r.Seconds {
				if v, ok := m.perSec(s); ok {
					out = append(out, v)
				}
			}
		}
		return out
	}
	for _, m := range Metrics {
		if m.Latency != "" && c.Latency != nil {
			c.Rows = append(c.Rows, latencyVerdict(c.Latency, m, slo, stat(values(runsA, m)).Mean, stat(values(runsB, m)).Mean))
			continue
		}
		row := &VerdictRow{Metric: m.Key, Sample: m.Sample, A: stat(values(runsA, m)).Mean, B: stat(values(runsB, m)).Mean}
		if _, ok := tests[m.Sample]; !ok {
			tests[m.Sample] = compare.MannWhitney(pooled(runsA, m), pooled(runsB, m))
		}
		row.Test = tests[m.Sample]
		c.Rows = append(c.Rows, row)
	}
	adj := holm(tests)
	for i, row := range c.Rows {
		if Metrics[i].Latency != "" && c.Latency != nil {
			continue
		}
		row.PAdjusted = adj[row.Sample]
		judge(row, Metrics[i].Better, threshold, familyAlpha)
	}
	return c, nil
}

// loads are the runs' load results; nil when a run has none (a result
// file of an older kscope).
func loads(runs []*RunResult) []*bench.Result {
	out := make([]*bench.Result, len(runs))
	for i, r := range runs {
		if r.Load == nil {
			return nil
		}
		out[i] = r.Load
	}
	return out
}

// AboveThresholdsMs are the thresholds whose shares lab fs reports, as
// Allegro counted produce requests above 65 ms; the SLO joins them.
var AboveThresholdsMs = []float64{10, 50, 100}

func aboveThresholdsUs(slo time.Duration) []int64 {
	var out []int64
	for _, ms := range AboveThresholdsMs {
		out = append(out, int64(ms*1000))
	}
	if us := slo.Microseconds(); us > 0 && !slices.Contains(out, us) {
		out = append(out, us)
		slices.Sort(out)
	}
	return out
}

// latencyVerdict is metric m's verdict taken from compare's row of the
// service latency ("slo": the share above the SLO). meanA and meanB are
// the variants' means over trials, shown when compare has no row (it
// tests no share at or below the baseline's p99): the row then says
// what the shares were, untested, rather than 0 and 0 -- on a slow
// baseline (ext4 on an emulated hdd-busy device, 64% of its requests
// over 65 ms) that row is the seed's headline figure.
func latencyVerdict(lat *compare.Comparison, m Metric, slo time.Duration, meanA, meanB float64) *VerdictRow {
	stat := m.Latency
	if stat == "slo" {
		stat = "> " + strconv.FormatFloat(float64(slo.Microseconds())/1000, 'f', -1, 64) + " ms"
	}
	row := &VerdictRow{Metric: m.Key, Verdict: NoChange}
	var cr *compare.Row
	for i := range lat.Rows {
		if r := &lat.Rows[i]; r.Metric == bench.LatencyService && r.Stat == stat {
			cr = r
		}
	}
	if cr == nil {
		row.A, row.B = meanA, meanB
		if meanA != 0 {
			pct := (meanB - meanA) / math.Abs(meanA) * 100
			row.ChangePct = &pct
		}
		row.Sample, row.Reason = "shares above", "not tested: at or below the baseline's p99, or none above in either"
		if meanA != meanB { // none above in either is no change
			row.Verdict = NotTested
		}
		return row
	}
	row.A, row.B, row.Sample = cr.A, cr.B, cr.Sample
	if cr.Unit == "us" {
		row.A, row.B = cr.A/1000, cr.B/1000
	}
	row.ChangePct, row.PAdjusted, row.Reason, row.Test = cr.ChangePct, cr.PAdjusted, cr.Reason, cr.Test
	if cr.Method == compare.MethodNone {
		row.Verdict, row.Reason = NotTested, cmp.Or(cr.Reason, cr.Sample)
		if row.ChangePct == nil && row.A != 0 {
			pct := (row.B - row.A) / math.Abs(row.A) * 100
			row.ChangePct = &pct
		}
		return row
	}
	switch cr.Verdict {
	case compare.Regression:
		row.Verdict = Worse
	case compare.Improvement:
		row.Verdict = Better
	}
	return row
}

func values(runs []*RunResult, m Metric) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = m.value(r)
	}
	return out
}

// holm adjusts the tests' p-values as internal/bench/compare does.
func holm(tests map[string]compare.MannWhitneyResult) map[string]float64 {
	p := make(map[string]float64, len(tests))
	for k, t := range tests {
		p[k] = t.P
	}
	return compare.Holm(p)
}

// judge sets row's verdict, by compare's rule: a change beyond the
// threshold, significant after adjustment, and the per-second samples
// shifted the same way as the means.
func judge(row *VerdictRow, better int, threshold, alpha float64) {
	row.Verdict = NoChange
	var change float64
	switch {
	case row.A == row.B:
		return
	case row.A == 0:
		change = math.Inf(1)
		if row.B < 0 {
			change = math.Inf(-1)
		}
	default:
		change = (row.B - row.A) / math.Abs(row.A)
		pct := change * 100
		row.ChangePct = &pct
	}
	switch {
	case math.Abs(change) <= threshold:
		row.Reason = "within threshold"
		return
	case row.Test.NA == 0 || row.Test.NB == 0:
		row.Reason = "no per-second samples"
		return
	case row.PAdjusted >= alpha:
		row.Reason = "not significant"
		return
	case (change > 0) != (row.Test.U > float64(row.Test.NA*row.Test.NB)/2):
		row.Reason = "per-second samples shift the other way"
		return
	}
	switch {
	case better == 0 && change > 0:
		row.Verdict = Higher
	case better == 0:
		row.Verdict = Lower
	case (change > 0) == (better > 0):
		row.Verdict = Better
	default:
		row.Verdict = Worse
	}
}
