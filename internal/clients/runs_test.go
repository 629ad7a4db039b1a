package clients

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestRunsAgreeWithAHistogram: whatever the values and their repeats,
// the distribution recorded by runs is the one recorded value by value,
// also when it is read in the middle of a run and recorded into after.
func TestRunsAgreeWithAHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name   string
		values []int64
	}{
		{"one value", []int64{7}},
		{"repeats", []int64{1, 1, 1, 1}},
		{"alternating", []int64{1, 2, 1, 2, 1}},
		{"runs", []int64{3, 3, 3, 900, 900, 1, 3, 3}},
		{"out of range", []int64{1 << 50, 1 << 50, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, want := newRuns(), newHist()
			for i, v := range tc.values {
				n := int64(rng.IntN(3)) // 0 counts nothing
				r.record(v, n)
				_ = want.RecordValues(v, n)
				if i == len(tc.values)/2 {
					if got := dist(r.histogram(), 1); got != dist(want, 1) {
						t.Fatalf("midway: %+v, want %+v", got, dist(want, 1))
					}
				}
			}
			if got := dist(r.histogram(), 1); got != dist(want, 1) || r.h.TotalCount() != want.TotalCount() {
				t.Fatalf("%+v, want %+v", got, dist(want, 1))
			}
		})
	}
}

// TestTallyAgreesWithAMap: the counts of a tally are a map's, its limit
// included (values past it are not counted, as before it had a cache).
func TestTallyAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, limit := range []int{0, 3} {
		tl, want := newTally[int32](limit), map[int32]int64{}
		for range 10_000 {
			v := int32(rng.IntN(6))
			if rng.IntN(4) > 0 {
				v = 2 // mostly one value, as a client's setting
			}
			tl.add(v)
			if _, ok := want[v]; ok || limit == 0 || len(want) < limit {
				want[v]++
			}
		}
		if got := tl.counts(); !maps.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if got := newTally[string](0); got.counts() == nil {
		t.Fatal("counts of nothing is nil, want an empty map (JSON {})")
	}
}
