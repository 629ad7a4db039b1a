package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kscope-dev/kscope/internal/bench"
)

// Exceedance is what an exceedance row measured: how many requests of
// each run were above a threshold, their shares with 95% intervals, and
// the design effect the test divided the counts by.
type Exceedance struct {
	// AboveUs is the threshold in µs; Rung names where it came from
	// ("A's p99", "A's p99.9" or "fixed").
	AboveUs int64  `json:"above_us"`
	Rung    string `json:"rung"`
	CountA  int64  `json:"count_a"`
	CountB  int64  `json:"count_b"`
	TotalA  int64  `json:"total_a"`
	TotalB  int64  `json:"total_b"`
	// ShareA and ShareB are the fractions above, each with its 95%
	// interval (Wilson, on the effective counts).
	ShareA Interval `json:"share_a"`
	ShareB Interval `json:"share_b"`
	// Diff is ShareB − ShareA with its 95% interval (normal, with the
	// variance inflated by the design effect): the effect's size.
	Diff Interval `json:"diff"`
	// DesignEffect is how much the clustering of A's slow requests in
	// time inflates the variance of a count over what independent
	// requests would have (1: none); the test divides both counts by it.
	DesignEffect float64 `json:"design_effect"`
}

// Interval is a point estimate and its 95% interval.
type Interval struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Thresholds of the exceedance ladder, besides A's p99 and p99.9.
var fixedRungsUs = []int64{10_000, 50_000, 100_000, 500_000, 1_000_000}

// minClusterCount is the fewest of A's requests above a threshold from
// which the design effect is estimated there.
const minClusterCount = 10

type rung struct {
	us   int64
	name string // "A's p99", "A's p99.9", "fixed"
}

// ladder is the thresholds of one series: A's p99 and p99.9, and each
// fixed rung (fixedRungsUs when nil) above A's p99 (below it, a rung is
// in the body of A's distribution, which the p50 test and the quantile
// rows cover). A rung equal to one already on the ladder is left out.
func ladder(a *bench.Latency, fixed []int64) []rung {
	if fixed == nil {
		fixed = fixedRungsUs
	}
	out := []rung{{a.P99Us, "A's p99"}}
	if a.P999Us > a.P99Us {
		out = append(out, rung{a.P999Us, "A's p99.9"})
	}
	for _, t := range fixed {
		if t > a.P99Us && t != a.P999Us && !slices.ContainsFunc(out, func(r rung) bool { return r.us == t }) {
			out = append(out, rung{t, "fixed"})
		}
	}
	// Ascending, so that the design effect can be carried up the ladder.
	slices.SortStableFunc(out, func(a, b rung) int { return cmp.Compare(a.us, b.us) })
	return out
}

// exceedanceTest is one rung's test.
type exceedanceTest struct {
	ex Exceedance
	p  float64
}

// exceedances tests every rung of the ladder: are B's requests above it a
// larger or smaller share than A's?
//
// Requests are not independent: one stall delays thousands in a row, so
// counting them as independent trials would call almost any difference
// significant. Within a run, the variance of a count above a threshold is
// estimated from how the count varies from second to second (the
// ratio-estimator variance of cluster sampling, a second being the
// cluster), and its ratio to the variance independent requests would
// give is the design effect D (Kish). Under the hypothesis that B is A,
// B's slow requests cluster like A's, so D is A's: estimated at the rung
// where A has at least minClusterCount requests above, and carried up to
// higher rungs as the largest seen below them (deeper tails are made by
// longer stalls, which cluster more, never less). Both counts are divided
// by D (Rao and Scott's correction), and the effective counts are
// compared by the exact conditional test of two Poisson counts: given
// their sum, B's is Binomial(sum, N_B/(N_A+N_B)) when B's rate equals
// A's. The test is conservative for shares that are not small (the
// binomial is wider than the hypergeometric), which the ladder's rungs,
// at A's p99 and above, are not.
func exceedances(a, b []second, rungs []rung) []exceedanceTest {
	na, nb := totals(a), totals(b)
	out := make([]exceedanceTest, 0, len(rungs))
	d := 1.0
	for _, r := range rungs {
		xa, xb := countAbove(a, r.us), countAbove(b, r.us)
		if xa >= minClusterCount {
			d = max(d, designEffect(a, r.us, float64(xa), float64(na)))
		}
		ex := Exceedance{AboveUs: r.us, Rung: r.name, CountA: xa, CountB: xb, TotalA: na, TotalB: nb, DesignEffect: d}
		ex.ShareA = share(xa, na, d)
		ex.ShareB = share(xb, nb, d)
		ex.Diff = shareDiff(ex.ShareA.Value, ex.ShareB.Value, na, nb, d)
		p := 1.0
		if na > 0 && nb > 0 {
			ea, eb := float64(xa)/d, float64(xb)/d
			p = exactBinomialTest(eb, ea+eb, float64(nb)/float64(na+nb))
		}
		out = append(out, exceedanceTest{ex, p})
	}
	return out
}

