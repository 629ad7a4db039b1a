package explain

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// wakeup is a sleep of tid from a to b (ms after t0) that thread by ended.
func wakeup(tid int, a, b float64, by int, byName string) *event.Wakeup {
	return &event.Wakeup{Kind: event.KindWakeup, Start: at(a), End: at(b), SleptMs: b - a, TID: tid, Thread: "data-plane-kafk",
		WakerTID: by, WakerThread: byName}
}

// flusherSync is the log flusher (tid) syncing a file of partition p of
// topic t from a to b.
func flusherSync(tid int, a, b float64, p int32) *event.Write {
	return wr(tid, a, b, 0, onPartition(p), func(w *event.Write) { w.Op, w.Thread = "fsync", "kafka-scheduler" })
}

// timedOut is a sleep of tid from a to b that its own timeout ended.
func timedOut(tid int, a, b float64) *event.Wakeup {
	return &event.Wakeup{Kind: event.KindWakeup, Start: at(a), End: at(b), SleptMs: b - a, TID: tid, Thread: "data-plane-kafk", Timer: true}
}

// monitorPolls is tid waiting for a contended JVM monitor from a until
// by let it go at b: timed sleeps of 1, 8 and 64 ms (a few microseconds
// apart, as the JVM tries the monitor again), then one that by ended.
func monitorPolls(tid int, a, b float64, by int, byName string) []*event.Wakeup {
	return []*event.Wakeup{timedOut(tid, a, a+1), timedOut(tid, a+1.01, a+9.01), timedOut(tid, a+9.02, a+73.02), wakeup(tid, a+73.03, b, by, byName)}
}

// msAfterT0 is t in ms after t0, at's inverse.
func msAfterT0(t time.Time) float64 { return float64(t.Sub(t0)) / float64(time.Millisecond) }

