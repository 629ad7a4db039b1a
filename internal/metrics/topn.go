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
//
// Each key has a slot; a caller that holds a key's slot counts it again
// with add (or again) without looking the key up by its string.
// Not safe for concurrent use: Set holds its lock around it.
type topN struct {
	n      int
	size   int              // the table's size: the keys counted at most
	counts map[string]*slot // the table: the keys counted
	named  map[string]*slot // the keys named, at most n
}

// slot is a key's place in a topN. It stays the key's while the key is
// counted or named (live); a key that left the table and comes back gets
// a new slot unless it kept its name. A slot's key never changes, so Set
// can use slots as interned label values.
type slot struct {
	key     string
	count   float64
	counted bool // in topN.counts
	named   bool // in topN.named
	// series is Set's cache of the series of the key's label (see
	// seriesCache), kept with the slot so that it goes when the slot does.
	series *slotSeries
}

func newTopN(n int) *topN {
	return &topN{n: n, size: max(8*n, 256), counts: make(map[string]*slot), named: make(map[string]*slot)}
}

// label counts weight for key and returns key or Other.
func (t *topN) label(key string, weight float64) string {
	if t.find(key, weight).named {
		return key
	}
	return Other
}

// find counts weight for key and returns its slot, now counted; a key
// not in the table takes a place, evicting the smallest when it is full.
func (t *topN) find(key string, weight float64) *slot {
	if sl, ok := t.counts[key]; ok {
		t.add(sl, weight)
		return sl
	}
	if len(t.counts) >= t.size {
		t.evictSmallest()
	}
	sl := t.named[key] // a named key that was forgotten keeps its slot
	if sl == nil {
		sl = &slot{key: key}
	}
	sl.count, sl.counted = weight, true
	t.counts[key] = sl
	t.name(sl)
	return sl
}

// again counts weight for the key of sl, a slot find returned earlier,
// and returns the key's slot: sl while it is counted, without a lookup.
func (t *topN) again(sl *slot, weight float64) *slot {
	if !sl.counted {
		return t.find(sl.key, weight)
	}
	t.add(sl, weight)
	return sl
}

// add counts weight for a counted slot.
func (t *topN) add(sl *slot, weight float64) {
	sl.count += weight
	t.name(sl)
}

// name names a counted slot's key while fewer than n keys are named.
func (t *topN) name(sl *slot) {
	if !sl.named && len(t.named) < t.n {
		sl.named = true
		t.named[sl.key] = sl
	}
}

// evictSmallest removes the unnamed key with the smallest count (ties:
// the smaller key, so the table does not depend on map order; a named
// one only if every key is named); its count is inherited by nobody: a
// key that comes back starts again, which only delays its promotion.
func (t *topN) evictSmallest() {
	var victim *slot
	for _, sl := range t.counts {
		if sl.named {
			continue
		}
		if victim == nil || sl.count < victim.count || sl.count == victim.count && sl.key < victim.key {
			victim = sl
		}
	}
	if victim != nil {
		delete(t.counts, victim.key)
		victim.counted = false
	}
}

// rerank names the n keys with most traffic, halves every count, and
// returns the keys that lost their name (their series are to be deleted).
func (t *topN) rerank() (demoted []string) {
	all := make([]*slot, 0, len(t.counts))
	for _, sl := range t.counts {
		all = append(all, sl)
	}
	slices.SortFunc(all, func(a, b *slot) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	top := make(map[string]*slot, t.n)
	for _, sl := range all[:min(t.n, len(all))] {
		top[sl.key] = sl
	}
	for k, sl := range t.named {
		if _, keep := top[k]; !keep {
			demoted = append(demoted, k)
			sl.named = false
		}
	}
	slices.Sort(demoted)
	for _, sl := range top {
		sl.named = true
	}
	t.named = top
	for k, sl := range t.counts {
		if sl.count /= 2; sl.count < 1e-3 {
			delete(t.counts, k)
			sl.counted = false
		}
	}
	return demoted
}
