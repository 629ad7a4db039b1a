package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestMannWhitneyTextbook checks values published elsewhere.
func TestMannWhitneyTextbook(t *testing.T) {
	// SciPy's documentation example (mannwhitneyu): U = 17, exact p =
	// 0.1111 (14 of the 126 rank arrangements), asymptotic p =
	// 0.11134688653314041 (continuity-corrected).
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	r := MannWhitney(females, males)
	if r.U != 17 || !r.Exact || !near(r.P, 14.0/126, 1e-12) {
		t.Errorf("exact: %+v, want U 17, p %.6f", r, 14.0/126)
	}
	r = mannWhitney(females, males, 0)
	if r.U != 17 || r.Exact || !near(r.P, 0.11134688653314041, 1e-12) {
		t.Errorf("normal: %+v, want p 0.11134688653314041", r)
	}

	// Complete separation of 5 and 5: p = 2/C(10,5) = 2/252.
	r = MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if r.U != 25 || r.ProbBGreater != 1 || !near(r.P, 2.0/252, 1e-12) {
		t.Errorf("separated: %+v, want U 25, p %.6f", r, 2.0/252)
	}

	// Tables of critical values: for n1 = n2 = 10, two-sided α = 0.05,
	// U ≤ 23 is significant and 24 is not. B takes ranks summing to
	// 55+U: {1..7, 11, 19, 20} gives U = 23, {1..7, 12, 19, 20} U = 24.
	ranks := func(b []float64) (a []float64) {
		in := map[float64]bool{}
		for _, v := range b {
			in[v] = true
		}
		for v := 1.0; v <= 20; v++ {
			if !in[v] {
				a = append(a, v)
			}
		}
		return a
	}
	b23 := []float64{1, 2, 3, 4, 5, 6, 7, 11, 19, 20}
	b24 := []float64{1, 2, 3, 4, 5, 6, 7, 12, 19, 20}
	if r := MannWhitney(ranks(b23), b23); r.U != 23 || !(r.P <= 0.05) {
		t.Errorf("U=23: %+v, want p <= 0.05", r)
	}
	if r := MannWhitney(ranks(b24), b24); r.U != 24 || !(r.P > 0.05) {
		t.Errorf("U=24: %+v, want p > 0.05", r)
	}

	// 3 against 3: the smallest two-sided p is 2/C(6,3) = 0.1.
	if r := MannWhitney([]float64{1, 2, 3}, []float64{100, 200, 300}); !near(r.P, 0.1, 1e-12) {
		t.Errorf("3 vs 3: p %v, want 0.1", r.P)
	}
}

func TestMannWhitneyEdges(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float64
	}{
		{"empty A", nil, []float64{1, 2}},
		{"empty B", []float64{1}, nil},
		{"all equal", []float64{5, 5, 5}, []float64{5, 5}},
		{"all equal, large", make([]float64, 500), make([]float64, 500)},
	} {
		if r := MannWhitney(c.a, c.b); r.P != 1 {
			t.Errorf("%s: p %v, want 1", c.name, r.P)
		}
	}
	// One against one, different: the only two arrangements are both as
	// extreme.
	if r := MannWhitney([]float64{1}, []float64{2}); r.P != 1 || r.U != 1 {
		t.Errorf("1 vs 1: %+v", r)
	}
}

// TestMannWhitneyExactAgainstEnumeration checks the dynamic program
// (with ties) against counting every way to choose B's ranks.
func TestMannWhitneyExactAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		na, nb := 1+rng.IntN(7), 1+rng.IntN(7)
		a, b := make([]float64, na), make([]float64, nb)
		for i := range a {
			a[i] = float64(rng.IntN(5)) // many ties
		}
		for i := range b {
			b[i] = float64(rng.IntN(5) + rng.IntN(2))
		}
		got := MannWhitney(a, b)
		want := bruteP(a, b)
		if !near(got.P, want, 1e-9) {
			t.Fatalf("trial %d: a %v b %v: p %v, enumeration %v", trial, a, b, got.P, want)
		}
	}
}

// bruteP: every assignment of nb of the pooled values to B, the share
// whose U (counted pair by pair) is as far from its mean as the observed.
func bruteP(a, b []float64) float64 {
	pooled := append(append([]float64{}, a...), b...)
	n, nb := len(pooled), len(b)
	u := func(x, y []float64) float64 {
		s := 0.0
		for _, p := range x {
			for _, q := range y {
				switch {
				case q > p:
					s++
				case q == p:
					s += 0.5
				}
			}
		}
		return s
	}
	mean := float64(len(a)*nb) / 2
	obs := math.Abs(u(a, b) - mean)
	if pooledAllEqual(pooled) {
		return 1
	}
	var total, extreme int
	for mask := 0; mask < 1<<n; mask++ {
		if popcount(mask) != nb {
			continue
		}
		var x, y []float64
		for i, v := range pooled {
			if mask&(1<<i) != 0 {
				y = append(y, v)
			} else {
				x = append(x, v)
			}
		}
		total++
		if math.Abs(u(x, y)-mean) >= obs-1e-9 {
			extreme++
		}
	}
	return float64(extreme) / float64(total)
}

func pooledAllEqual(v []float64) bool {
	for _, x := range v {
		if x != v[0] {
			return false
		}
	}
	return true
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestMannWhitneyNormalWithTies checks the tie-corrected normal
// approximation against the formula computed from pair counts and tie
// group sizes directly, and that it agrees with the exact test where both
// apply.
func TestMannWhitneyNormalWithTies(t *testing.T) {
	a := []float64{1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 7}
	b := []float64{3, 4, 4, 5, 6, 6, 7, 8, 8, 9, 9, 10}
	r := mannWhitney(a, b, 0)
	// U from pairs.
	u := 0.0
	for _, p := range a {
		for _, q := range b {
			if q > p {
				u++
			} else if q == p {
				u += 0.5
			}
		}
	}
	counts := map[float64]float64{}
	for _, v := range append(append([]float64{}, a...), b...) {
		counts[v]++
	}
	ties := 0.0
	for _, c := range counts {
		ties += c*c*c - c
	}
	n1, n2, n := 12.0, 12.0, 24.0
	sd := math.Sqrt(n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1))))
	z := (math.Abs(u-n1*n2/2) - 0.5) / sd
	want := math.Erfc(z / math.Sqrt2)
	if r.U != u || !near(r.P, want, 1e-12) {
		t.Errorf("normal with ties: U %v p %v, want U %v p %v", r.U, r.P, u, want)
	}
	exact := MannWhitney(a, b)
	if !exact.Exact || !near(exact.P, r.P, 0.01) {
		t.Errorf("exact p %v and normal p %v differ", exact.P, r.P)
	}
}

// TestMannWhitneyFalsePositives: on samples from one distribution the
// test rejects at about its level, exact or approximate.
func TestMannWhitneyFalsePositives(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{8, 60} {
		rejected := 0
		const trials = 2000
		for range trials {
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				a[i] = math.Exp(rng.NormFloat64())
				b[i] = math.Exp(rng.NormFloat64())
			}
			if MannWhitney(a, b).P < 0.05 {
				rejected++
			}
		}
		if rate := float64(rejected) / trials; rate > 0.065 || rate < 0.02 {
			t.Errorf("n=%d: rejected %.3f of identical pairs at 0.05", n, rate)
		}
	}
}