func totals(secs []second) int64 {
	var n int64
	for _, s := range secs {
		n += s.total()
	}
	return n
}

func countAbove(secs []second, t int64) int64 {
	var n int64
	for _, s := range secs {
		n += s.above(t)
	}
	return n
}

// designEffect is the variance of the share above t over the seconds of a
// run, as the ratio estimator of cluster sampling estimates it, divided by
// the binomial variance of x out of n independent requests; at least 1.
func designEffect(secs []second, t int64, x, n float64) float64 {
	m := float64(len(secs))
	p := x / n
	if m < 2 || p <= 0 || p >= 1 {
		return 1
	}
	var ss float64
	for _, s := range secs {
		r := float64(s.above(t)) - p*float64(s.total())
		ss += r * r
	}
	clustered := m / (m - 1) * ss / (n * n)
	independent := p * (1 - p) / n
	return max(1, clustered/independent)
}

// share is x/n with its 95% Wilson interval on the effective counts.
func share(x, n int64, d float64) Interval {
	if n == 0 {
		return Interval{}
	}
	lo, hi := wilson(float64(x)/d, float64(n)/d, 1.959964)
	return Interval{Value: float64(x) / float64(n), Lo: lo, Hi: hi}
}

// shareDiff is pb − pa with its 95% interval: pb − pa ± 1.96·√(D·(pa(1−pa)/na
// + pb(1−pb)/nb)).
func shareDiff(pa, pb float64, na, nb int64, d float64) Interval {
	if na == 0 || nb == 0 {
		return Interval{}
	}
	half := 1.959964 * math.Sqrt(d*(pa*(1-pa)/float64(na)+pb*(1-pb)/float64(nb)))
	return Interval{Value: pb - pa, Lo: pb - pa - half, Hi: pb - pa + half}
}

// rungStat is an exceedance row's Stat: "> 100 ms", or "> 8.19 ms (A's p99)".
func rungStat(r Exceedance) string {
	s := "> " + strconv.FormatFloat(float64(r.AboveUs)/1000, 'f', -1, 64) + " ms"
	if r.Rung != "fixed" {
		s += " (" + r.Rung + ")"
	}
	return s
}

// judgeTail fills in an exceedance row's verdict: a regression when more
// of B's requests are above the threshold, significantly (after Holm) and
// by more than the threshold's relative change (any share above none is
// beyond it); an improvement the other way.
func judgeTail(opts Options, row *Row) {
	ex := row.Exceedance
	row.Significant = row.PAdjusted < opts.Alpha
	row.Verdict = NoChange
	pa, pb := ex.ShareA.Value, ex.ShareB.Value
	if pa > 0 {
		if c := (pb - pa) / pa * 100; !math.IsInf(c, 0) && !math.IsNaN(c) {
			row.ChangePct = &c
		}
	}
	switch {
	case pa == pb:
		return
	case pa > 0 && math.Abs(pb-pa)/pa <= opts.Threshold:
		row.Reason = "within threshold"
		return
	case ex.TotalA == 0 || ex.TotalB == 0:
		row.Reason = "no requests"
		return
	case !row.Significant:
		row.Reason = "not significant"
		return
	}
	if pb > pa {
		row.Verdict = Regression
	} else {
		row.Verdict = Improvement
	}
}

// exceedanceSample describes what an exceedance row tested on.
func exceedanceSample(ex Exceedance, secsA, secsB int) string {
	return fmt.Sprintf("exact, D %.1f, %d/%d s", ex.DesignEffect, secsA, secsB)
}
