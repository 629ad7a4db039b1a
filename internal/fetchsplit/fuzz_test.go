package fetchsplit

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/reqlines"
)

// FuzzSplit feeds any requests (JSON Lines, as a recording holds them)
// through a splitter with small bounds: no panic, the bounds hold, no
// part is negative or NaN, the parts add up to the total and the
// abnormal part is within it.
func FuzzSplit(f *testing.F) {
	f.Add(reqlines.Of(fetch("10.0.0.5:5000", -50, -49, -48, 90, 1000, 100), produce(201, 100, 5), fetch("10.0.0.5:5000", 0, 205, 206, 100, 500, 105)))
	f.Add(reqlines.Of(fetch("10.0.0.5:5000", 0, 501, 502, 100, 0, 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(Options{MaxPartitions: 3})
		reqlines.Each(data, func(r *event.Request) {
			sp, ok := s.AddWith(r, Reading{Ns: int64(len(data)) * 1e5, DiskNs: int64(len(data)) * 5e4})
			if ok {
				checkSplit(t, sp)
			}
		})
		if s.marks.Len() > 3 || len(s.next) > 3 {
			t.Fatalf("%d partitions, %d positions: past the bounds", s.marks.Len(), len(s.next))
		}
		for _, h := range s.marks.All() {
			if len(h.marks) > maxMarks || !slices.IsSortedFunc(h.marks, func(a, b mark) int { return cmp.Compare(a.at, b.at) }) {
				t.Fatalf("%d marks, sorted by time: %v", len(h.marks), h.marks)
			}
		}
	})
}

func checkSplit(t *testing.T, sp Split) {
	t.Helper()
	parts := []float64{sp.TotalMs, sp.PurgatoryMs, sp.OtherMs, sp.ReadingMs, sp.DiskMs, sp.SendingMs, sp.AbnormalMs}
	for _, v := range parts {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("split %+v: a part is negative or not a number", sp)
		}
	}
	if sum := sp.PurgatoryMs + sp.OtherMs + sp.ReadingMs + sp.SendingMs; math.Abs(sum-sp.TotalMs) > 1e-6*max(1, sp.TotalMs) {
		t.Fatalf("split %+v: parts add up to %v", sp, sum)
	}
	if sp.AbnormalMs > sp.TotalMs+1e-9 || sp.DiskMs > sp.ReadingMs {
		t.Fatalf("split %+v: abnormal beyond the total, or disk beyond reading", sp)
	}
}
