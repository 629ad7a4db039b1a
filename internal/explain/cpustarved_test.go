package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// runDelay is a run-queue delay of tid from a to b (ms after t0), with
// the task that had the CPU.
func runDelay(tid int, a, b float64, holder string) *event.RunDelay {
	return &event.RunDelay{Kind: event.KindRunDelay, Start: at(a), End: at(b), LatencyMs: b - a, TID: tid, Thread: "data-plane-kafk",
		CPU: 1, HolderPID: 4242, HolderTID: 4242, HolderComm: holder}
}

func woken(d *event.RunDelay, by int) *event.RunDelay {
	d.WakerPID, d.WakerTID, d.WakerComm = 4242, by, "data-plane-kafk"
	return d
}

func throttled(d *event.RunDelay) *event.RunDelay { d.Throttled = true; return d }

func holders(d *event.RunDelay, hs ...event.RunHolder) *event.RunDelay { d.Holders = hs; return d }

func connThread(tid int, client string, t float64) *event.ConnThread {
	return &event.ConnThread{Kind: event.KindConnThread, Time: at(t), TID: tid, Thread: "data-plane-kafk", Client: client, Broker: "127.0.0.1:9092"}
}

func TestCPUStarved(t *testing.T) {
	const client = "127.0.0.1:40000" // req's client
	tests := []struct {
		name      string
		writes    []*event.Write
		delays    []*event.RunDelay
		conns     []*event.ConnThread
		throttles []*event.CPUThrottle
		req       *event.Request
		cause     string
		also      []string
		detail    []string // substrings of the detail
	}{
		{
			name:   "handler woken for the request waits for a CPU",
			writes: []*event.Write{wr(11, 80, 80.1, 100)},
			delays: []*event.RunDelay{runDelay(11, 5, 78, "stress-ng-cpu")},
			req:    req(1, 0, 100),
			cause:  CauseCPUStarved,
			detail: []string{"waited 73.0 ms for a CPU", "stress-ng-cpu (pid 4242)"},
		},
		{
			name:   "network thread of the connection waits before and after the handler",
			writes: []*event.Write{wr(11, 40, 40.5, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			delays: []*event.RunDelay{runDelay(21, 1, 35, "java"), runDelay(21, 45, 80, "java")},
			req:    req(2, 0, 100),
			cause:  CauseCPUStarved,
		},
		{
			name:   "network thread's delay during the handler's append does not count",
			writes: []*event.Write{wr(11, 20, 90, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			delays: []*event.RunDelay{runDelay(21, 1, 99, "java")},
			req:    req(3, 0, 100),
			cause:  CauseSlowWrite,
		},
		{
			name:   "another connection's network thread does not count",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			conns:  []*event.ConnThread{connThread(21, "127.0.0.1:40001", -1000)},
			delays: []*event.RunDelay{runDelay(21, 1, 89, "java")},
			req:    req(4, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "a thread not known to carry it does not count",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			delays: []*event.RunDelay{runDelay(12, 1, 89, "java")},
			req:    req(5, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "too little waiting",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			delays: []*event.RunDelay{runDelay(11, 10, 40, "java")},
			req:    req(6, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "delays before the broker could read it do not count",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			delays: []*event.RunDelay{runDelay(11, 0, 60, "java")},
			req:    req(7, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 55, 45 }),
			cause:  CauseUnexplained,
		},
		{
			name:   "two threads waiting at the same time count once",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			delays: []*event.RunDelay{runDelay(11, 10, 40, "java"), runDelay(21, 10, 40, "java")},
			req:    req(8, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "starved and a slow write together, neither alone",
			writes: []*event.Write{wr(11, 50, 85, 100)},
			delays: []*event.RunDelay{runDelay(11, 5, 45, "java")},
			req:    req(9, 0, 100),
			cause:  CauseCPUStarved,
			also:   []string{CauseSlowWrite},
			detail: []string{"together with slow-write"},
		},
		{
			name:      "the cgroup's quota is named",
			writes:    []*event.Write{wr(11, 80, 80.1, 100)},
			delays:    []*event.RunDelay{runDelay(11, 5, 78, "java")},
			throttles: []*event.CPUThrottle{{Kind: event.KindCPUThrottle, Start: at(0), End: at(100), Cgroup: "/kafka", Periods: 3, ThrottledMs: 70}},
			req:       req(10, 0, 100),
			cause:     CauseCPUStarved,
			detail:    []string{"cgroup /kafka throttled by its CPU quota: 3 periods, 70.0 ms"},
		},
		{
			name:   "the cgroup out of quota stops every thread, those not known to carry it too",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			delays: []*event.RunDelay{throttled(runDelay(12, 5, 50, "java")), throttled(runDelay(13, 30, 80, "java"))},
			req:    req(11, 0, 100),
			cause:  CauseCPUStarved,
			detail: []string{"for 75.0 ms its cgroup had used up its CPU quota"},
		},
		{
			name:   "quota used up before the request arrived does not count",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			delays: []*event.RunDelay{throttled(runDelay(12, -80, 0, "java"))},
			req:    req(12, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "the thread that woke its handler waited for a CPU meanwhile",
			writes: []*event.Write{wr(11, 82, 82.1, 100)},
			delays: []*event.RunDelay{woken(runDelay(11, 78, 81, "java"), 23), runDelay(23, 5, 75, "hog")},
			req:    req(14, 0, 100),
			cause:  CauseCPUStarved,
			detail: []string{"hog (pid 4242)"},
		},
		{
			name:   "a waker that did not wait is no starvation",
			writes: []*event.Write{wr(11, 82, 82.1, 100)},
			delays: []*event.RunDelay{woken(runDelay(11, 78, 81, "java"), 23)},
			req:    req(15, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "a wake-up for an earlier request leads nowhere",
			writes: []*event.Write{wr(11, 82, 82.1, 100)},
			delays: []*event.RunDelay{woken(runDelay(11, -10, -5, "java"), 23), runDelay(23, -90, -10, "hog"), runDelay(23, 5, 20, "hog")},
			req:    req(16, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "the CPU's holders during the wait are named, not only the last",
			writes: []*event.Write{wr(11, 80, 80.1, 100)},
			delays: []*event.RunDelay{holders(runDelay(11, 5, 78, "java"), event.RunHolder{PID: 7, Comm: "hog", Ms: 60}, event.RunHolder{PID: 4242, Comm: "java", Ms: 13})},
			req:    req(13, 0, 100),
			cause:  CauseCPUStarved,
			detail: []string{"the CPU went to hog (pid 7), java (pid 4242)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, tt.writes, tt.delays, tt.conns, tt.throttles), nil).Explain(tt.req)
			if f.Cause != tt.cause || strings.Join(f.Also, ",") != strings.Join(tt.also, ",") {
				t.Errorf("cause %q also %v, want %q %v; %s; shares %+v", f.Cause, f.Also, tt.cause, tt.also, f.Detail, f.Shares)
			}
			for _, d := range tt.detail {
				if !strings.Contains(f.Detail, d) {
					t.Errorf("detail %q lacks %q", f.Detail, d)
				}
			}
			if f.Cause == CauseCPUStarved && ((len(f.RunDelays) == 0 && f.QuotaStoppedMs == 0) || f.ExplainedMs < f.LatencyMs/2) {
				t.Errorf("cpu-starved with %d delays, %.1f of %.1f ms", len(f.RunDelays), f.ExplainedMs, f.LatencyMs)
			}
		})
	}
}

// A request queued on its connection behind a starved one inherits the
// starved time it waited through.
func TestCPUStarvedQueuedBehind(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(11, 90, 90.1, 100))
	idx.AddWrite(wr(11, 100.5, 100.6, 100))
	idx.AddRunDelay(runDelay(11, 2, 88, "stress"))
	e := New(Config{}, idx, nil)
	first := e.Explain(req(1, 0, 100))
	if first.Cause != CauseCPUStarved {
		t.Fatalf("first: %s (%s)", first.Cause, first.Detail)
	}
	// Arrived at 1, waited for the first's response (end 100), answered
	// at 102: 101 ms, 99 of them queued.
	second := e.Explain(req(2, 1, 102, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 99, 2 }))
	if second.Cause != CauseCPUStarved || second.QueuedBehind == nil || second.QueuedBehind.CorrelationID != 1 {
		t.Errorf("second: %s %+v (%s)", second.Cause, second.QueuedBehind, second.Detail)
	}
	// Not queued (another connection): nothing inherited.
	third := e.Explain(req(3, 1, 102, func(r *event.Request) { r.Client = "127.0.0.1:40001"; r.QueuedMs, r.BrokerMs = 99, 2 }))
	if third.Cause != CauseUnexplained {
		t.Errorf("third: %s (%s)", third.Cause, third.Detail)
	}
}

func TestClassify(t *testing.T) {
	iv := func(a, b int64) []interval { return []interval{{a, b}} }
	tests := []struct {
		name    string
		storage int64
		ms      []measured
		cause   string
		ns      int64
		also    []string
	}{
		{"nothing", 0, nil, CauseUnexplained, 0, nil},
		{"one alone", 0, []measured{{cause: CauseCPUStarved, ns: 60, ivs: iv(0, 60)}}, CauseCPUStarved, 60, nil},
		{"stop-the-world first", 0, []measured{{cause: CauseSlowWrite, ns: 90, ivs: iv(0, 90)}, {cause: CauseGCPause, ns: 55, ivs: iv(0, 55), stw: true}},
			CauseGCPause, 55, nil},
		{"largest of two alone", 0, []measured{{cause: CauseCPUStarved, ns: 60, ivs: iv(0, 60)}, {cause: CauseResponseSend, ns: 70, ivs: iv(30, 100)}},
			CauseResponseSend, 70, nil},
		{"tie goes to the earlier cause", 0, []measured{{cause: CauseCPUStarved, ns: 60, ivs: iv(0, 60)}, {cause: CauseSlowWrite, ns: 60, ivs: iv(40, 100)}},
			CauseSlowWrite, 60, nil},
		{"disjoint parts add up", 0, []measured{{cause: CauseCPUStarved, ns: 30, ivs: iv(0, 30)}, {cause: CauseGCPause, ns: 25, ivs: iv(40, 65), stw: true}},
			CauseCPUStarved, 55, []string{CauseGCPause}},
		{"overlapping parts count once", 0, []measured{{cause: CauseCPUStarved, ns: 30, ivs: iv(0, 30)}, {cause: CauseGCPause, ns: 25, ivs: iv(5, 30), stw: true}},
			CauseUnexplained, 0, nil},
		{"sums without time do not add up", 0, []measured{{cause: CauseCPUStarved, ns: 30, ivs: iv(0, 30)}, {cause: CauseThrottle, ns: 40}},
			CauseUnexplained, 0, nil},
		{"a small part is not listed", 0, []measured{{cause: CauseCPUStarved, ns: 45, ivs: iv(0, 45)}, {cause: CauseGCPause, ns: 6, ivs: iv(50, 56)}},
			CauseCPUStarved, 51, nil},
		{"storage together", 55, []measured{{cause: CauseSlowWrite, ns: 25, ivs: iv(0, 25)}, {cause: CauseLockWait, ns: 30, ivs: iv(30, 60)}},
			CauseLockWait, 55, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause, ns, also := classify(100, 50, tt.storage, tt.ms)
			if cause != tt.cause || ns != tt.ns || strings.Join(also, ",") != strings.Join(tt.also, ",") {
				t.Errorf("classify = %s %d %v, want %s %d %v", cause, ns, also, tt.cause, tt.ns, tt.also)
			}
		})
	}
}

func TestMinus(t *testing.T) {
	got := minus(interval{0, 100}, []interval{{10, 20}, {50, 60}, {90, 120}})
	want := []interval{{0, 10}, {20, 50}, {60, 90}}
	if len(got) != len(want) {
		t.Fatalf("minus = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("minus = %v, want %v", got, want)
		}
	}
}

// A handler asleep until another broker thread woke it (a wakeup event,
// its wait for a CPU after it too short to trace) waited for that thread:
// its waits for a CPU before the wake-up are the request's.
func TestCPUStarvedWakeup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wake  float64 // when the handler was woken
		cause string
	}{
		{"woken after the waker's starvation", 81, CauseCPUStarved},
		{"woken before the request arrived", -5, CauseUnexplained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := NewIndex()
			idx.AddWrite(wr(11, 82, 82.1, 100))
			idx.AddRunDelay(runDelay(23, 5, 75, "hog"))
			idx.AddWakeup(&event.Wakeup{Kind: event.KindWakeup, Start: at(tc.wake - 60), End: at(tc.wake), SleptMs: 60, TID: 11, WakerTID: 23})
			f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
			if f.Cause != tc.cause {
				t.Errorf("cause %s, want %s: %s", f.Cause, tc.cause, f.Detail)
			}
		})
	}
}

// The connection's network thread asleep until a handler woke it (a lock
// the handler held), with no append of the request found: the handler's
// waits for a CPU before the wake-up held the request.
func TestCPUStarvedNetworkThreadWoken(t *testing.T) {
	const client = "127.0.0.1:40000"
	for _, tc := range []struct {
		name  string
		wake  float64
		cause string
	}{
		{"woken by a starved handler", 85, CauseCPUStarved},
		{"woken before the request came", -2, CauseUnexplained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := NewIndex()
			idx.AddConnThread(connThread(21, client, -1000))
			idx.AddRunDelay(runDelay(13, 5, 80, "hog"))
			idx.AddWakeup(&event.Wakeup{Kind: event.KindWakeup, Start: at(1), End: at(tc.wake), SleptMs: tc.wake - 1, TID: 21, WakerTID: 13})
			f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
			if f.Cause != tc.cause {
				t.Errorf("cause %s, want %s: %s", f.Cause, tc.cause, f.Detail)
			}
		})
	}
}

// A lock handed from thread to thread while its holder waits for a CPU
// (the cpu-hog scenario: a handler preempted while it held a lock the
// other handlers and the connection's network thread queued on): the
// request's handler got it from the network thread, which waited for
// handler 12, which waited for handler 13, which was starved.
func TestCPUStarvedLockHolder(t *testing.T) {
	const client = "127.0.0.1:40000"
	for _, tc := range []struct {
		name   string
		holder []*event.RunDelay
		chain  []*event.Wakeup // beyond the network thread's
		cause  string
	}{
		{"the holder starved", []*event.RunDelay{runDelay(13, 2, 85, "hog")},
			[]*event.Wakeup{wakeup(12, 1, 88.9, 13, "data-plane-kafk")}, CauseCPUStarved},
		{"the holder ran", nil, []*event.Wakeup{wakeup(12, 1, 88.9, 13, "data-plane-kafk")}, CauseUnexplained},
		{"the holder starved, four threads on", []*event.RunDelay{runDelay(15, 2, 85, "hog")},
			[]*event.Wakeup{wakeup(12, 1, 88.9, 13, "data-plane-kafk"), wakeup(13, 1, 88.8, 14, "data-plane-kafk"), wakeup(14, 1, 88.7, 15, "data-plane-kafk")}, CauseCPUStarved},
		{"the holder starved, too deep to follow", []*event.RunDelay{runDelay(16, 2, 85, "hog")},
			[]*event.Wakeup{wakeup(12, 1, 88.9, 13, "data-plane-kafk"), wakeup(13, 1, 88.8, 14, "data-plane-kafk"), wakeup(14, 1, 88.7, 15, "data-plane-kafk"), wakeup(15, 1, 88.6, 16, "data-plane-kafk")}, CauseUnexplained},
		{"the holder starved before the wait", []*event.RunDelay{runDelay(13, -50, -1, "hog")},
			[]*event.Wakeup{wakeup(12, 1, 88.9, 13, "data-plane-kafk")}, CauseUnexplained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wakeups := append([]*event.Wakeup{wakeup(21, 1, 89, 12, "data-plane-kafk"), wakeup(11, -5, 89.5, 21, "data-plane-kafk")}, tc.chain...)
			idx := indexOf(t, []*event.Write{wr(11, 90, 90.1, 100)}, tc.holder, wakeups, []*event.ConnThread{connThread(21, client, -1000)})
			f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
			if f.Cause != tc.cause {
				t.Errorf("cause %s, want %s: %s", f.Cause, tc.cause, f.Detail)
			}
		})
	}
}
