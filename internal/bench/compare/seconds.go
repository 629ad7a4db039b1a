package compare

import (
	"fmt"
	"sort"

	"github.com/kscope-dev/kscope/internal/bench"
)

// bucket is one non-empty bucket of a histogram: the lowest and highest
// values it stands for (µs) and how many values it holds.
type bucket struct{ lo, hi, n int64 }

// second is one second's histogram of one latency series, as its
// non-empty buckets in ascending order.
type second []bucket

// secondsOf returns one series' per-second histograms of a run, one entry
// per second with values of the series. ok is false when a second with
// values has no histogram: the result was written before RESULT.json kept
// them, and the tail tests, which need them, cannot run.
func secondsOf(r *bench.Result, series string) (secs []second, ok bool, err error) {
	for i, s := range r.Series {
		l, present := s.Latency[series]
		if !present || l.Count == 0 {
			continue
		}
		if l.Histogram == "" {
			return nil, false, nil
		}
		h, err := decodeSecond(l.Histogram)
		if err != nil {
			return nil, false, fmt.Errorf("series[%d].latency.%s: %w", i, series, err)
		}
		var sec second
		for _, b := range h.Distribution() {
			if b.Count > 0 {
				sec = append(sec, bucket{b.From, b.To, b.Count})
			}
		}
		secs = append(secs, sec)
	}
	return secs, true, nil
}

// total is how many values the second holds.
func (s second) total() int64 {
	var n int64
	for _, b := range s {
		n += b.n
	}
	return n
}

// above is how many of the second's values are above t: those of the
// buckets whose lowest value is above t (a bucket that straddles t does
// not count, so a count never includes a value at or below t).
func (s second) above(t int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].lo > t })
	var n int64
	for _, b := range s[i:] {
		n += b.n
	}
	return n
}

// blocksOf merges consecutive seconds into at most maxBlocks blocks of
// equal length (the last may be shorter): the units a bootstrap
// resamples. Long runs get longer blocks, which keeps the resampling cheap
// and is no less valid (a block only needs to be long enough to hold the
// dependence between neighbouring requests, and a second already is).
func blocksOf(secs []second, maxBlocks int) []second {
	if len(secs) <= maxBlocks {
		return secs
	}
	per := (len(secs) + maxBlocks - 1) / maxBlocks
	var out []second
	for i := 0; i < len(secs); i += per {
		out = append(out, mergeSeconds(secs[i:min(i+per, len(secs))]))
	}
	return out
}

func mergeSeconds(secs []second) second {
	counts := map[[2]int64]int64{}
	for _, s := range secs {
		for _, b := range s {
			counts[[2]int64{b.lo, b.hi}] += b.n
		}
	}
	out := make(second, 0, len(counts))
	for k, n := range counts {
		out = append(out, bucket{k[0], k[1], n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo || (out[i].lo == out[j].lo && out[i].hi < out[j].hi) })
	return out
}
