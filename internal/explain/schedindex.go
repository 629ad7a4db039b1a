package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// schedIndex holds the scheduling and JVM evidence (a recording's
// sched.jsonl): the broker threads' run-queue delays, which thread serves
// each connection, the cgroup's CPU throttling, and the JVM's
// stop-the-world pauses.
type schedIndex struct {
	runq      map[int][]event.RunDelay      // by TID, sorted by start
	wakeups   map[int][]event.Wakeup        // by TID, sorted by end (the wake-up)
	conns     map[string][]event.ConnThread // by client "ip:port", sorted by time
	throttles []event.CPUThrottle           // sorted by start
	pauses    []event.JVMPause              // sorted by start
	// quota is when the broker's cgroup had used up its CPU quota: the
	// merged waits of its threads marked throttled, sorted. No thread of
	// the cgroup runs then, whichever one a request needed.
	quota []interval
	// vmTIDs are the JVM's stop-the-world threads: the VM Thread and the
	// GC workers, by their names.
	vmTIDs []int
	// netTIDs are the network threads: those serving connections.
	netTIDs map[int]bool
	// names are the broker threads' names by TID, as the tracer saw them.
	names map[int]string
	// longTimed are the sleeps a timer ended that lasted longer than an
	// idle request handler's poll of the request queue (maxIdlePoll), per
	// thread, sorted by start: waits inside a request (the JVM's backoff
	// on a contended monitor) that joinTimedSleeps leaves out when no
	// thread ended the wait.
	longTimed map[int][]interval
	maxRunq   int64 // longest run delay, ns
	maxSleep  int64 // longest wait before a wake-up, ns (build: after joinTimedSleeps)
	maxThrot  int64
	maxPause  int64
	runDelays int64
}

func (s *schedIndex) init() {
	s.runq = make(map[int][]event.RunDelay)
	s.wakeups = make(map[int][]event.Wakeup)
	s.conns = make(map[string][]event.ConnThread)
	s.netTIDs = make(map[int]bool)
	s.names = make(map[int]string)
}

// AddRunDelay adds a broker thread's run-queue delay.
func (x *Index) AddRunDelay(r *event.RunDelay) {
	x.sched.runq[r.TID] = append(x.sched.runq[r.TID], *r)
	x.sched.maxRunq = max(x.sched.maxRunq, int64(r.Latency()))
	x.sched.names[r.TID] = r.Thread
	if r.WakerComm != "" {
		x.sched.names[r.WakerTID] = r.WakerComm
	}
	x.sched.runDelays++
	x.built = false
}

// AddWakeup adds a broker thread woken by another of its threads.
func (x *Index) AddWakeup(u *event.Wakeup) {
	x.sched.wakeups[u.TID] = append(x.sched.wakeups[u.TID], *u)
	x.sched.names[u.TID] = u.Thread
	if u.WakerThread != "" {
		x.sched.names[u.WakerTID] = u.WakerThread
	}
	x.built = false
}

// AddConnThread adds which broker thread serves a connection.
func (x *Index) AddConnThread(c *event.ConnThread) {
	x.sched.conns[c.Client] = append(x.sched.conns[c.Client], *c)
	x.sched.netTIDs[c.TID] = true
	x.sched.names[c.TID] = c.Thread
	x.built = false
}

// AddThrottle adds CPU-quota throttling of the broker's cgroup.
func (x *Index) AddThrottle(t *event.CPUThrottle) {
	x.sched.throttles = append(x.sched.throttles, *t)
	x.sched.maxThrot = max(x.sched.maxThrot, int64(t.End.Sub(t.Start)))
	x.built = false
}

// AddJVMPause adds a stop-the-world pause of the broker's JVM.
func (x *Index) AddJVMPause(p *event.JVMPause) {
	x.sched.pauses = append(x.sched.pauses, *p)
	x.sched.maxPause = max(x.sched.maxPause, int64(p.Latency()))
	x.built = false
}

