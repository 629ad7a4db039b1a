package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/kscope-dev/kscope/internal/bench"
)

// Every test of a comparison runs on the per-second series: the totals
// are only shown. So a result without the series would compare as "no
// change" whatever its totals say, and one whose totals its series
// contradict would show numbers that were never tested. Load refuses
// both. The bounds below hold for every result bench writes; only a
// damaged or edited file breaks them.

// seriesSum is one latency series summed over a result's seconds.
type seriesSum struct {
	count int64
	// hists: every second with values has its histogram, merged in
	// buckets (by lowest and highest value, µs).
	hists   bool
	buckets map[[2]int64]int64
}

// percentileSlack is how far a stored percentile may lie beyond the
// bounds its seconds' histograms set: the seconds' histograms keep two
// significant digits, the run's three, and a writer may store the exact
// maximum.
const percentileSlack = 0.02

// checkSeries refuses a result whose per-second series is missing or
// contradicts its totals: seconds for another duration, counts above the
// totals', a rate or a percentile the seconds rule out.
func checkSeries(r *bench.Result, sums map[string]*seriesSum) error {
	if err := checkSeconds(r); err != nil {
		return err
	}
	if err := checkCounts(r); err != nil {
		return err
	}
	if err := checkRates(r); err != nil {
		return err
	}
	for _, name := range sortedKeys(sums) {
		if l := r.Latency[name]; sums[name].count > 0 && l == nil {
			return fmt.Errorf("the series has latency.%s, the totals have not", name)
		}
	}
	for _, name := range sortedKeys(r.Latency) {
		if err := checkSeriesLatency(r.Latency[name], sums[name]); err != nil {
			return fmt.Errorf("latency.%s: %w", name, err)
		}
	}
	return nil
}

// checkSeconds: one second per second of workload.duration_ms (bench
// keeps a last partial second of half a second or more), numbered from
// 0; none only for a result that measured nothing.
func checkSeconds(r *bench.Result) error {
	d := r.Workload.DurationMs
	if d < 0 {
		return errors.New("workload.duration_ms is negative")
	}
	n, whole := int64(len(r.Series)), d/1000
	switch {
	case n == 0 && (d >= 1000 || measured(r)):
		return fmt.Errorf("no per-second series for a run of %d ms: every test runs on the seconds, so it cannot be compared", d)
	case n < whole || n > whole+1:
		return fmt.Errorf("the series has %d seconds; workload.duration_ms %d makes %d", n, d, whole+(d%1000)/500)
	}
	for i, s := range r.Series {
		if s.T != i {
			return fmt.Errorf("series[%d].t is %d", i, s.T)
		}
	}
	return nil
}

// measured is true when the totals hold a rate or a latency.
func measured(r *bench.Result) bool {
	if r.Totals.MsgsPerSec > 0 || r.Totals.MBPerSec > 0 {
		return true
	}
	for _, l := range r.Latency {
		if l != nil && l.Count > 0 {
			return true
		}
	}
	return false
}

// checkCounts: the seconds count the messages of the measured part, the
// totals those of the whole run (warm-up and drain too).
func checkCounts(r *bench.Result) error {
	var sent, acked, consumed int64
	for _, s := range r.Series {
		sent, acked, consumed = addSat(sent, s.Sent), addSat(acked, s.Acked), addSat(consumed, s.Consumed)
	}
	t := r.Totals
	for _, c := range []struct {
		name                string
		inSeconds, inTotals int64
	}{
		{"sent", sent, t.Sent}, {"acked", acked, t.Acked}, {"consumed", consumed, t.Consumed},
	} {
		if c.inSeconds > c.inTotals {
			return fmt.Errorf("the seconds count %d messages %s, more than totals.%s %d", c.inSeconds, c.name, c.name, c.inTotals)
		}
	}
	switch {
	case addSat(t.Acked, t.Failed) > t.Sent:
		return fmt.Errorf("totals: %d acked and %d failed of %d sent", t.Acked, t.Failed, t.Sent)
	case t.Lost > t.Acked:
		return fmt.Errorf("totals: %d lost of %d acked", t.Lost, t.Acked)
	}
	return nil
}

