// Package compare decides whether two kscope bench runs (or two sets of
// trials) differ: for throughput, every latency percentile and the share
// of requests above a ladder of thresholds, the two values, the change,
// an interval and a verdict (regression, improvement or no change) that a
// CI job can act on. It also loads RESULT.json files, which it treats as
// untrusted. docs/compare.md has the reasoning; in short:
//
// # When is a difference real
//
// A verdict other than "no change" needs the change beyond
// Options.Threshold (default 5%: small differences do not matter even when
// they are certain) and the row's test significant at Options.Alpha after
// Holm's step-down adjustment over every test of the comparison (which
// keeps the chance of any false verdict at or below Alpha). Row.P is the
// raw p-value, Row.PAdjusted the one the verdict uses.
//
// Requests are not independent (one broker stall delays thousands in a
// row), so no test counts them as independent trials, and a regression
// can live in a few seconds, which a test of typical seconds cannot see.
// Each row has the test that suits it:
//
//	throughput, p50    two-sided Mann–Whitney U over per-second samples
//	                   (mannwhitney.go), the samples shifted the same way
//	p90 … p99.99       a bootstrap over whole seconds (two-stage with
//	                   trials), 95% interval of B−A (bootstrap.go)
//	> threshold        the share of requests above it: an exact test of
//	                   the two counts divided by the design effect of A's
//	                   slow requests clustering in time (tail.go)
//	max                shown, not tested
//
// The tail tests need the per-second histograms RESULT.json keeps and at
// least MinTailSeconds seconds a run; without them the tail rows fall back
// to Mann–Whitney over per-second p99 and max, with a warning.
//
// # Other checks
//
// Load verifies each latency histogram against the percentiles stored
// beside it and each per-second histogram against its count (a damaged
// file is an error), and Compare warns when the workloads or client
// configurations of the two runs differ, when a run was interrupted, lost
// or duplicated messages, or had produce errors.
package compare

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kscope-dev/kscope/internal/bench"
)

// Verdict is the outcome for one metric.
type Verdict string

// Verdicts.
const (
	Regression  Verdict = "regression"
	Improvement Verdict = "improvement"
	NoChange    Verdict = "no change"
)

// MinTailSeconds is the fewest seconds with latencies each run needs for
// the tail tests (bootstrap and exceedance): they estimate how the tail
// varies from the seconds of a run, and a handful of seconds says little
// about that.
const MinTailSeconds = 10

// Defaults of Options.
const (
	DefaultThreshold = 0.05
	DefaultAlpha     = 0.05
)

// Options tune the verdicts.
type Options struct {
	// Threshold is the smallest relative change that can be a verdict, as
	// a fraction (0.05 is 5%). Zero means DefaultThreshold; to judge by
	// significance alone use a tiny value such as 1e-12.
	Threshold float64
	// Alpha is the significance level of the test. Zero means
	// DefaultAlpha.
	Alpha float64
	// Rungs are the fixed thresholds of the exceedance ladder in µs,
	// besides A's p99 and p99.9 (nil: 10, 50, 100 and 500 ms and 1 s).
	Rungs []int64
	// Series limits the latency series compared (nil: every series).
	Series []string
}