func (s *schedIndex) build() {
	s.quota = s.quota[:0]
	s.vmTIDs = s.vmTIDs[:0]
	for tid, rs := range s.runq {
		if len(rs) > 0 && event.IsStopTheWorldThread(rs[0].Thread) {
			s.vmTIDs = append(s.vmTIDs, tid)
		}
		slices.SortStableFunc(rs, func(a, b event.RunDelay) int { return a.Start.Compare(b.Start) })
		for i := range rs {
			if rs[i].Throttled {
				s.quota = append(s.quota, interval{rs[i].Start.UnixNano(), rs[i].End.UnixNano()})
			}
		}
	}
	s.quota = mergeIntervals(s.quota)
	s.maxSleep = 0
	s.longTimed = make(map[int][]interval)
	for tid, ws := range s.wakeups {
		slices.SortStableFunc(ws, func(a, b event.Wakeup) int { return a.End.Compare(b.End) })
		for _, w := range ws {
			if w.Timer && w.End.Sub(w.Start) > maxIdlePoll {
				s.longTimed[tid] = append(s.longTimed[tid], interval{w.Start.UnixNano(), w.End.UnixNano()})
			}
		}
		ws = joinTimedSleeps(ws)
		s.wakeups[tid] = ws
		for i := range ws {
			s.maxSleep = max(s.maxSleep, int64(ws[i].End.Sub(ws[i].Start)))
		}
	}
	for _, cs := range s.conns {
		slices.SortStableFunc(cs, func(a, b event.ConnThread) int { return a.Time.Compare(b.Time) })
	}
	slices.SortStableFunc(s.throttles, func(a, b event.CPUThrottle) int { return a.Start.Compare(b.Start) })
	slices.SortStableFunc(s.pauses, func(a, b event.JVMPause) int { return a.Start.Compare(b.Start) })
}

// pollGap is how long a thread may be awake between two timed sleeps of
// one wait: enough to try the lock again and miss it, and to wait a
// little for a CPU to do so.
const pollGap = 2 * time.Millisecond

// joinTimedSleeps turns a thread's wake-ups (sorted by end) into the
// waits it was let go from: a sleep its own timeout ended, followed
// within pollGap by the next sleep, was the same wait (a lock polled in
// timed sleeps, as the JVM's contended monitor does), so the sleep that
// ends it starts with the first of them. Timed sleeps that nothing else
// ended are dropped: a timeout running out says nothing of whom the
// thread waited for (an idle handler polls its queue so).
func joinTimedSleeps(ws []event.Wakeup) []event.Wakeup {
	out := ws[:0]
	var start, last time.Time
	open := false
	for _, w := range ws {
		if open && !w.Start.Before(last) && w.Start.Sub(last) <= pollGap {
			w.Start = start
			w.SleptMs = float64(w.End.Sub(w.Start)) / float64(time.Millisecond)
		}
		if w.Timer {
			start, last, open = w.Start, w.End, true
			continue
		}
		open = false
		out = append(out, w)
	}
	return out
}

// overlappingSorted returns the items of s (sorted by start) whose
// [start, end) overlaps [a, b); longest bounds how far back one may start.
func overlappingSorted[T any](s []T, a, b, longest int64, span func(*T) (int64, int64)) []T {
	lo, _ := slices.BinarySearchFunc(s, a-longest, func(v T, t int64) int {
		start, _ := span(&v)
		return cmp.Compare(start, t)
	})
	var out []T
	for i := lo; i < len(s); i++ {
		start, end := span(&s[i])
		if start >= b {
			break
		}
		if end > a {
			out = append(out, s[i])
		}
	}
	return out
}

// vmThreadDelays returns the waits for a CPU of the JVM's stop-the-world
// threads overlapping [a, b).
func (x *Index) vmThreadDelays(a, b int64) []event.RunDelay {
	var out []event.RunDelay
	for _, tid := range x.sched.vmTIDs {
		out = append(out, x.runDelaysOverlapping(tid, a, b)...)
	}
	return out
}

// mergeIntervals sorts ivs and merges those that overlap or touch, in
// place.
func mergeIntervals(ivs []interval) []interval {
	slices.SortFunc(ivs, func(a, b interval) int { return cmp.Compare(a.a, b.a) })
	out := ivs[:0]
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, iv.b)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// quotaOverlapping returns, clipped to [a, b), the times the broker's
// cgroup was throttled by its CPU quota.
func (x *Index) quotaOverlapping(a, b int64) []interval {
	q := x.sched.quota
	i, _ := slices.BinarySearchFunc(q, a, func(iv interval, t int64) int { return cmp.Compare(iv.b, t+1) })
	var out []interval
	for ; i < len(q) && q[i].a < b; i++ {
		if c := clip(q[i], interval{a, b}); c.b > c.a {
			out = append(out, c)
		}
	}
	return out
}

