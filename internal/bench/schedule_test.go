package bench

import (
	"sort"
	"testing"
	"time"
)

func TestScheduleDue(t *testing.T) {
	tests := []struct {
		name string
		s    schedule
		p    int
		j    uint64
		want int64
	}{
		{"first message of producer 0 is at t0", schedule{t0: 1000, rate: 2000, n: 1}, 0, 0, 1000},
		{"one producer at 2000/s: 500 µs apart", schedule{t0: 0, rate: 2000, n: 1}, 0, 3, 1_500_000},
		{"producers interleave: p1 of 2 is half an interval later", schedule{t0: 0, rate: 2000, n: 2}, 1, 0, 500_000},
		{"p1 of 2, its 3rd message", schedule{t0: 0, rate: 2000, n: 2}, 1, 2, 2_500_000},
		{"no drift after a day at 3/s (from t0, not summed)", schedule{t0: 0, rate: 3, n: 1}, 0, 3 * 86400, 86400e9},
		{"fractional rate", schedule{t0: 7, rate: 0.5, n: 1}, 0, 2, 7 + 4e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.due(tt.p, tt.j); got != tt.want {
				t.Errorf("due(%d, %d) = %d, want %d", tt.p, tt.j, got, tt.want)
			}
		})
	}
}

// All producers together follow one evenly spaced plan at the target rate.
func TestScheduleInterleavesEvenly(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		s := schedule{t0: 0, rate: 1000, n: n}
		var all []int64
		for p := 0; p < n; p++ {
			for j := uint64(0); j < 100; j++ {
				all = append(all, s.due(p, j))
			}
		}
		sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
		for i := 1; i < len(all); i++ {
			if d := all[i] - all[i-1]; d != int64(time.Millisecond) {
				t.Fatalf("n=%d: gap %d between messages %d and %d, want 1 ms", n, d, i-1, i)
			}
		}
	}
}

func TestScheduleCount(t *testing.T) {
	tests := []struct {
		s    schedule
		end  int64
		want []uint64 // per producer
	}{
		{schedule{t0: 0, rate: 2000, n: 1}, 1e9, []uint64{2000}},
		{schedule{t0: 0, rate: 2000, n: 2}, 1e9, []uint64{1000, 1000}},
		{schedule{t0: 0, rate: 2000, n: 3}, 1e9, []uint64{667, 667, 666}},
		{schedule{t0: 5e9, rate: 100, n: 2}, 6e9 + 1, []uint64{51, 50}},
		{schedule{t0: 5e9, rate: 100, n: 2}, 4e9, []uint64{0, 0}},
	}
	for _, tt := range tests {
		var total uint64
		for p, want := range tt.want {
			got := tt.s.count(p, tt.end)
			if got != want {
				t.Errorf("%+v count(%d, %d) = %d, want %d", tt.s, p, tt.end, got, want)
			}
			// count agrees with due: message count-1 is before end, count is not.
			if got > 0 && tt.s.due(p, got-1) >= tt.end || tt.s.due(p, got) < tt.end {
				t.Errorf("%+v count(%d) = %d disagrees with due", tt.s, p, got)
			}
			total += got
		}
		if tt.end > tt.s.t0 {
			if want := uint64(float64(tt.end-tt.s.t0) * tt.s.rate / 1e9); total < want || total > want+1 {
				t.Errorf("%+v: %d messages before %d, want ~%d", tt.s, total, tt.end, want)
			}
		}
	}
}

// The sleeper wakes close to the due time (the bound is loose: CI machines
// are shared) and stops at once when told to.
func TestSleeper(t *testing.T) {
	clk := newClock()
	sl := sleeper{clk: clk}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lockThread()
		var late []int64
		for i := 0; i < 50; i++ {
			due := clk.now() + 300_000
			if !sl.until(due, nil) {
				t.Error("until returned false without stop")
				return
			}
			late = append(late, clk.now()-due)
		}
		sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })
		t.Logf("lateness p50 %v max %v", time.Duration(late[25]), time.Duration(late[49]))
		if late[0] < 0 {
			t.Errorf("woke %v early", time.Duration(-late[0]))
		}
		if late[25] > int64(2*time.Millisecond) {
			t.Errorf("median lateness %v", time.Duration(late[25]))
		}
	}()
	<-done

	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	if sl.until(clk.now()+int64(time.Hour), stop) {
		t.Error("until did not stop")
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("stopping took %v", d)
	}
}
