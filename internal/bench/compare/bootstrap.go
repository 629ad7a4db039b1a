package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/kscope-dev/kscope/internal/bench"
)

// Bootstrap settings. The seed is fixed so that a comparison is
// reproducible: the same files always give the same intervals.
const (
	bootstrapReps      = 2000
	bootstrapMaxBlocks = 200
	bootstrapSeed1     = 0x6b73636f
	bootstrapSeed2     = 0x7065
)

// trials is one side of a bootstrap: its runs (trials), each a
// non-empty list of blocks of consecutive seconds.
type trials [][]second

// quantileBoot is a bootstrap of the difference B−A of one quantile.
type quantileBoot struct {
	q      float64 // 0..100
	lo, hi float64 // 95% interval of B−A, µs
	p      float64 // two-sided bootstrap p-value of B−A = 0
	nA, nB int     // blocks resampled on each side
}

// bootstrapQuantiles resamples each side's requests by blocks (a second,
// or several in long runs), and with several trials a side first resamples
// its trials and then the blocks of each trial drawn (a two-stage
// bootstrap: the variance between trials is not hidden by the many
// requests within one). Resampling blocks rather than single requests
// keeps what makes a tail: requests delayed together by one stall are
// drawn together or not at all. For each quantile it returns the
// percentile interval of B−A and the two-sided p-value, the share of
// resamples on the far side of zero (doubled, with the +1 that keeps it
// above zero).
func bootstrapQuantiles(a, b trials, qs []float64) []quantileBoot {
	universe, idx := valueIndex(a, b)
	ia, ib := indexed(a, idx), indexed(b, idx)
	rng := rand.New(rand.NewPCG(bootstrapSeed1, bootstrapSeed2))
	counts := make([]int64, len(universe))
	diffs := make([][]float64, len(qs))
	for i := range diffs {
		diffs[i] = make([]float64, 0, bootstrapReps)
	}
	qa, qb := make([]float64, len(qs)), make([]float64, len(qs))
	for range bootstrapReps {
		resample(rng, ia, counts, universe, qs, qa)
		resample(rng, ib, counts, universe, qs, qb)
		for i := range qs {
			if !math.IsNaN(qa[i]) && !math.IsNaN(qb[i]) {
				diffs[i] = append(diffs[i], qb[i]-qa[i])
			}
		}
	}
	out := make([]quantileBoot, len(qs))
	for i, q := range qs {
		d := diffs[i]
		r := quantileBoot{q: q, p: 1, nA: blocks(a), nB: blocks(b)}
		if len(d) > 0 {
			sort.Float64s(d)
			r.lo, r.hi = d[int(0.025*float64(len(d)-1))], d[int(math.Ceil(0.975*float64(len(d)-1)))]
			var le, ge int
			for _, v := range d {
				if v <= 0 {
					le++
				}
				if v >= 0 {
					ge++
				}
			}
			n := float64(len(d))
			r.p = min(1, 2*min(float64(le+1)/(n+1), float64(ge+1)/(n+1)))
		}
		out[i] = r
	}
	return out
}

func blocks(t trials) int {
	n := 0
	for _, tr := range t {
		n += len(tr)
	}
	return n
}

