package findings

import (
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/recording"
)

// slowSummary is explain's summary of 10 000 produce requests with slow
// requests of thresholdMs or more put on causes.
func slowSummary(thresholdMs float64, from string, causes ...explain.CauseStat) *explain.Summary {
	s := &explain.Summary{ProduceRequests: 10000, ThresholdMs: thresholdMs, ThresholdFrom: from, Causes: causes}
	for _, c := range causes {
		s.Slow += c.Requests
	}
	return s
}

func TestCollect(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		ev    Evidence
		worst Severity
		// first is the first finding's check and title prefix.
		firstCheck, firstTitle string
	}{
		{
			name:       "healthy: nothing slow, a low p99",
			ev:         Evidence{Latency: Latency{Requests: 5000, P50: 2, P99: 20, P999: 40, Max: 60}, Summary: slowSummary(100, "--slow")},
			worst:      Note,
			firstCheck: "latency", firstTitle: "produce latency over 5000 requests: p50 2.0 ms, p99 20.0 ms",
		},
		{
			name: "the p99 of a healthy broker explained: notes only",
			ev: Evidence{Latency: Latency{Requests: 10000, P99: 23}, Summary: slowSummary(23, "p99",
				explain.CauseStat{Cause: explain.CauseCPUStarved, Requests: 90, LatencyMs: 2500},
				explain.CauseStat{Cause: explain.CauseGCPause, Requests: 10, LatencyMs: 300})},
			worst:      Note,
			firstCheck: "slow-requests", firstTitle: "cpu-starved: 90 of the 100 produce requests of 23.0 ms or more (the p99)",
		},
		{
			name: "a stray slow request: a warning",
			ev: Evidence{Latency: Latency{Requests: 10000}, Summary: slowSummary(100, "--slow",
				explain.CauseStat{Cause: explain.CauseGCPause, Requests: 2, LatencyMs: 250})},
			worst:      Warning,
			firstCheck: "slow-requests", firstTitle: "gc-pause: 2 of the 2 produce requests of 100 ms or more (slow)",
		},
		{
			name: "slow requests that shape the p99.9: an alarm, the heaviest cause first",
			ev: Evidence{Latency: Latency{Requests: 10000}, Summary: slowSummary(100, "--slow",
				explain.CauseStat{Cause: explain.CauseSlowWrite, Requests: 20, LatencyMs: 4000},
				explain.CauseStat{Cause: explain.CauseLockWait, Requests: 40, LatencyMs: 9000})},
			worst:      Alarm,
			firstCheck: "slow-requests", firstTitle: "lock-wait: 40 of the 60",
		},
		{
			name: "a stall of 500 ms: an alarm",
			ev: Evidence{Summary: &explain.Summary{Stalls: []explain.Stall{
				{Dev: "7:0", Start: at, DurationMs: 300, Partitions: []string{"t-0"}, Requests: 5},
				{Dev: "7:0", Start: at.Add(2 * time.Second), DurationMs: 500, Partitions: []string{"t-1"}, Requests: 9}}},
				Latency: Latency{Requests: 100}},
			worst:      Alarm,
			firstCheck: "stalls", firstTitle: "the file system on device 7:0 stopped completing the broker's writes 2 times, for up to 500 ms",
		},
		{
			name: "a stall under the alarm threshold: a warning",
			ev: Evidence{Summary: &explain.Summary{Stalls: []explain.Stall{{Dev: "8:16", Start: at, DurationMs: 60}}},
				Latency: Latency{Requests: 100}},
			worst:      Warning,
			firstCheck: "stalls", firstTitle: "the file system on device 8:16 stopped completing the broker's writes once",
		},
		{
			name: "CPU saturated most of the time, requests starved: an alarm, after the requests'",
			ev: Evidence{Use: &Use{Intervals: 10, Verdicts: []UseVerdict{{Resource: "cpu", Kind: "saturation", Intervals: 6, Reason: "run queue 4.0 > 2 CPUs"}}},
				Latency: Latency{Requests: 10000, P999: 150}, Summary: slowSummary(100, "--slow",
					explain.CauseStat{Cause: explain.CauseCPUStarved, Requests: 40, LatencyMs: 6000})},
			worst:      Alarm,
			firstCheck: "slow-requests", firstTitle: "cpu-starved: 40 of the 40",
		},
		{
			name: "CPU saturated while the file system froze: the saturation is no alarm",
			ev: Evidence{Use: &Use{Intervals: 7, Verdicts: []UseVerdict{{Resource: "cpu", Kind: "saturation", Intervals: 6}}},
				Latency: Latency{Requests: 10000, P999: 550}, Summary: slowSummary(100, "--slow",
					explain.CauseStat{Cause: explain.CauseLockWait, Requests: 20, LatencyMs: 9000},
					explain.CauseStat{Cause: explain.CauseSlowWrite, Requests: 12, LatencyMs: 6000})},
			worst:      Alarm,
			firstCheck: "slow-requests", firstTitle: "lock-wait: 20 of the 32",
		},
		{
			name: "CPU saturated most of the time, requests fast: a warning",
			ev: Evidence{Use: &Use{Intervals: 10, Verdicts: []UseVerdict{{Resource: "cpu", Kind: "saturation", Intervals: 10, Reason: "run queue 4.1 > 2 CPUs"}}},
				Latency: Latency{Requests: 1700, P99: 7.6, P999: 15.7}},
			worst:      Warning,
			firstCheck: "use", firstTitle: "cpu saturated in 10 of the 10 seconds sampled (100%)",
		},
		{
			name: "CPU saturated for a second: a warning",
			ev: Evidence{Use: &Use{Intervals: 10, Verdicts: []UseVerdict{{Resource: "cpu", Kind: "saturation", Intervals: 1}}},
				Latency: Latency{Requests: 100}},
			worst:      Warning,
			firstCheck: "use", firstTitle: "cpu saturated in 1 of the 10 seconds",
		},
		{
			name: "a lower alarm threshold makes the same requests alarming",
			ev: Evidence{AlarmMs: 20, Latency: Latency{Requests: 10000, P99: 23}, Summary: slowSummary(23, "p99",
				explain.CauseStat{Cause: explain.CauseCPUStarved, Requests: 90, LatencyMs: 2500})},
			worst:      Alarm,
			firstCheck: "slow-requests", firstTitle: "cpu-starved: 90 of the 90",
		},
		{
			name:       "no produce request at all",
			ev:         Evidence{},
			worst:      Note,
			firstCheck: "latency", firstTitle: "no answered produce request was seen",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Collect(&tt.ev)
			for _, f := range fs {
				t.Logf("%s", f)
			}
			if got := Worst(fs); got != tt.worst {
				t.Errorf("worst %s, want %s", got, tt.worst)
			}
			if len(fs) == 0 {
				t.Fatal("no findings")
			}
			if fs[0].Check != tt.firstCheck || !strings.HasPrefix(fs[0].Title, tt.firstTitle) {
				t.Errorf("first finding %s, want check %s titled %q...", fs[0], tt.firstCheck, tt.firstTitle)
			}
			for _, f := range fs {
				if f.Check == "use" && f.Severity == Alarm && tt.name == "CPU saturated while the file system froze: the saturation is no alarm" {
					t.Errorf("CPU saturation is an alarm although no slow request waited for a CPU: %s", f)
				}
			}
			for i := 1; i < len(fs); i++ {
				if fs[i].Severity > fs[i-1].Severity {
					t.Errorf("finding %d (%s) ranked after a less severe one", i, fs[i].Severity)
				}
			}
		})
	}
}

