package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

func onPartition(p int32) func(*event.Write) {
	return func(w *event.Write) {
		w.Partition = p
		w.File = "t-" + itoa(int32(p)) + "/00000000000000000000.log"
	}
}

func TestRequestQueue(t *testing.T) {
	const client = "127.0.0.1:40000"
	// Handlers 11 and 12 appended to t-1 before (they are handlers);
	// the request goes to t-0, appended by 11 at 90.
	base := []*event.Write{wr(11, -500, -499.9, 300, onPartition(1)), wr(12, -400, -399.9, 300, onPartition(1)), wr(11, 90, 90.1, 100)}
	tests := []struct {
		name    string
		writes  []*event.Write
		wakeups []*event.Wakeup
		delays  []*event.RunDelay
		conns   []*event.ConnThread
		cause   string
		detail  []string
	}{
		{
			name:    "every handler held by another partition's flush",
			writes:  append([]*event.Write{wr(11, 1, 1.1, 300, onPartition(1))}, base...),
			wakeups: []*event.Wakeup{wakeup(11, 1.5, 89, 31, "kafka-schedule"), wakeup(12, 2, 89.5, 11, "data-plane-kafk")},
			cause:   CauseRequestQueue,
			detail:  []string{"all 2 were busy", "tid 11 asleep until kafka-schedule woke it", "tid 12 asleep until data-plane-kafk woke it"},
		},
		{
			name:   "busy with other partitions' slow appends and a wait for a CPU",
			writes: append([]*event.Write{wr(11, 1, 60, 300, onPartition(1)), wr(12, 2, 89, 300, onPartition(2))}, base...),
			delays: []*event.RunDelay{runDelay(11, 60, 89.5, "hog")},
			cause:  CauseRequestQueue,
			detail: []string{"tid 12 appending to t-2", "tid 11 appending to t-1"},
		},
		{
			name:    "a handler polling a monitor in timed sleeps until the other let it go",
			writes:  append([]*event.Write{wr(11, 1, 1.1, 300, onPartition(1))}, base...),
			wakeups: append(monitorPolls(12, 2, 89.5, 11, "data-plane-kafk"), wakeup(11, 1.5, 89, 31, "kafka-schedule")),
			cause:   CauseRequestQueue,
			detail:  []string{"all 2 were busy", "tid 12 asleep until data-plane-kafk woke it"},
		},
		{
			name:    "a handler whose timed sleeps nobody ended is not known to be busy: no queue",
			writes:  append([]*event.Write{wr(11, 1, 1.1, 300, onPartition(1))}, base...),
			wakeups: []*event.Wakeup{wakeup(11, 1.5, 89, 31, "kafka-schedule"), timedOut(12, 2, 50), timedOut(12, 50.01, 89.5)},
			cause:   CauseUnexplained,
		},
		{
			name:    "a handler idle meanwhile (the network thread woke it): no queue",
			writes:  append([]*event.Write{wr(11, 1, 1.1, 300, onPartition(1)), wr(13, -300, -299.9, 300, onPartition(1))}, base...),
			wakeups: []*event.Wakeup{wakeup(11, 1.5, 89, 31, "kafka-schedule"), wakeup(12, 2, 89.5, 11, "data-plane-kafk"), wakeup(13, -100, 89, 21, "data-plane-kafk")},
			conns:   []*event.ConnThread{connThread(21, client, -1000)},
			cause:   CauseUnexplained,
		},
		{
			name:    "a handler on a CPU is not known to be busy: no queue",
			writes:  append([]*event.Write{wr(11, 1, 1.1, 300, onPartition(1))}, base...),
			wakeups: []*event.Wakeup{wakeup(11, 1.5, 89, 31, "kafka-schedule")},
			cause:   CauseUnexplained,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, tt.writes, tt.wakeups, tt.delays, tt.conns), nil).Explain(req(1, 0, 100))
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			for _, d := range tt.detail {
				if !strings.Contains(f.Detail, d) {
					t.Errorf("detail %q lacks %q", f.Detail, d)
				}
			}
			if f.Cause == CauseRequestQueue && (len(f.QueueHandlers) != 2 || f.ExplainedMs < 50) {
				t.Errorf("request-queue with handlers %+v, %.1f ms", f.QueueHandlers, f.ExplainedMs)
			}
		})
	}
}

// TestRequestQueueTimedSleeps: a handler asleep on a timer longer than
// the idle handler's poll of the request queue (300 ms) was busy inside
// a request; shorter timed sleeps, one after the other, are that poll.
func TestRequestQueueTimedSleeps(t *testing.T) {
	base := []*event.Write{wr(11, -500, -499.9, 300, onPartition(1)), wr(12, -400, -399.9, 300, onPartition(1)), wr(11, 690, 690.1, 100)}
	for _, tt := range []struct {
		name    string
		wakeups []*event.Wakeup
		cause   string
	}{
		{"a 688 ms timed sleep, and the JVM's monitor backoff up to a 512 ms sleep: queued", []*event.Wakeup{
			timedOut(11, 1, 689),
			timedOut(12, 2, 3), timedOut(12, 3.01, 11), timedOut(12, 11.01, 75), timedOut(12, 75.01, 587), timedOut(12, 587.01, 689.5)}, CauseRequestQueue},
		{"idle polls of 300 ms one after the other: not known busy", []*event.Wakeup{
			timedOut(11, 1, 300), timedOut(11, 300.01, 600), timedOut(11, 600.01, 689),
			timedOut(12, 2, 301), timedOut(12, 301.01, 601), timedOut(12, 601.01, 689.5)}, CauseUnexplained},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, base, tt.wakeups, []*event.RunDelay(nil), []*event.ConnThread(nil)), nil).Explain(req(1, 0, 700))
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
		})
	}
}

func TestInFlight(t *testing.T) {
	// Requests [0,10), [2,5), [4,20), [5,6).
	f := inFlight{arrivals: []int64{0, 2, 4, 5}, ends: []int64{5, 6, 10, 20}}
	for _, tt := range []struct {
		t    int64
		want int
	}{{-1, 0}, {0, 1}, {3, 2}, {4, 3}, {5, 3}, {6, 2}, {10, 1}, {19, 1}, {20, 0}} {
		if got := f.at(tt.t); got != tt.want {
			t.Errorf("at(%d) = %d, want %d", tt.t, got, tt.want)
		}
	}
}
