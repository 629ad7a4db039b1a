package compare

import (
	"math"
	"slices"
)

// MannWhitneyResult is the outcome of a two-sided Mann–Whitney U test of
// sample A against sample B.
type MannWhitneyResult struct {
	NA int `json:"n_a"`
	NB int `json:"n_b"`
	// U is B's statistic: the number of pairs (a, b) with b > a, ties
	// counting one half. It ranges over [0, NA·NB]; NA·NB/2 is no shift.
	U float64 `json:"u"`
	// ProbBGreater is U/(NA·NB): the probability that a value drawn from B
	// exceeds one drawn from A (the common-language effect size).
	ProbBGreater float64 `json:"prob_b_greater"`
	// P is the two-sided p-value; 1 when either sample is empty or every
	// value is equal.
	P float64 `json:"p"`
	// Exact: P is from the exact permutation distribution of the rank
	// sum (ties included); otherwise from the normal approximation with
	// tie and continuity corrections, and Z is its statistic.
	Exact bool    `json:"exact"`
	Z     float64 `json:"z"`
}

// exactWork bounds the exact test: it runs when min(NA,NB)·(NA+NB) is at
// most this, which covers every case where the normal approximation is
// poor (a small group) at a cost of at most a few million steps.
const exactWork = 3000

// MannWhitney tests whether A and B come from the same distribution
// against the alternative that one tends to have larger values. It makes
// no assumption about the shape of the distribution, which matters here:
// per-second latency percentiles are skewed and heavy-tailed, so a t-test's
// normality assumption does not hold.
func MannWhitney(a, b []float64) MannWhitneyResult {
	return mannWhitney(a, b, exactWork)
}

func mannWhitney(a, b []float64, work int) MannWhitneyResult {
	r := MannWhitneyResult{NA: len(a), NB: len(b), P: 1, ProbBGreater: 0.5}
	if r.NA == 0 || r.NB == 0 {
		return r
	}
	n := r.NA + r.NB
	type obs struct {
		v   float64
		inB bool
	}
	all := make([]obs, 0, n)
	for _, v := range a {
		all = append(all, obs{v, false})
	}
	for _, v := range b {
		all = append(all, obs{v, true})
	}
	slices.SortFunc(all, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	// Doubled mid-ranks are integers: a tie group spanning ranks i+1..j
	// has mid-rank (i+1+j)/2.
	rank2 := make([]int, n)
	inB := make([]bool, n)
	sumB2 := 0     // doubled rank sum of B
	tieTerm := 0.0 // Σ(t³−t) over tie groups
	for i := 0; i < n; {
		j := i + 1
		for j < n && all[j].v == all[i].v {
			j++
		}
		for k := i; k < j; k++ {
			rank2[k] = i + 1 + j
			inB[k] = all[k].inB
			if all[k].inB {
				sumB2 += i + 1 + j
			}
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	na, nb, nf := float64(r.NA), float64(r.NB), float64(n)
	r.U = float64(sumB2)/2 - nb*(nb+1)/2
	r.ProbBGreater = r.U / (na * nb)
	if tieTerm == nf*nf*nf-nf { // one tie group: every value is equal
		return r
	}
	k := min(r.NA, r.NB)
	if k*n <= work {
		r.Exact = true
		r.P = exactP(rank2, inB, r.NB)
		return r
	}
	mean := na * nb / 2
	variance := na * nb / 12 * ((nf + 1) - tieTerm/(nf*(nf-1)))
	d := math.Abs(r.U-mean) - 0.5 // continuity correction
	if d < 0 {
		d = 0
	}
	r.Z = d / math.Sqrt(variance)
	if r.U < mean {
		r.Z = -r.Z
	}
	r.P = min(1, math.Erfc(math.Abs(r.Z)/math.Sqrt2))
	return r
}

// exactP is the two-sided p-value of the permutation test on the rank
// sum: the share of the C(n, nb) ways to choose B's ranks whose rank sum
// is at least as far from its mean as the observed one. The distribution
// is counted by dynamic programming over the doubled mid-ranks, so ties
// are handled exactly. Counting the smaller group's subsets gives the same
// p-value (the two rank sums add up to a constant) at less cost.
func exactP(rank2 []int, inB []bool, nb int) float64 {
	n := len(rank2)
	pickB := nb <= n-nb
	k := nb
	if !pickB {
		k = n - nb
	}
	obs := 0
	for i, r := range rank2 {
		if inB[i] == pickB {
			obs += r
		}
	}
	// ways[j][s]: subsets of size j with doubled rank sum s. A doubled
	// rank is at most 2n, so s < 2jn+1: the work is about (k·n)².
	ways := make([][]float64, k+1)
	for j := range ways {
		ways[j] = make([]float64, 2*j*n+1)
	}
	ways[0][0] = 1
	for i, r := range rank2 {
		for j := min(i+1, k); j >= 1; j-- {
			prev, cur := ways[j-1], ways[j]
			for s := len(prev) - 1; s >= 0; s-- {
				if prev[s] != 0 {
					cur[s+r] += prev[s]
				}
			}
		}
	}
	mean2 := k * (n + 1) // doubled mean rank sum of k ranks
	dObs := abs(obs - mean2)
	var total, extreme float64
	for s, w := range ways[k] {
		if w == 0 {
			continue
		}
		total += w
		if abs(s-mean2) >= dObs {
			extreme += w
		}
	}
	return min(1, extreme/total)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
