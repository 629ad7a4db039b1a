package metrics

import (
	"cmp"
	"slices"
)

// Other is the label value of everything outside the top N.
const Other = "other"

// topN bounds a label's values: keys are counted by traffic in a table of
// fixed size (the Space-Saving algorithm: a new key that finds the table
// full takes the place of the smallest, inheriting its count), and only
// the N with most traffic are named; the others are Other.
//
// Named keys are kept until a rerank finds others with more traffic;
// until the first N keys are seen, every new key is named at once, so a
// small cluster has every topic and client named from its first request.
// Rerank halves every count, so traffic ranks by its recent past.
// Not safe for concurrent use: Set holds its lock around it.
type topN struct {
	n      int
	size   int // the table's size: the keys counted at most
	counts map[string]float64
	named  map[string]struct{}
}

func newTopN(n int) *topN {
	return &topN{n: n, size: max(8*n, 256), counts: make(map[string]float64), named: make(map[string]struct{})}
}

// label counts weight for key and returns key or Other.
func (t *topN) label(key string, weight float64) string {
	if c, ok := t.counts[key]; ok {
		t.counts[key] = c + weight
	} else {
		if len(t.counts) >= t.size {
			t.evictSmallest()
		}
		t.counts[key] = weight
	}
	if _, ok := t.named[key]; ok {
		return key
	}
	if len(t.named) < t.n {
		t.named[key] = struct{}{}
		return key
	}
	return Other
}

// evictSmallest removes the unnamed key with the smallest count (a named
// one only if every key is named); its count is inherited by nobody: a
// key that comes back starts again, which only delays its promotion.
func (t *topN) evictSmallest() {
	var victim string
	found := false
	var least float64
	for k, c := range t.counts {
		if _, isNamed := t.named[k]; isNamed {
			continue
		}
		if !found || c < least {
			victim, least, found = k, c, true
		}
	}
	if found {
		delete(t.counts, victim)
	}
}

// rerank names the n keys with most traffic, halves every count, and
// returns the keys that lost their name (their series are to be deleted).
func (t *topN) rerank() (demoted []string) {
	type kc struct {
		key   string
		count float64
	}
	all := make([]kc, 0, len(t.counts))
	for k, c := range t.counts {
		all = append(all, kc{k, c})
	}
	slices.SortFunc(all, func(a, b kc) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	top := make(map[string]struct{}, t.n)
	for _, e := range all[:min(t.n, len(all))] {
		top[e.key] = struct{}{}
	}
	for k := range t.named {
		if _, keep := top[k]; !keep {
			demoted = append(demoted, k)
		}
	}
	slices.Sort(demoted)
	t.named = top
	for k, c := range t.counts {
		if c /= 2; c < 1e-3 {
			delete(t.counts, k)
		} else {
			t.counts[k] = c
		}
	}
	return demoted
}
