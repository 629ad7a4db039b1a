package metrics

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

type hit struct {
	key    string
	weight float64
	want   string // the label returned
}

func TestTopNLabel(t *testing.T) {
	tests := []struct {
		name string
		n    int
		hits []hit
	}{
		{"first n named at once", 2, []hit{
			{"a", 1, "a"}, {"b", 1, "b"}, {"c", 100, Other}, {"a", 1, "a"}, {"d", 0, Other}, {"b", 5, "b"},
		}},
		{"a repeated key takes one place", 2, []hit{
			{"a", 1, "a"}, {"a", 1, "a"}, {"a", 1, "a"}, {"b", 1, "b"}, {"c", 1, Other},
		}},
		{"empty key is a key", 1, []hit{{"", 1, ""}, {"x", 1, Other}}},
		{"zero weight still names", 1, []hit{{"z", 0, "z"}, {"y", 1e9, Other}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTopN(tc.n)
			for i, h := range tc.hits {
				if got := tn.label(h.key, h.weight); got != h.want {
					t.Errorf("hit %d: label(%q) = %q, want %q", i, h.key, got, h.want)
				}
			}
			if len(tn.named) > tc.n {
				t.Errorf("%d named, n=%d", len(tn.named), tc.n)
			}
		})
	}
}

func TestTopNRerank(t *testing.T) {
	tests := []struct {
		name        string
		n           int
		hits        []hit // want is ignored
		wantDemoted []string
		wantNamed   []string
		wantCounts  map[string]float64 // after halving
	}{
		{
			name: "heavier keys take the places",
			n:    2,
			hits: []hit{{"a", 10, ""}, {"b", 20, ""}, {"c", 30, ""}, {"d", 40, ""}},
			// a and b were named first; c and d have more traffic.
			wantDemoted: []string{"a", "b"},
			wantNamed:   []string{"c", "d"},
			wantCounts:  map[string]float64{"a": 5, "b": 10, "c": 15, "d": 20},
		},
		{
			name:        "named keys that still lead stay",
			n:           2,
			hits:        []hit{{"a", 50, ""}, {"b", 20, ""}, {"c", 30, ""}},
			wantDemoted: []string{"b"},
			wantNamed:   []string{"a", "c"},
			wantCounts:  map[string]float64{"a": 25, "b": 10, "c": 15},
		},
		{
			name:        "ties go to the smaller key",
			n:           2,
			hits:        []hit{{"z", 7, ""}, {"y", 7, ""}, {"x", 7, ""}, {"w", 7, ""}},
			wantDemoted: []string{"y", "z"},
			wantNamed:   []string{"w", "x"},
			wantCounts:  map[string]float64{"w": 3.5, "x": 3.5, "y": 3.5, "z": 3.5},
		},
		{
			name:       "fewer keys than n",
			n:          5,
			hits:       []hit{{"a", 1, ""}, {"b", 2, ""}},
			wantNamed:  []string{"a", "b"},
			wantCounts: map[string]float64{"a": 0.5, "b": 1},
		},
		{
			name:        "tiny counts are forgotten",
			n:           1,
			hits:        []hit{{"a", 0.001, ""}, {"b", 0.0015, ""}},
			wantDemoted: []string{"a"},
			wantNamed:   []string{"b"},
			wantCounts:  map[string]float64{},
		},
		{
			name:      "nothing",
			n:         3,
			wantNamed: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTopN(tc.n)
			for _, h := range tc.hits {
				tn.label(h.key, h.weight)
			}
			demoted := tn.rerank()
			if !slices.Equal(demoted, tc.wantDemoted) {
				t.Errorf("demoted %q, want %q", demoted, tc.wantDemoted)
			}
			if got := slices.Sorted(maps.Keys(tn.named)); !slices.Equal(got, tc.wantNamed) {
				t.Errorf("named %q, want %q", got, tc.wantNamed)
			}
			if got := countsOf(tn); !maps.Equal(got, tc.wantCounts) {
				t.Errorf("counts %v, want %v", got, tc.wantCounts)
			}
			for _, k := range tc.wantNamed {
				if got := tn.label(k, 0); got != k {
					t.Errorf("after rerank: label(%q) = %q", k, got)
				}
			}
		})
	}
}

// TestTopNDecay: without traffic, counts halve at every rerank until
// they are forgotten, then the names are given up and new keys are named
// at once again.
func TestTopNDecay(t *testing.T) {
	tn := newTopN(1)
	tn.label("old", 100)
	if got := tn.label("new", 1); got != Other {
		t.Fatalf("label(new) = %q", got)
	}
	// 100/2^17 < 1e-3 <= 100/2^16: "old" is forgotten at the 17th rerank
	// and loses its name at the 18th.
	for i := 1; i <= 17; i++ {
		if d := tn.rerank(); len(d) != 0 {
			t.Fatalf("rerank %d demoted %q", i, d)
		}
	}
	if _, ok := tn.counts["old"]; ok {
		t.Fatalf("old still counted: %v", tn.counts)
	}
	if d := tn.rerank(); !slices.Equal(d, []string{"old"}) {
		t.Fatalf("rerank 18 demoted %q, want [old]", d)
	}
	if got := tn.label("newer", 1); got != "newer" {
		t.Errorf("label(newer) = %q, want it named", got)
	}
}

