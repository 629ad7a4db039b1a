package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// tailBase is a 20-second run at 2000 msgs/s, 400 latencies sampled a
// second, median 2 ms and p99 about 6.4 ms.
func tailBase(seed uint64) comparetest.Spec {
	return comparetest.Spec{Seed: seed, Seconds: 20, Rate: 2000, RateNoise: 0.02, MedianUs: 2000, Sigma: 0.5, PerSecond: 400}
}

// gcPauses gives a run the stalls of a healthy broker: in each second,
// with probability 0.15, a pause of 20 to 60 ms.
func gcPauses(seed uint64) []comparetest.Stall {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []comparetest.Stall
	for s := range 20 {
		if rng.Float64() < 0.15 {
			out = append(out, comparetest.Stall{Second: s, Ms: 20 + 40*rng.Float64()})
		}
	}
	return out
}

// The cases: a broker stopped for 1 s three times within 12 s,
// and once for 500 ms, are regressions named by the tail rows; the
// per-second tests alone saw neither. The same run without stalls is no
// change.
func TestStallsAreTailRegressions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stalls     []comparetest.Stall
		regression bool
	}{
		{"none", nil, false},
		{"1 s three times", []comparetest.Stall{{Second: 5, Ms: 1000}, {Second: 9, Ms: 1000}, {Second: 13, Ms: 1000}}, true},
		{"500 ms once", []comparetest.Stall{{Second: 8, Ms: 500}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tailBase(1)
			a.Stalls = gcPauses(1)
			b := tailBase(2)
			b.Stalls = append(gcPauses(2), tc.stalls...)
			c, err := Compare(comparetest.Result(a), comparetest.Result(b), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var tail []string
			for _, r := range c.Regressions() {
				if r.Method != MethodExceedance && r.Method != MethodBootstrap {
					t.Errorf("%s %s: a regression by %s, want only tail rows", r.Metric, r.Stat, r.Method)
				}
				tail = append(tail, r.Metric+" "+r.Stat)
			}
			t.Logf("regressions: %s", strings.Join(tail, ", "))
			if got := len(tail) > 0; got != tc.regression {
				t.Errorf("regression %v, want %v", got, tc.regression)
			}
			if !tc.regression {
				return
			}
			// The rung above the stall's reach in A has nothing; B's share
			// there is the stall's.
			r := row(t, c, bench.LatencyService, "> 100 ms")
			if r.Verdict != Regression || r.Exceedance.CountA != 0 || r.Exceedance.CountB == 0 {
				t.Errorf("service > 100 ms: %s, %d → %d requests (p %.3g, D %.1f)", r.Verdict, r.Exceedance.CountA, r.Exceedance.CountB, r.PAdjusted, r.Exceedance.DesignEffect)
			}
			// The old per-second test of the maximum could not see it.
			old := MannWhitney(latencySample([]*bench.Result{comparetest.Result(a)}, bench.LatencyService, standIn("max").get), latencySample([]*bench.Result{comparetest.Result(b)}, bench.LatencyService, standIn("max").get))
			t.Logf("per-second max, Mann-Whitney: p %.3g", old.P)
		})
	}
}