// addSat adds two non-negative counts, saturating (they come from a
// file).
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// checkRates: each whole second's msgs/s is its acked count, the last
// (at least half a second) up to twice it; the totals' rates are over
// the measured part, duration_ms long (to the millisecond), whose acked
// messages include every whole second's but the last and are among the
// run's.
func checkRates(r *bench.Result) error {
	last := len(r.Series) - 1
	var ackedBefore, bytesBefore float64 // the seconds before the last
	for i, s := range r.Series {
		acked := float64(s.Acked)
		if i < last && !sameRate(s.MsgsPerSec, acked) || i == last && (s.MsgsPerSec < acked*(1-1e-9) || s.MsgsPerSec > 2*acked*(1+1e-9)) {
			return fmt.Errorf("series[%d]: msgs_per_sec %g for %d acked", i, s.MsgsPerSec, s.Acked)
		}
		if i < last {
			ackedBefore += acked
			bytesBefore += s.MBPerSec * 1e6
		}
	}
	t, d := r.Totals, float64(r.Workload.DurationMs)/1000
	for _, rate := range []struct {
		name          string
		perSec, unit  float64
		before, total float64
	}{
		{"msgs_per_sec", t.MsgsPerSec, 1, ackedBefore, float64(t.Acked)},
		{"mb_per_sec", t.MBPerSec, 1e6, bytesBefore, float64(t.Bytes)},
	} {
		inWindow, upTo := rate.perSec*rate.unit*d, rate.perSec*rate.unit*(d+0.001)
		if inWindow > rate.total*(1+1e-9)+1 || upTo < rate.before*(1-1e-9)-1 {
			return fmt.Errorf("totals.%s %g over %g s: the seconds and the totals' count allow %g to %g", rate.name, rate.perSec, d,
				rate.before/rate.unit/(d+0.001), rate.total/rate.unit/max(d, 0.001))
		}
	}
	return nil
}

func sameRate(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))+1e-9 }

// checkSeriesLatency: the seconds hold the measured values the run's
// histogram holds, less those acknowledged after the last second; so the
// run's maximum is at least the seconds', and with the seconds'
// histograms each stored percentile lies where the seconds put it,
// whatever the values they lack were.
func checkSeriesLatency(l *bench.Latency, s *seriesSum) error {
	if s == nil || s.count == 0 {
		return nil
	}
	if s.count > l.Count {
		return fmt.Errorf("the seconds hold %d values, the run %d", s.count, l.Count)
	}
	if !s.hists {
		return nil // a hand-made result: nothing to place the percentiles with
	}
	b := sortedBuckets(s.buckets)
	extra := l.Count - s.count // values after the last second
	for _, q := range quantiles {
		lo, hi := percentileBounds(b, q.q, l.Count, extra, s.count)
		if v := float64(q.get(l)); v < lo*(1-percentileSlack)-1 || v > hi*(1+percentileSlack)+1 {
			return fmt.Errorf("the stored %s of %d µs is outside what the per-second histograms allow (%g to %g µs)", q.name, q.get(l), lo, hi)
		}
	}
	return nil
}

// percentileBounds are the lowest and highest values the q-th percentile
// (100: the maximum) of n values can have when inSeconds of them are in
// the buckets b and extra are anywhere: the rank's value is at least the
// seconds' value extra ranks below and at most the seconds' value at
// the rank (or unbounded when the rank is beyond them). A rank either
// side of the library's is allowed for its rounding.
func percentileBounds(b []bucket, q float64, n, extra, inSeconds int64) (lo, hi float64) {
	rank := n
	if q < 100 {
		rank = min(max(int64(q/100*float64(n)+0.5), 1), n)
	}
	rLo, rHi := max(rank-1, 1), min(rank+1, n)
	if q == 100 {
		rLo, rHi = n, n
	}
	lo, hi = 0, math.Inf(1)
	if k := rLo - extra; k >= 1 {
		lo = float64(atRank(b, k).lo)
	}
	if rHi <= inSeconds {
		hi = float64(atRank(b, rHi).hi)
	}
	return lo, hi
}

// atRank is the bucket holding the k-th smallest value (1-based, k at
// most the buckets' total).
func atRank(b []bucket, k int64) bucket {
	var seen int64
	for _, x := range b {
		seen += x.n
		if seen >= k {
			return x
		}
	}
	return b[len(b)-1]
}

func sortedBuckets(m map[[2]int64]int64) []bucket {
	out := make([]bucket, 0, len(m))
	for k, n := range m {
		out = append(out, bucket{k[0], k[1], n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo || (out[i].lo == out[j].lo && out[i].hi < out[j].hi) })
	return out
}