// valueIndex lists the distinct bucket values (highest equivalent value,
// what HdrHistogram reports a quantile as) of both sides, ascending, and
// maps each to its index.
func valueIndex(a, b trials) ([]float64, map[int64]int) {
	set := map[int64]bool{}
	for _, side := range []trials{a, b} {
		for _, tr := range side {
			for _, blk := range tr {
				for _, bk := range blk {
					set[bk.hi] = true
				}
			}
		}
	}
	vals := make([]int64, 0, len(set))
	for v := range set {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	idx := make(map[int64]int, len(vals))
	universe := make([]float64, len(vals))
	for i, v := range vals {
		idx[v] = i
		universe[i] = float64(v)
	}
	return universe, idx
}

// slot is a bucket as an index into the value universe and its count.
type slot struct {
	i int
	n int64
}

func indexed(t trials, idx map[int64]int) [][][]slot {
	out := make([][][]slot, len(t))
	for i, tr := range t {
		out[i] = make([][]slot, len(tr))
		for j, blk := range tr {
			s := make([]slot, len(blk))
			for k, bk := range blk {
				s[k] = slot{idx[bk.hi], bk.n}
			}
			out[i][j] = s
		}
	}
	return out
}

// resample draws one bootstrap sample of a side into counts and writes
// its quantiles (NaN when the sample is empty) into out.
func resample(rng *rand.Rand, side [][][]slot, counts []int64, universe, qs, out []float64) {
	clear(counts)
	var total int64
	for range side {
		tr := side[rng.IntN(len(side))]
		for range tr {
			for _, s := range tr[rng.IntN(len(tr))] {
				counts[s.i] += s.n
				total += s.n
			}
		}
	}
	for i := range out {
		out[i] = math.NaN()
	}
	if total == 0 {
		return
	}
	// qs ascend: one pass finds them all.
	var cum int64
	k := 0
	for i, c := range counts {
		cum += c
		for k < len(qs) && cum >= rank(qs[k], total) {
			out[k] = universe[i]
			k++
		}
		if k == len(qs) {
			break
		}
	}
}

// rank is the 1-based rank of quantile q (0..100) among total values, as
// HdrHistogram counts it.
func rank(q float64, total int64) int64 {
	r := int64(math.Ceil(q / 100 * float64(total)))
	return min(max(r, 1), total)
}

// Share is how many of a variant's requests were above a threshold, of
// how many, and the fraction with its 95% interval.
type Share struct {
	Above, Total int64
	Fraction     Interval
}

// ShareIntervals is, for one latency series of a variant's trials, the
// share of its requests above each threshold (µs) with a 95% interval
// from the same two-stage bootstrap (trials, then the seconds of each):
// an interval over trials, which a bad trial widens. A result without
// per-second histograms is an error.
func ShareIntervals(rs []*bench.Result, series string, thresholds []int64) ([]Share, error) {
	ts, ok, err := trialSeconds(rs, series)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("latency %q: a run has no per-second histograms", series)
	}
	// Each block's total and count above each threshold, once.
	type counts struct {
		total int64
		above []int64
	}
	var side [][]counts
	var total int64
	above := make([]int64, len(thresholds))
	for _, tr := range blockTrials(ts) {
		var blocks []counts
		for _, blk := range tr {
			c := counts{total: blk.total(), above: make([]int64, len(thresholds))}
			for k, t := range thresholds {
				c.above[k] = blk.above(t)
				above[k] += c.above[k]
			}
			total += c.total
			blocks = append(blocks, c)
		}
		if len(blocks) > 0 {
			side = append(side, blocks)
		}
	}
	out := make([]Share, len(thresholds))
	for k := range thresholds {
		out[k].Above, out[k].Total = above[k], total
	}
	if total == 0 {
		return out, nil
	}
	for k := range thresholds {
		out[k].Fraction.Value = float64(above[k]) / float64(total)
	}
	rng := rand.New(rand.NewPCG(bootstrapSeed1, bootstrapSeed2))
	shares := make([][]float64, len(thresholds))
	sum := make([]int64, len(thresholds))
	for range bootstrapReps {
		var n int64
		clear(sum)
		for range side {
			tr := side[rng.IntN(len(side))]
			for range tr {
				c := tr[rng.IntN(len(tr))]
				n += c.total
				for k := range sum {
					sum[k] += c.above[k]
				}
			}
		}
		if n == 0 {
			continue
		}
		for k := range sum {
			shares[k] = append(shares[k], float64(sum[k])/float64(n))
		}
	}
	for k, sh := range shares {
		if len(sh) == 0 {
			continue
		}
		sort.Float64s(sh)
		out[k].Fraction.Lo, out[k].Fraction.Hi = sh[int(0.025*float64(len(sh)-1))], sh[int(math.Ceil(0.975*float64(len(sh)-1)))]
	}
	return out, nil
}