// TestTopNTableBound: any number of distinct keys are counted in a table
// of fixed size, named keys are never evicted, and a key with enough
// traffic still wins its place at the next rerank.
func TestTopNTableBound(t *testing.T) {
	tn := newTopN(4)
	if tn.size != 256 {
		t.Fatalf("size %d, want 256", tn.size)
	}
	if newTopN(100).size != 800 {
		t.Fatalf("size %d for n=100, want 800", newTopN(100).size)
	}
	for i := range 4 {
		tn.label(fmt.Sprint("named-", i), 10)
	}
	for i := range 10000 {
		if got := tn.label(fmt.Sprint("k", i), 2); got != Other {
			t.Fatalf("k%d named", i)
		}
		if len(tn.counts) > tn.size {
			t.Fatalf("%d keys counted, table size %d", len(tn.counts), tn.size)
		}
	}
	for i := range 4 {
		if _, ok := tn.counts[fmt.Sprint("named-", i)]; !ok {
			t.Fatalf("named-%d evicted", i)
		}
	}
	// The last key seen is in the table; give it the most traffic.
	tn.label("k9999", 1000)
	tn.label("k9998", 500)
	// Top 4: k9999, k9998, then named-0 and named-1 (10 each, by name).
	if demoted := tn.rerank(); !slices.Equal(demoted, []string{"named-2", "named-3"}) || len(tn.named) != 4 {
		t.Fatalf("demoted %q, named %v", demoted, tn.named)
	}
	for _, k := range []string{"k9999", "k9998"} {
		if _, ok := tn.named[k]; !ok {
			t.Errorf("%s not named: %v", k, tn.named)
		}
	}
}

// TestTopNEvictSmallest: the unnamed key with the least traffic leaves.
func TestTopNEvictSmallest(t *testing.T) {
	tn := newTopN(1)
	tn.label("named", 0) // named, count 0: never the victim
	for i := 1; i < tn.size; i++ {
		tn.label(fmt.Sprint("k", i), float64(i))
	}
	if len(tn.counts) != tn.size {
		t.Fatalf("%d counted, want %d", len(tn.counts), tn.size)
	}
	tn.label("new", 1000)
	if _, ok := tn.counts["k1"]; ok {
		t.Error("k1, the smallest unnamed key, was not evicted")
	}
	for _, k := range []string{"named", "k2", "new"} {
		if _, ok := tn.counts[k]; !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if len(tn.counts) != tn.size {
		t.Errorf("%d counted, want %d", len(tn.counts), tn.size)
	}
}

// countsOf is the table's counts by key.
func countsOf(tn *topN) map[string]float64 {
	out := make(map[string]float64, len(tn.counts))
	for k, sl := range tn.counts {
		out[k] = sl.count
	}
	return out
}

// TestTopNSlotsMatchReference: counting through held slots (again) and
// by key (find, label) leaves the table as the string-keyed topN before
// slots (refTopN) did, with evictions, forgotten keys and reranks.
func TestTopNSlotsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tn, ref := newTopN(3), newRefTopN(3)
	held := map[string]*slot{}
	for i := range 20000 {
		key := fmt.Sprint("k", rng.IntN(300)) // more keys than the table's 256
		weight := []float64{0, 1e-4, 1, 7, 1000}[rng.IntN(5)]
		var named bool
		switch sl := held[key]; {
		case sl != nil && rng.IntN(4) > 0:
			sl = tn.again(sl, weight)
			held[key], named = sl, sl.named
		case rng.IntN(2) == 0:
			sl = tn.find(key, weight)
			held[key], named = sl, sl.named
		default:
			named = tn.label(key, weight) == key
		}
		if want := ref.label(key, weight) == key; named != want {
			t.Fatalf("op %d: %s named %v, reference %v", i, key, named, want)
		}
		if rng.IntN(500) == 0 {
			if got, want := tn.rerank(), ref.rerank(); !slices.Equal(got, want) {
				t.Fatalf("op %d: demoted %q, reference %q", i, got, want)
			}
		}
		if got := countsOf(tn); !maps.Equal(got, ref.counts) {
			t.Fatalf("op %d: counts differ: %s", i, firstDifferent(got, ref.counts))
		}
		if got, want := slices.Sorted(maps.Keys(tn.named)), slices.Sorted(maps.Keys(ref.named)); !slices.Equal(got, want) {
			t.Fatalf("op %d: named %q, reference %q", i, got, want)
		}
	}
}

// TestTopNForgottenKeepsSlot: a named key forgotten by the decay (no
// longer counted) that comes back before it loses its name takes its old
// slot again, so a caller holding it still sees the key named.
func TestTopNForgottenKeepsSlot(t *testing.T) {
	tn := newTopN(1)
	old := tn.find("old", 1)
	for range 10 { // 1/2^10 < 1e-3
		tn.rerank()
	}
	if old.counted || !old.named {
		t.Fatalf("after the decay: %+v, want named and not counted", *old)
	}
	if again := tn.again(old, 5); again != old || !again.counted || !again.named || again.count != 5 {
		t.Fatalf("again: %+v (same slot %v)", *again, again == old)
	}
	if d := tn.rerank(); len(d) != 0 {
		t.Fatalf("demoted %q", d)
	}
}
