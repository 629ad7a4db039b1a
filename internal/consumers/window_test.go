package consumers

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWindowKeepsTheNewest: whatever the pushes and keeps, a window
// holds what a plain slice bounded by dropping its oldest holds, and
// returns the values it drops in order.
func TestWindowKeepsTheNewest(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		keep float64 // share of steps that keep a prefix
	}{
		{"pushes only, far past the bound", 16, 0},
		{"pushes and keeps", 16, 0.2},
		{"mostly keeps", 16, 0.7},
		{"bound of one", 1, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(tc.n)))
			var w window[int]
			var ref, dropped, refDropped []int
			for step := range 5000 {
				if rng.Float64() < tc.keep {
					k := rng.IntN(len(ref) + 1)
					ref = ref[:k]
					w.keep(k)
				} else {
					if len(ref) == tc.n {
						refDropped = append(refDropped, ref[0])
						ref = ref[1:]
					}
					ref = append(ref, step)
					if old, ok := w.push(step, tc.n); ok {
						dropped = append(dropped, old)
					}
				}
				if !slices.Equal(w.items(), ref) || !slices.Equal(dropped, refDropped) {
					t.Fatalf("step %d: holds %v, dropped %v; want %v, %v", step, w.items(), dropped, ref, refDropped)
				}
				if cap(w.array) > 4*tc.n+8 {
					t.Fatalf("step %d: array of %d for a bound of %d", step, cap(w.array), tc.n)
				}
			}
		})
	}
}