func TestJoinTimedSleeps(t *testing.T) {
	tests := []struct {
		name string
		in   []*event.Wakeup
		want [][2]float64 // the waits left, [start, end]
	}{
		{"a monitor polled until its owner let it go", monitorPolls(12, 2, 89.5, 11, "data-plane-kafk"), [][2]float64{{2, 89.5}}},
		{"timed sleeps that nobody ended: dropped", []*event.Wakeup{timedOut(12, 0, 300), timedOut(12, 300.1, 600)}, nil},
		{"a thread that ran between: not one wait", []*event.Wakeup{timedOut(12, 0, 10), wakeup(12, 15, 20, 11, "x")}, [][2]float64{{15, 20}}},
		{"a wake-up by a thread ends the chain", []*event.Wakeup{timedOut(12, 0, 10), wakeup(12, 10.5, 20, 11, "x"), wakeup(12, 20.5, 30, 11, "x")}, [][2]float64{{0, 20}, {20.5, 30}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := make([]event.Wakeup, len(tt.in))
			for i, w := range tt.in {
				ws[i] = *w
			}
			var got [][2]float64
			for _, w := range joinTimedSleeps(ws) {
				got = append(got, [2]float64{msAfterT0(w.Start), msAfterT0(w.End)})
				if math.Abs(w.SleptMs-(msAfterT0(w.End)-msAfterT0(w.Start))) > 1e-6 {
					t.Errorf("slept %.2f ms from %.2f to %.2f", w.SleptMs, msAfterT0(w.Start), msAfterT0(w.End))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("waits %v, want %v", got, tt.want)
			}
		})
	}
}

// park is a JFR untimed park (or, with a monitor's owner, a monitor wait)
// of tid from a to b.
func park(tid int, a, b float64, class string) *event.LockWait {
	return &event.LockWait{Start: at(a), End: at(b), LatencyMs: b - a, TID: tid, Thread: "data-plane-kafka-request-handler-1", Monitor: class, Park: true}
}

func monitorWait(tid int, a, b float64, owner int) *event.LockWait {
	return &event.LockWait{Start: at(a), End: at(b), LatencyMs: b - a, TID: tid, Thread: "data-plane-kafka-request-handler-2",
		Monitor: "java.lang.Object", OwnerTID: owner, Owner: "data-plane-kafka-request-handler-1"}
}

const indexLock = "java.util.concurrent.locks.ReentrantLock$NonfairSync"

var msyncStack = []string{"__schedule", "io_schedule", "folio_wait_bit_common", "folio_wait_writeback", "__filemap_fdatawait_range", "file_write_and_wait_range", "ext4_sync_file", "__x64_sys_msync"}

func TestParkWait(t *testing.T) {
	const client = "127.0.0.1:40000"
	tests := []struct {
		name    string
		writes  []*event.Write
		parks   []*event.LockWait
		wakeups []*event.Wakeup
		waits   []*event.KernelWait
		conns   []*event.ConnThread
		delays  []*event.RunDelay
		req     *event.Request
		cause   string
		also    []string
		detail  []string
		depth1  bool // evidence follows the waker's own sleep
	}{
		{
			name:    "parked on the index lock after its append, the holder in msync (JFR and the tracer)",
			writes:  []*event.Write{wr(11, 5, 5.1, 100)},
			parks:   []*event.LockWait{park(11, 5.2, 90, indexLock)},
			wakeups: []*event.Wakeup{wakeup(11, 5.2, 90.1, 31, "kafka-schedule")},
			waits:   []*event.KernelWait{kwait(31, 6, 89, msyncStack...)},
			req:     req(1, 0, 100),
			cause:   CauseParkWait,
			detail:  []string{"parked on " + indexLock, "until kafka-schedule (tid 31) let it go", "file_write_and_wait_range"},
		},
		{
			name:    "the tracer alone: a sleep another broker thread ended",
			writes:  []*event.Write{wr(11, 5, 5.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 5.2, 90, 31, "kafka-schedule")},
			req:     req(2, 0, 100),
			cause:   CauseParkWait,
			detail:  []string{"waited 84.8 ms until kafka-schedule (tid 31)"},
		},
		{
			name:    "a sleep the network thread ended is an idle handler, not a wait",
			writes:  []*event.Write{wr(11, 90, 90.1, 100)},
			conns:   []*event.ConnThread{connThread(21, client, -1000)},
			wakeups: []*event.Wakeup{wakeup(11, -200, 89, 21, "data-plane-kafk")},
			req:     req(3, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "a JFR park the network thread ended (the request queue) is no wait either",
			writes:  []*event.Write{wr(11, 90, 90.1, 100)},
			conns:   []*event.ConnThread{connThread(21, client, -1000)},
			parks:   []*event.LockWait{park(11, 2, 89, "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject")},
			wakeups: []*event.Wakeup{wakeup(11, 2, 89, 21, "data-plane-kafk")},
			req:     req(4, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "woken by the thread appending to its partition: the partition's lock",
			writes:  []*event.Write{wr(12, 1, 88, 200), wr(11, 89, 89.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 2, 88.5, 12, "data-plane-kafk")},
			req:     req(5, 0, 100),
			cause:   CauseLockWait,
		},
		{
			name:    "a monitor held by a parked owner is the owner's park",
			writes:  []*event.Write{wr(12, 1, 1.1, 200), wr(11, 92, 92.1, 100)},
			parks:   []*event.LockWait{monitorWait(11, 3, 91, 12), park(12, 1.2, 90.5, indexLock)},
			wakeups: []*event.Wakeup{wakeup(12, 1.2, 90.5, 31, "kafka-schedule"), wakeup(11, 3, 91, 12, "data-plane-kafk")},
			waits:   []*event.KernelWait{kwait(31, 2, 90, msyncStack...)},
			req:     req(6, 0, 100),
			cause:   CauseParkWait,
			detail:  []string{"which waited", "kafka-schedule (tid 31)"},
			depth1:  true,
		},
		{
			name:    "acks=all with followers: a sleep after the last append is another request's",
			writes:  []*event.Write{wr(11, 5, 5.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 6, 90, 31, "kafka-schedule")},
			req:     req(7, 0, 100, func(r *event.Request) { r.Acks = i16(-1) }),
			cause:   CauseReplication,
		},
		{
			name: "a sleep right after its append for another request, the flusher syncing that one's partition: that request's (its index entry)",
			writes: []*event.Write{wr(11, 5, 5.1, 100, onPartition(1)), wr(11, 90, 90.1, 100), flusherSync(31, 4, 89.9, 1),
				wr(12, -50, -49.9, 100, onPartition(1))},
			wakeups: []*event.Wakeup{wakeup(11, 5.2, 89.9, 31, "kafka-schedule")},
			req:     req(12, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "a sleep right after its append for another request, the flusher syncing this one's partition: this request's",
			writes:  []*event.Write{wr(11, 5, 5.1, 100, onPartition(1)), wr(11, 90, 90.1, 100), flusherSync(31, 4, 89.9, 0)},
			wakeups: []*event.Wakeup{wakeup(11, 5.2, 89.9, 31, "kafka-schedule")},
			req:     req(12, 0, 100),
			cause:   CauseParkWait,
		},
		{
			name:    "a sleep before the broker could read it does not count",
			writes:  []*event.Write{wr(11, 90, 90.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 0, 58, 31, "kafka-schedule")},
			req:     req(8, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 60, 40 }),
			cause:   CauseUnexplained,
		},
		{
			name:    "too short a sleep",
			writes:  []*event.Write{wr(11, 90, 90.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 10, 40, 31, "kafka-schedule")},
			req:     req(9, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "a tie with a wait for a CPU goes to the earlier cause, the other listed",
			writes:  []*event.Write{wr(11, 96, 96.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 2, 48, 31, "kafka-schedule")},
			delays:  []*event.RunDelay{runDelay(11, 48, 94, "hog")},
			req:     req(10, 0, 100),
			cause:   CauseCPUStarved,
			also:    []string{CauseParkWait},
		},
		{
			name:    "handlers passing a monitor between them, none parked: no park",
			writes:  []*event.Write{wr(12, 1, 1.1, 200), wr(11, 92, 92.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 3, 91, 12, "data-plane-kafk")},
			req:     req(12, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "the tracer alone: woken by a handler that the flusher woke",
			writes:  []*event.Write{wr(12, 1, 1.1, 200), wr(11, 92, 92.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 3, 91, 12, "data-plane-kafk"), wakeup(12, 1.2, 90.5, 31, "kafka-schedule")},
			req:     req(13, 0, 100),
			cause:   CauseParkWait,
			detail:  []string{"which waited 89.3 ms for kafka-schedule (tid 31)"},
			depth1:  true,
		},
		{
			name:    "woken by the VM Thread at the end of a pause: the pause's, not a park",
			writes:  []*event.Write{wr(11, 92, 92.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 3, 91, 5, "VM Thread")},
			req:     req(14, 0, 100),
			cause:   CauseUnexplained,
		},
		{
			name:    "woken by the JVM's code cache sweeper, which waited for a CPU most of the sleep: the CPU held it",
			writes:  []*event.Write{wr(11, 92, 92.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 3, 91, 40, "Sweeper thread")},
			delays:  []*event.RunDelay{runDelay(40, 5, 85, "kscope-cpu-hog")},
			req:     req(15, 0, 100),
			cause:   CauseCPUStarved,
			detail:  []string{"the CPU went to kscope-cpu-hog"},
		},
		{
			name:    "woken by the sweeper, which waited for a handler that waited for a CPU: the CPU held both",
			writes:  []*event.Write{wr(12, 1, 1.1, 200), wr(11, 92, 92.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 3, 91, 40, "Sweeper thread"), wakeup(40, 4, 90, 12, "data-plane-kafk")},
			delays:  []*event.RunDelay{runDelay(12, 5, 89, "kscope-cpu-hog")},
			req:     req(16, 0, 100),
			cause:   CauseCPUStarved,
			detail:  []string{"the CPU went to kscope-cpu-hog"},
		},
		{
			name:    "a monitor held by a parked owner, whose waker waited for a CPU: the CPU held it",
			writes:  []*event.Write{wr(12, 1, 1.1, 200), wr(11, 92, 92.1, 100)},
			parks:   []*event.LockWait{monitorWait(11, 3, 91, 12), park(12, 1.2, 90.5, indexLock)},
			wakeups: []*event.Wakeup{wakeup(12, 1.2, 90.5, 31, "kafka-schedule"), wakeup(11, 3, 91, 12, "data-plane-kafk")},
			delays:  []*event.RunDelay{runDelay(31, 2, 88, "kscope-cpu-hog")},
			req:     req(17, 0, 100),
			cause:   CauseCPUStarved,
			detail:  []string{"the CPU went to kscope-cpu-hog"},
		},
		{
			name:    "the index lock's holder in msync, briefly waiting for a CPU too: still the park",
			writes:  []*event.Write{wr(11, 5, 5.1, 100)},
			parks:   []*event.LockWait{park(11, 5.2, 90, indexLock)},
			wakeups: []*event.Wakeup{wakeup(11, 5.2, 90.1, 31, "kafka-schedule")},
			waits:   []*event.KernelWait{kwait(31, 6, 86, msyncStack...)},
			delays:  []*event.RunDelay{named(runDelay(31, 86, 89, "kscope-cpu-hog"), "kafka-schedule")},
			req:     req(18, 0, 100),
			cause:   CauseParkWait,
			detail:  []string{"until kafka-schedule (tid 31) let it go", "file_write_and_wait_range"},
		},
		{
			name:    "a thread's own wake-up of itself is no wait",
			writes:  []*event.Write{wr(11, 90, 90.1, 100)},
			wakeups: []*event.Wakeup{wakeup(11, 2, 89, 11, "data-plane-kafk")},
			req:     req(11, 0, 100),
			cause:   CauseUnexplained,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{}, indexOf(t, tt.writes, tt.parks, tt.wakeups, tt.waits, tt.conns, tt.delays), nil)
			e.followers = true
			f := e.Explain(tt.req)
			if f.Cause != tt.cause || strings.Join(f.Also, ",") != strings.Join(tt.also, ",") {
				t.Errorf("cause %q also %v, want %q %v; %s; shares %+v", f.Cause, f.Also, tt.cause, tt.also, f.Detail, f.Shares)
			}
			for _, d := range tt.detail {
				if !strings.Contains(f.Detail, d) {
					t.Errorf("detail %q lacks %q", f.Detail, d)
				}
			}
			if f.Cause == CauseParkWait && (len(f.ParkWaits) == 0 || f.ExplainedMs < f.LatencyMs/2) {
				t.Errorf("park-wait with %d waits, %.1f of %.1f ms", len(f.ParkWaits), f.ExplainedMs, f.LatencyMs)
			}
			if tt.depth1 && !containsDepth(f.ParkWaits, 1) {
				t.Errorf("evidence %+v lacks the owner's sleep", f.ParkWaits)
			}
		})
	}
}

// named gives d's waiting thread a name.
func named(d *event.RunDelay, thread string) *event.RunDelay { d.Thread = thread; return d }

func containsDepth(ps []ParkWait, d int) bool {
	for _, p := range ps {
		if p.Depth == d {
			return true
		}
	}
	return false
}

// A request queued on its connection behind a parked one inherits the
// time it waited through.
func TestParkWaitQueuedBehind(t *testing.T) {
	e := New(Config{}, indexOf(t, []*event.Write{wr(11, 5, 5.1, 100), wr(11, 100.5, 100.6, 100)},
		[]*event.Wakeup{wakeup(11, 5.2, 95, 31, "kafka-schedule")}), nil)
	if first := e.Explain(req(1, 0, 100)); first.Cause != CauseParkWait {
		t.Fatalf("first: %s (%s)", first.Cause, first.Detail)
	}
	second := e.Explain(req(2, 1, 102, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 99, 2 }))
	if second.Cause != CauseParkWait || second.QueuedBehind == nil || second.QueuedBehind.CorrelationID != 1 {
		t.Errorf("second: %s %+v (%s)", second.Cause, second.QueuedBehind, second.Detail)
	}
	if len(second.ParkWaits) != 1 || second.ParkWaits[0].WakerTID != 31 {
		t.Errorf("second's evidence: %+v, want the first's sleep", second.ParkWaits)
	}
}