// lastWake is tid's last wake-up by another broker thread in [a, b]: a
// woken run delay (its start) or a wake-up after a sleep (its end).
func (x *Index) lastWake(tid int, a, b int64) (t int64, waker int, ok bool) {
	for _, d := range x.runDelaysOverlapping(tid, a, b) {
		if s := d.Start.UnixNano(); !d.Preempted && d.WakerTID != 0 && d.WakerTID != tid && s >= a && s <= b && s >= t {
			t, waker, ok = s, d.WakerTID, true
		}
	}
	ws := x.sched.wakeups[tid]
	i, _ := slices.BinarySearchFunc(ws, b+1, func(w event.Wakeup, t int64) int { return cmp.Compare(w.End.UnixNano(), t) })
	if i > 0 {
		if w := ws[i-1]; w.End.UnixNano() >= a && w.End.UnixNano() >= t && w.WakerTID != tid {
			t, waker, ok = w.End.UnixNano(), w.WakerTID, true
		}
	}
	return t, waker, ok
}

// wakeupsOverlapping returns tid's sleeps ended by another broker
// thread that overlap [a, b).
func (x *Index) wakeupsOverlapping(tid int, a, b int64) []event.Wakeup {
	ws := x.sched.wakeups[tid]
	i, _ := slices.BinarySearchFunc(ws, a+1, func(w event.Wakeup, t int64) int { return cmp.Compare(w.End.UnixNano(), t) })
	var out []event.Wakeup
	// Sorted by end: one ending after b+maxSleep began after b.
	for ; i < len(ws) && ws[i].End.UnixNano() < b+x.sched.maxSleep+1; i++ {
		if ws[i].Start.UnixNano() < b {
			out = append(out, ws[i])
		}
	}
	return out
}

// isHandler reports whether tid appended to a partition's log: a request
// handler thread.
func (x *Index) isHandler(tid int) bool { return x.handlers[int32(tid)] }

// isNetworkThread reports whether tid serves client connections.
func (x *Index) isNetworkThread(tid int) bool { return x.sched.netTIDs[tid] }

// threadName is tid's name as the tracer saw it ("" when unknown).
func (x *Index) threadName(tid int) string { return x.sched.names[tid] }

// runDelaysOverlapping returns tid's run-queue delays overlapping [a, b).
func (x *Index) runDelaysOverlapping(tid int, a, b int64) []event.RunDelay {
	return overlappingSorted(x.sched.runq[tid], a, b, x.sched.maxRunq, func(r *event.RunDelay) (int64, int64) {
		return r.Start.UnixNano(), r.End.UnixNano()
	})
}

// throttlesOverlapping returns the throttling samples overlapping [a, b).
func (x *Index) throttlesOverlapping(a, b int64) []event.CPUThrottle {
	return overlappingSorted(x.sched.throttles, a, b, x.sched.maxThrot, func(t *event.CPUThrottle) (int64, int64) {
		return t.Start.UnixNano(), t.End.UnixNano()
	})
}

// pausesOverlapping returns the JVM pauses overlapping [a, b).
func (x *Index) pausesOverlapping(a, b int64) []event.JVMPause {
	return overlappingSorted(x.sched.pauses, a, b, x.sched.maxPause, func(p *event.JVMPause) (int64, int64) {
		return p.Start.UnixNano(), p.End.UnixNano()
	})
}

// connThread is the broker thread serving client's connection at time t:
// the latest mapping seen at or before t, else the first one after (the
// tracer reports a connection when its thread first receives from it,
// which may be just after the capture saw the request's first byte).
func (x *Index) connThread(client string, t int64) (event.ConnThread, bool) {
	cs := x.sched.conns[client]
	if len(cs) == 0 {
		return event.ConnThread{}, false
	}
	i, _ := slices.BinarySearchFunc(cs, t, func(c event.ConnThread, t int64) int { return cmp.Compare(c.Time.UnixNano(), t+1) })
	if i > 0 {
		return cs[i-1], true
	}
	return cs[0], true
}