func TestNextCommand(t *testing.T) {
	slowest := []*explain.Finding{{Cause: explain.CauseSlowWrite, Client: "127.0.0.1:5000", CorrelationID: 7, LatencyMs: 500, Detail: "its append took 490 ms"}}
	ev := Evidence{Dir: "/tmp/rec dir", Slowest: slowest, Summary: slowSummary(100, "--slow",
		explain.CauseStat{Cause: explain.CauseSlowWrite, Requests: 30, LatencyMs: 9000})}
	var f *Finding
	for _, x := range Collect(&ev) {
		if x.Check == "slow-requests" {
			f = &x
		}
	}
	if f == nil {
		t.Fatal("no slow-requests finding")
	}
	if want := "kscope explain '/tmp/rec dir' --slow 100ms --request 127.0.0.1:5000/7"; f.Next != want {
		t.Errorf("next %q, want %q", f.Next, want)
	}
	if !strings.Contains(f.Evidence, "its append took 490 ms") {
		t.Errorf("evidence %q does not carry the slowest request's detail", f.Evidence)
	}
}

func TestEvidenceNotes(t *testing.T) {
	m := &recording.Meta{}
	m.Capture.KernelDrops = 12
	fs := Collect(&Evidence{Meta: m, Latency: Latency{Requests: 1}})
	if Worst(fs) != Warning {
		t.Errorf("packet losses: worst %s, want a warning: %v", Worst(fs), fs)
	}
}

func TestSeverityText(t *testing.T) {
	for _, s := range []Severity{Note, Warning, Alarm} {
		b, _ := s.MarshalText()
		var back Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%s: round trip gave %v, %v", s, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("dire")); err == nil {
		t.Error("an unknown severity was read")
	}
}

// TestCheckInOneFile: a check is one register call in its own file; it
// is then listed, run, and its findings named after it and ranked with
// the others, with no other edit.
func TestCheckInOneFile(t *testing.T) {
	register("test-only", 5, func(e *Evidence) []Finding {
		return []Finding{{Severity: Alarm, Title: "the test-only check ran", Weight: 1}}
	})
	t.Cleanup(func() {
		checks.mu.Lock()
		defer checks.mu.Unlock()
		checks.checks = checks.checks[:len(checks.checks)-1]
	})
	if names := Checks(); names[0] != "test-only" {
		t.Errorf("checks %v: the test-only check (order 5) is not first", names)
	}
	fs := Collect(&Evidence{Latency: Latency{Requests: 10}})
	if fs[0].Check != "test-only" || fs[0].Title != "the test-only check ran" {
		t.Errorf("first finding %s, want the test-only check's alarm", fs[0])
	}
}
