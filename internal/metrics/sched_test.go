package metrics

import (
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestThreadClass(t *testing.T) {
	tests := []struct {
		name    string
		network bool
		want    string
	}{
		{"data-plane-kafk", false, ThreadHandler},
		{"data-plane-kafk", true, ThreadNetwork}, // a network thread's comm is the handlers'
		{"kafka-request-h", false, ThreadHandler},
		{"VM Thread", false, ThreadJVM},
		{"GC Thread#3", false, ThreadJVM},
		{"kafka-scheduler", false, ThreadOther},
		{"kafka-1-raft-io", false, ThreadOther},
		{"", false, ThreadOther},
	}
	for _, tt := range tests {
		if got := ThreadClass(tt.name, tt.network); got != tt.want {
			t.Errorf("ThreadClass(%q, %v) = %q, want %q", tt.name, tt.network, got, tt.want)
		}
	}
}

func TestRunDelayAndThrottle(t *testing.T) {
	s, reg := newSet(t, Options{})
	d := func(ms int) *event.RunDelay {
		return &event.RunDelay{Start: t0, End: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	s.RunDelay(d(2), ThreadHandler)
	s.RunDelay(d(30), ThreadHandler)
	s.RunDelay(d(5), ThreadNetwork)
	s.Throttle(&event.CPUThrottle{Start: t0, End: t0.Add(time.Duration(100) * time.Millisecond), Cgroup: "/kafka", Periods: 2, ThrottledMs: 250})
	s.Throttle(&event.CPUThrottle{Start: t0, End: t0.Add(time.Duration(100) * time.Millisecond), Cgroup: "/kafka", Periods: 1, ThrottledMs: 50})
	fams := families(t, reg)
	if got := value(t, fams, "kscope_run_delay_seconds", map[string]string{"thread": ThreadHandler}); got != 2 {
		t.Errorf("handler run delays counted %v, want 2", got)
	}
	if got := value(t, fams, "kscope_run_delay_seconds", map[string]string{"thread": ThreadNetwork}); got != 1 {
		t.Errorf("network run delays counted %v, want 1", got)
	}
	h := lookup(fams, "kscope_run_delay_seconds", map[string]string{"thread": ThreadHandler}).GetHistogram()
	if sum := h.GetSampleSum(); sum < 0.0319 || sum > 0.0321 {
		t.Errorf("handler run delay sum %v s, want 0.032", sum)
	}
	if got := value(t, fams, "kscope_cgroup_throttled_seconds_total", map[string]string{"cgroup": "/kafka"}); got != 0.3 {
		t.Errorf("throttled %v s, want 0.3", got)
	}
}
