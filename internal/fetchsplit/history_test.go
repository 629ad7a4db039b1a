package fetchsplit

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceAdd is history.add as first written: the marks shifted down
// at the bound. history must keep exactly the same marks.
func referenceAdd(ms []mark, at, hwm int64) []mark {
	i, _ := slices.BinarySearchFunc(ms, at, func(m mark, t int64) int { return cmp.Compare(m.at, t+1) })
	if i > 0 && ms[i-1].hwm >= hwm {
		return ms
	}
	j := i
	for j < len(ms) && ms[j].hwm <= hwm {
		j++
	}
	ms = slices.Replace(ms, i, j, mark{at, hwm})
	if len(ms) > maxMarks {
		ms = slices.Delete(ms, 0, len(ms)-maxMarks)
	}
	return ms
}

func TestHistoryKeepsTheReferenceMarks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// late is the share of marks that come out of time order; stale
		// the share whose watermark is below the last one.
		late, stale float64
		n           int
	}{
		{"in order, past the bound many times", 0, 0, 20 * maxMarks},
		{"in order, some stale watermarks", 0, 0.2, 10 * maxMarks},
		{"some out of time order", 0.1, 0.1, 10 * maxMarks},
		{"mostly out of order", 0.7, 0.3, 10 * maxMarks},
		{"below the bound", 0.1, 0.1, maxMarks - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			var h history
			var ref []mark
			at, hwm := int64(0), int64(0)
			for k := range tc.n {
				at += 1 + rng.Int64N(1000)
				hwm += rng.Int64N(10)
				a, w := at, hwm
				if rng.Float64() < tc.late {
					a -= rng.Int64N(50_000)
				}
				if rng.Float64() < tc.stale {
					w -= rng.Int64N(100)
				}
				h.add(a, w)
				ref = referenceAdd(ref, a, w)
				if !slices.Equal(h.marks, ref) {
					t.Fatalf("after %d marks: %v\nwant %v", k+1, h.marks, ref)
				}
			}
		})
	}
}

// BenchmarkHistoryAdd is the common case: marks in time order, at the
// bound.
func BenchmarkHistoryAdd(b *testing.B) {
	var h history
	i := int64(0)
	for b.Loop() {
		i++
		h.add(i*1000, i)
	}
}