// Same-workload pairs, each run with its own healthy pauses (slow
// requests clustered in time, as on a real broker): few comparisons may
// find a regression. Treating requests as independent, most would.
func TestSameWorkloadWithPausesFalsePositives(t *testing.T) {
	const pairs = 40
	flagged, naive := 0, 0
	for i := range uint64(pairs) {
		sa, sb := tailBase(1000+2*i), tailBase(1001+2*i)
		sa.Stalls, sb.Stalls = gcPauses(1000+2*i), gcPauses(1001+2*i)
		a, b := comparetest.Result(sa), comparetest.Result(sb)
		c, err := Compare(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if regs := c.Regressions(); len(regs) > 0 {
			flagged++
			for _, r := range regs {
				t.Logf("pair %d: %s %s: %.3g → %.3g, p %.3g adjusted", i, r.Metric, r.Stat, r.A, r.B, r.PAdjusted)
			}
		}
		// The same exceedance tests without the design effect.
		for _, r := range c.Rows {
			if ex := r.Exceedance; ex != nil {
				p := exactBinomialTest(float64(ex.CountB), float64(ex.CountA+ex.CountB), float64(ex.TotalB)/float64(ex.TotalA+ex.TotalB))
				if p < 0.05/float64(len(c.Rows)) && ex.ShareB.Value > ex.ShareA.Value*(1+DefaultThreshold) {
					naive++
					break
				}
			}
		}
	}
	t.Logf("%d of %d same-workload pairs flagged; %d with requests taken as independent", flagged, pairs, naive)
	// Alpha 0.05 allows about 2 of 40; 4 leaves room for chance.
	if flagged > 4 {
		t.Errorf("%d of %d same-workload comparisons found a regression", flagged, pairs)
	}
	// The known "yes" of the null: without the design effect the clustered
	// pauses must look significant, or this test could not fail.
	if naive <= 4 {
		t.Errorf("only %d of %d pairs flagged with requests taken as independent: the pauses do not cluster enough to test the design effect", naive, pairs)
	}
}

func TestExactBinomial(t *testing.T) {
	for _, tc := range []struct {
		x, n, p, want float64
	}{
		{3, 3, 0.5, 0.25},        // 2·(1/2)^3
		{0, 10, 0.5, 2.0 / 1024}, // 2·(1/2)^10
		{5, 10, 0.5, 1},
		{10, 20, 0.5, 1},
		{0, 0, 0.5, 1},
	} {
		if got := exactBinomialTest(tc.x, tc.n, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("exactBinomialTest(%v, %v, %v) = %v, want %v", tc.x, tc.n, tc.p, got, tc.want)
		}
	}
	// P(X ≥ 2) for Binomial(5, 0.3) = 1 − 0.7^5 − 5·0.3·0.7^4.
	if got, want := binomialUpper(2, 5, 0.3), 1-math.Pow(0.7, 5)-5*0.3*math.Pow(0.7, 4); math.Abs(got-want) > 1e-12 {
		t.Errorf("binomialUpper(2, 5, 0.3) = %v, want %v", got, want)
	}
	lo, hi := wilson(0, 100, 1.959964)
	if lo != 0 || math.Abs(hi-0.037) > 0.001 {
		t.Errorf("wilson(0, 100) = [%v, %v], want [0, 0.037]", lo, hi)
	}
}

// The design effect is 1 for requests slow at random and large when the
// slow ones come together.
func TestDesignEffect(t *testing.T) {
	spread := make([]second, 20)
	bunched := make([]second, 20)
	for i := range spread {
		spread[i] = second{{1, 1, 990}, {100, 100, 10}}
		bunched[i] = second{{1, 1, 1000}}
	}
	bunched[3] = second{{1, 1, 800}, {100, 100, 200}}
	if d := designEffect(spread, 50, 200, 20000); d != 1 {
		t.Errorf("evenly spread: design effect %v, want 1", d)
	}
	if d := designEffect(bunched, 50, 200, 20000); d < 100 {
		t.Errorf("all in one second: design effect %v, want about 200", d)
	}
}

// Several trials a side: the same workload is no change, a stall in
// every trial of B a regression, and the values are over all trials.
func TestCompareTrials(t *testing.T) {
	trials := func(seed uint64, stall bool) []*bench.Result {
		var out []*bench.Result
		for i := range uint64(3) {
			s := tailBase(seed + i)
			s.Stalls = gcPauses(seed + i)
			if stall {
				s.Stalls = append(s.Stalls, comparetest.Stall{Second: 10, Ms: 500})
			}
			out = append(out, comparetest.Result(s))
		}
		return out
	}
	a := trials(10, false)
	for _, tc := range []struct {
		name       string
		b          []*bench.Result
		regression bool
	}{
		{"same workload", trials(20, false), false},
		{"500 ms stall in each trial", trials(30, true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CompareTrials(a, tc.b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(c.Regressions()) > 0; got != tc.regression {
				t.Errorf("regression %v, want %v: %v", got, tc.regression, c.Regressions())
			}
			want := (a[0].Totals.MsgsPerSec + a[1].Totals.MsgsPerSec + a[2].Totals.MsgsPerSec) / 3
			if r := row(t, c, "throughput", "msgs/s"); math.Abs(r.A-want) > 1e-9 {
				t.Errorf("A's msgs/s %v, want the trials' mean %v", r.A, want)
			}
			if r := row(t, c, bench.LatencyService, "p99"); !strings.Contains(r.Sample, "3/3 trials") {
				t.Errorf("p99 tested on %q, want the trials named", r.Sample)
			}
			for _, r := range c.Rows {
				if r.Exceedance != nil && r.Exceedance.TotalA != 3*20*400 {
					t.Errorf("%s %s: %d of A's requests counted, want every trial's %d", r.Metric, r.Stat, r.Exceedance.TotalA, 3*20*400)
				}
			}
			if countMethod(c, MethodExceedance) == 0 {
				t.Error("no exceedance rows")
			}
		})
	}
}

// A variant's share above a threshold over its trials: the interval holds
// the share, and a trial with a stall widens it.
func TestShareIntervals(t *testing.T) {
	calm := []*bench.Result{comparetest.Result(tailBase(1)), comparetest.Result(tailBase(2)), comparetest.Result(tailBase(3))}
	stalled := tailBase(4)
	stalled.Stalls = []comparetest.Stall{{Second: 5, Ms: 800}}
	mixed := []*bench.Result{calm[0], calm[1], comparetest.Result(stalled)}
	got, err := ShareIntervals(calm, bench.LatencyService, []int64{5000, 50_000})
	if err != nil {
		t.Fatal(err)
	}
	// Log-normal, median 2 ms, σ 0.5: P(> 5 ms) = 1 − Φ(ln 2.5 / 0.5) ≈ 3.4%.
	if s := got[0].Fraction; s.Lo > 0.034 || s.Hi < 0.034 || s.Hi-s.Lo > 0.01 {
		t.Errorf("calm > 5 ms: %+v, want about 3.4%% in a narrow interval", s)
	}
	if s := got[1].Fraction; s.Value != 0 || s.Hi != 0 {
		t.Errorf("calm > 50 ms: %+v, want none", s)
	}
	withStall, err := ShareIntervals(mixed, bench.LatencyService, []int64{50_000})
	if err != nil {
		t.Fatal(err)
	}
	if s := withStall[0].Fraction; s.Value <= 0 || s.Lo != 0 || s.Hi <= s.Value {
		t.Errorf("> 50 ms with one stalled trial: %+v, want a share whose interval reaches 0 (the trials without it)", s)
	}
}