// Row is one metric of a comparison.
type Row struct {
	// Metric is "throughput" or a latency series (bench.Latency*).
	Metric string `json:"metric"`
	// Stat is "msgs/s" or "MB/s" for throughput, else the percentile:
	// "p50", "p90", "p99", "p99.9", "p99.99" or "max".
	Stat string `json:"stat"`
	// Unit of A and B: "msgs/s", "MB/s" or "us".
	Unit string  `json:"unit"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	// ChangePct is (B−A)/A in percent; nil when A is 0.
	ChangePct *float64 `json:"change_pct"`
	// Method is the row's test: MethodMannWhitney, MethodBootstrap,
	// MethodExceedance, or MethodNone (the row is shown, not tested).
	Method string `json:"method"`
	// Sample says what the test ran on.
	Sample string `json:"sample"`
	// Test is the Mann–Whitney test's detail (MethodMannWhitney rows).
	Test MannWhitneyResult `json:"test"`
	// P is the row's raw p-value, whichever its test.
	P float64 `json:"p"`
	// Interval is the 95% bootstrap interval of B−A (MethodBootstrap
	// rows, in Unit).
	Interval *Interval `json:"interval,omitempty"`
	// Exceedance is what an exceedance row counted (MethodExceedance
	// rows, whose A and B are the shares above its threshold in %).
	Exceedance *Exceedance `json:"exceedance,omitempty"`
	// PAdjusted is the test's p-value adjusted for the other tests of
	// the comparison (Holm); Significant is PAdjusted < Alpha.
	PAdjusted   float64 `json:"p_adjusted"`
	Significant bool    `json:"significant"`
	Verdict     Verdict `json:"verdict"`
	// Reason says why a row with a change is "no change".
	Reason string `json:"reason,omitempty"`

	key string // the test's name in the Holm family (rows may share a test)
}

// Methods of Row.
const (
	MethodMannWhitney = "mann-whitney"
	MethodBootstrap   = "bootstrap"
	MethodExceedance  = "exceedance"
	MethodNone        = "none"
)

// Comparison is the result of Compare.
type Comparison struct {
	// NameA and NameB label the runs in output (the file names); Compare
	// leaves them empty.
	NameA     string  `json:"a"`
	NameB     string  `json:"b"`
	Threshold float64 `json:"threshold"`
	Alpha     float64 `json:"alpha"`
	Rows      []Row   `json:"rows"`
	// Warnings: the runs are not like for like (workload or client
	// config differs), or one of them is suspect (interrupted, lost
	// messages, produce errors).
	Warnings []string `json:"warnings"`
	// Notes: environment differences (often the point of the
	// comparison: another broker version, kernel or file system).
	Notes []string `json:"notes"`
}

// Regressions returns the rows whose verdict is a regression.
func (c *Comparison) Regressions() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Verdict == Regression {
			out = append(out, r)
		}
	}
	return out
}

// latencySeries is the order latency rows appear in.
var latencySeries = []string{bench.LatencyService, bench.LatencyResponse, bench.LatencyEndToEnd, bench.LatencySyncWait, bench.LatencyBrokerRTT}

// Compare compares run B against run A (the baseline).
func Compare(a, b *bench.Result, opts Options) (*Comparison, error) {
	if a == nil || b == nil {
		return nil, errors.New("compare: nil result")
	}
	return CompareTrials([]*bench.Result{a}, []*bench.Result{b}, opts)
}

// CompareTrials compares the trials of B against those of A, the
// baseline: several runs of one workload a side (`lab fs`). Throughput is
// the mean of the trials', latency percentiles are read from the trials'
// histograms merged, per-second samples are pooled, the exceedance tests
// count over all trials, and the bootstrap resamples trials before
// seconds. With one trial a side it is Compare.
func CompareTrials(as, bs []*bench.Result, opts Options) (*Comparison, error) {
	if len(as) == 0 || len(bs) == 0 || slices.Contains(as, nil) || slices.Contains(bs, nil) {
		return nil, errors.New("compare: no result")
	}
	if opts.Threshold == 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if !(opts.Threshold > 0) || math.IsInf(opts.Threshold, 0) {
		return nil, fmt.Errorf("compare: threshold %v: want a positive fraction", opts.Threshold)
	}
	if !(opts.Alpha > 0 && opts.Alpha < 1) {
		return nil, fmt.Errorf("compare: alpha %v: want (0, 1)", opts.Alpha)
	}
	cm := &comparer{as: as, bs: bs, rungs: opts.Rungs, ps: map[string]float64{}, mw: map[string]*MannWhitneyResult{},
		c: &Comparison{Threshold: opts.Threshold, Alpha: opts.Alpha, Warnings: []string{}, Notes: []string{}}}
	cm.throughput()
	for _, name := range seriesOrder(as[0], bs[0]) {
		if opts.Series != nil && !slices.Contains(opts.Series, name) {
			continue
		}
		if err := cm.series(name); err != nil {
			return nil, err
		}
	}
	c := cm.c
	// The verdicts, once every p-value of the family is known.
	adjusted := Holm(cm.ps)
	for i := range c.Rows {
		r := &c.Rows[i]
		switch r.Method {
		case MethodNone:
			r.PAdjusted, r.Verdict = 1, NoChange
		case MethodExceedance:
			r.PAdjusted = adjusted[r.key]
			judgeTail(opts, r)
		default:
			r.PAdjusted = adjusted[r.key]
			judge(opts, r, r.Unit != "us") // by unit: a series could be named "throughput"
		}
	}

	c.Warnings = append(c.Warnings, configWarnings(as[0], bs[0])...)
	for i, r := range as {
		c.Warnings = append(c.Warnings, runWarnings(trialName("A", i, len(as)), r)...)
	}
	for i, r := range bs {
		c.Warnings = append(c.Warnings, runWarnings(trialName("B", i, len(bs)), r)...)
	}
	if d := diffFields(as[0].Environment, bs[0].Environment); len(d) > 0 {
		c.Notes = append(c.Notes, "environment differs: "+strings.Join(d, "; "))
	}
	return c, nil
}

func trialName(side string, i, n int) string {
	if n == 1 {
		return side
	}
	return fmt.Sprintf("%s trial %d", side, i+1)
}

// comparer builds a comparison's rows and tests. Rows that stand in for
// one another (the per-second stand-ins) share a test.
type comparer struct {
	as, bs []*bench.Result
	rungs  []int64 // fixed rungs of the ladder (nil: the defaults)
	c      *Comparison
	ps     map[string]float64 // raw p-value of each test, by key: Holm's family
	mw     map[string]*MannWhitneyResult
}

func (cm *comparer) mannWhitney(row *Row, sa, sb func() []float64) {
	row.Method, row.key = MethodMannWhitney, row.Metric+"\x00"+row.Sample
	if cm.mw[row.key] == nil {
		r := MannWhitney(sa(), sb())
		cm.mw[row.key] = &r
		cm.ps[row.key] = r.P
	}
	row.Test, row.P = *cm.mw[row.key], cm.mw[row.key].P
}

func (cm *comparer) throughput() {
	for _, m := range []struct {
		stat  string
		total func(bench.Totals) float64
		get   func(bench.Second) float64
	}{
		{"msgs/s", func(t bench.Totals) float64 { return t.MsgsPerSec }, func(s bench.Second) float64 { return s.MsgsPerSec }},
		{"MB/s", func(t bench.Totals) float64 { return t.MBPerSec }, func(s bench.Second) float64 { return s.MBPerSec }},
	} {
		row := Row{Metric: "throughput", Stat: m.stat, Unit: m.stat, A: meanTotal(cm.as, m.total), B: meanTotal(cm.bs, m.total), Sample: "per-second " + m.stat}
		cm.mannWhitney(&row, func() []float64 { return perSecond(cm.as, m.get) }, func() []float64 { return perSecond(cm.bs, m.get) })
		cm.c.Rows = append(cm.c.Rows, row)
	}
}

func meanTotal(rs []*bench.Result, f func(bench.Totals) float64) float64 {
	var sum float64
	for _, r := range rs {
		sum += f(r.Totals)
	}
	return sum / float64(len(rs))
}

func perSecond(rs []*bench.Result, f func(bench.Second) float64) []float64 {
	var out []float64
	for _, r := range rs {
		for _, s := range r.Series {
			out = append(out, f(s))
		}
	}
	return out
}

// series adds one latency series' rows: percentiles, then the
// exceedance ladder.
func (cm *comparer) series(name string) error {
	la, err := mergedLatency(cm.as, name)
	if err != nil {
		return fmt.Errorf("compare: A: %w", err)
	}
	lb, err := mergedLatency(cm.bs, name)
	if err != nil {
		return fmt.Errorf("compare: B: %w", err)
	}
	switch {
	case present(la) && present(lb):
	case present(la):
		cm.c.Warnings = append(cm.c.Warnings, fmt.Sprintf("latency %q is only in A", name))
		return nil
	case present(lb):
		cm.c.Warnings = append(cm.c.Warnings, fmt.Sprintf("latency %q is only in B", name))
		return nil
	default:
		return nil
	}
	ta, okA, err := trialSeconds(cm.as, name)
	if err != nil {
		return fmt.Errorf("compare: A: %w", err)
	}
	tb, okB, err := trialSeconds(cm.bs, name)
	if err != nil {
		return fmt.Errorf("compare: B: %w", err)
	}
	tails := okA && okB && minSeconds(ta) >= MinTailSeconds && minSeconds(tb) >= MinTailSeconds
	switch {
	case !okA || !okB:
		cm.c.Warnings = append(cm.c.Warnings, fmt.Sprintf("latency %q: no per-second histograms in every run (a result of an older kscope): its tail is compared by per-second p99 and max, which cannot see a stall of a few seconds", name))
	case !tails:
		cm.c.Warnings = append(cm.c.Warnings, fmt.Sprintf("latency %q: fewer than %d seconds with latencies in a run: too few to resample; its tail is compared by per-second p99 and max", name, MinTailSeconds))
	}
	var boots []quantileBoot
	if tails {
		boots = bootstrapQuantiles(blockTrials(ta), blockTrials(tb), bootQuantiles)
	}
	for _, q := range quantiles {
		row := Row{Metric: name, Stat: q.name, Unit: "us", A: float64(q.get(la)), B: float64(q.get(lb))}
		switch {
		case q.name == "p50" || !tails:
			pick := standIn(q.name)
			row.Sample = "per-second " + pick.name
			cm.mannWhitney(&row, func() []float64 { return latencySample(cm.as, name, pick.get) }, func() []float64 { return latencySample(cm.bs, name, pick.get) })
		case q.name == "max":
			row.Method, row.Sample, row.P = MethodNone, "not tested: one value (see > rows)", 1
		default:
			bt := boots[bootIndex(q.q)]
			row.Method, row.key, row.P = MethodBootstrap, name+"\x00"+q.name, bt.p
			row.Interval = &Interval{Value: row.B - row.A, Lo: bt.lo, Hi: bt.hi}
			row.Sample = fmt.Sprintf("bootstrap, %d/%d s", bt.nA, bt.nB)
			if len(ta) > 1 || len(tb) > 1 {
				row.Sample = fmt.Sprintf("bootstrap, %d/%d trials, %d/%d s", len(ta), len(tb), bt.nA, bt.nB)
			}
			cm.ps[row.key] = bt.p
		}
		cm.c.Rows = append(cm.c.Rows, row)
	}
	if !tails {
		return nil
	}
	secsA, secsB := slices.Concat(ta...), slices.Concat(tb...)
	for _, t := range exceedances(secsA, secsB, ladder(la, cm.rungs)) {
		ex := t.ex
		if ex.CountA == 0 && ex.CountB == 0 {
			continue // nothing above it in either run: nothing to say
		}
		row := Row{Metric: name, Stat: rungStat(ex), Unit: "%", A: ex.ShareA.Value * 100, B: ex.ShareB.Value * 100,
			Method: MethodExceedance, Sample: exceedanceSample(ex, len(secsA), len(secsB)), P: t.p, Exceedance: &ex}
		row.key = name + "\x00" + row.Stat
		cm.ps[row.key] = t.p
		cm.c.Rows = append(cm.c.Rows, row)
	}
	return nil
}

// mergedLatency is one series over all trials: the trial's own with one,
// the histograms merged with several.
func mergedLatency(rs []*bench.Result, name string) (*bench.Latency, error) {
	if len(rs) == 1 {
		return rs[0].Latency[name], nil
	}
	return MergeLatency(rs, name)
}

// trialSeconds is one series' per-second histograms of each trial.
func trialSeconds(rs []*bench.Result, name string) ([][]second, bool, error) {
	out := make([][]second, 0, len(rs))
	for i, r := range rs {
		secs, ok, err := secondsOf(r, name)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", trialName("run", i, len(rs)), err)
		}
		if !ok {
			return nil, false, nil
		}
		out = append(out, secs)
	}
	return out, true, nil
}

func minSeconds(t [][]second) int {
	n := math.MaxInt
	for _, secs := range t {
		n = min(n, len(secs))
	}
	return n
}

// blockTrials makes each trial's seconds into resampling blocks.
func blockTrials(t [][]second) trials {
	out := make(trials, len(t))
	for i, secs := range t {
		out[i] = blocksOf(secs, bootstrapMaxBlocks)
	}
	return out
}

func present(l *bench.Latency) bool { return l != nil && l.Count > 0 }

// seriesOrder lists the latency series of either run: the known ones in
// their order, then any others sorted.
func seriesOrder(a, b *bench.Result) []string {
	seen := map[string]bool{}
	out := []string{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range latencySeries {
		if a.Latency[n] != nil || b.Latency[n] != nil {
			add(n)
		}
	}
	for _, r := range []*bench.Result{a, b} {
		for _, n := range sortedKeys(r.Latency) {
			add(n)
		}
	}
	return out
}

type perSecondStat struct {
	name string
	get  func(bench.SecondLatency) float64
}

// bootQuantiles are the quantiles the bootstrap rows test, ascending.
var bootQuantiles = []float64{90, 99, 99.9, 99.99}

func bootIndex(q float64) int {
	for i, b := range bootQuantiles {
		if b == q {
			return i
		}
	}
	panic(fmt.Sprintf("compare: no bootstrap of p%v", q))
}

// standIn maps an overall percentile to the per-second statistic tested
// for it (see the package comment).
func standIn(stat string) perSecondStat {
	switch stat {
	case "p50":
		return perSecondStat{"p50", func(s bench.SecondLatency) float64 { return float64(s.P50Us) }}
	case "p90", "p99":
		return perSecondStat{"p99", func(s bench.SecondLatency) float64 { return float64(s.P99Us) }}
	}
	return perSecondStat{"max", func(s bench.SecondLatency) float64 { return float64(s.MaxUs) }}
}

func latencySample(rs []*bench.Result, series string, get func(bench.SecondLatency) float64) []float64 {
	var out []float64
	for _, r := range rs {
		for _, s := range r.Series {
			if l, ok := s.Latency[series]; ok && l.Count > 0 {
				out = append(out, get(l))
			}
		}
	}
	return out
}

// Holm adjusts a family of p-values, by name, by Holm's step-down
// method. A comparison runs a dozen or more tests; at 0.05 each, two
// identical runs would get some verdict in a good part of comparisons (a
// flaky CI job). Holm keeps the chance of any false verdict at or below
// alpha, and unlike Bonferroni costs little power when some differences
// are real.
func Holm(p map[string]float64) map[string]float64 {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if pi, pj := p[keys[i]], p[keys[j]]; pi != pj {
			return pi < pj
		}
		return keys[i] < keys[j]
	})
	out := make(map[string]float64, len(keys))
	m, running := len(keys), 0.0
	for i, k := range keys {
		running = max(running, min(1, float64(m-i)*p[k]))
		out[k] = running
	}
	return out
}

// judge fills in the verdict of row from its change and its adjusted
// p-value. higherIsBetter is true for throughput, false for latency.
func judge(opts Options, row *Row, higherIsBetter bool) {
	row.Significant = row.PAdjusted < opts.Alpha
	row.Verdict = NoChange
	if row.A == 0 {
		if row.B != 0 {
			row.Reason = "A is 0"
		}
		return
	}
	change := (row.B - row.A) / row.A
	if pct := change * 100; !math.IsInf(pct, 0) && !math.IsNaN(pct) {
		row.ChangePct = &pct
	}
	switch {
	case row.B == row.A:
		return
	case math.Abs(change) <= opts.Threshold:
		row.Reason = "within threshold"
		return
	case row.Method == MethodMannWhitney && (row.Test.NA == 0 || row.Test.NB == 0):
		row.Reason = "no per-second samples"
		return
	case !row.Significant:
		row.Reason = "not significant"
		return
	case row.Method == MethodMannWhitney && (change > 0) != (row.Test.U > float64(row.Test.NA*row.Test.NB)/2):
		// Significant, but the seconds moved the other way: the overall
		// value was decided by a few outliers.
		row.Reason = "per-second samples shift the other way"
		return
	case row.Method == MethodBootstrap && (change > 0) != (row.Interval.Lo+row.Interval.Hi > 0):
		row.Reason = "resamples shift the other way"
		return
	}
	if (change > 0) == higherIsBetter {
		row.Verdict = Improvement
	} else {
		row.Verdict = Regression
	}
}

func configWarnings(a, b *bench.Result) []string {
	var out []string
	if d := diffFields(a.Workload, b.Workload); len(d) > 0 {
		out = append(out, "workloads differ: "+strings.Join(d, "; "))
	}
	if d := diffFields(a.Client, b.Client); len(d) > 0 {
		out = append(out, "client configs differ: "+strings.Join(d, "; "))
	}
	return out
}

func runWarnings(name string, r *bench.Result) []string {
	var out []string
	if r.Interrupted {
		out = append(out, name+" was interrupted")
	}
	t := r.Totals
	if t.Lost > 0 || t.Duplicated > 0 {
		out = append(out, fmt.Sprintf("%s lost %d and duplicated %d messages", name, t.Lost, t.Duplicated))
	}
	if t.Failed > 0 {
		out = append(out, fmt.Sprintf("%s had %d produce errors", name, t.Failed))
	}
	return out
}

// diffFields lists the fields (by JSON name) of two structs of the same
// type that differ, as "name: A → B". Reflection keeps it right as fields
// are added to the schema.
func diffFields(a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if reflect.DeepEqual(x, y) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, fmt.Sprintf("%s: %s → %s", name, show(x), show(y)))
	}
	return out
}

// show formats a value from a file; strings are quoted (which also escapes
// control characters) and long values cut.
func show(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = strconv.Quote(v)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		s = "[" + strings.Join(q, " ") + "]"
	default:
		s = fmt.Sprint(v)
	}
	const maxShow = 80
	if len(s) > maxShow {
		cut := maxShow
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
