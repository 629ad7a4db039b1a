package explain

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseCPUStarved: the broker threads that carried the request were
// runnable but not running (waiting in a run queue for a CPU) for most of
// its time: other processes, or the broker's own threads, had the CPUs,
// or its cgroup's CPU quota was used up.
const CauseCPUStarved = "cpu-starved"

func init() {
	register(cause{
		name:  CauseCPUStarved,
		order: 80,
		short: "cpu",
		help: "the broker threads carrying it (its handler, the network\n" +
			"thread of its connection, the threads holding a lock they\n" +
			"slept on) waited in a run queue for a CPU",
		// park-wait follows the handlers' sleeps to the threads that
		// ended them, whose waits for a CPU are this cause's; a wait
		// inside a JVM pause is the pause's, and the pauses' own
		// starved parts are this cause's.
		after: []string{CauseParkWait, CauseGCPause},
		measure: func(m *measuring) measured {
			var ahead []event.RunDelay
			if prev, ok := m.ahead(); ok {
				ahead = moreOf[[]event.RunDelay](prev)
			}
			woken := moreOf[*parkedMore](m.of(CauseParkWait)).wakersStarved
			return m.e.cpuStarved(m.reqCtx, m.f, moreOf[*jvmStops](m.of(CauseGCPause)), woken, ahead)
		},
		inherited: true,
		detail:    func(f *Finding) string { return cpuStarvedDetail(f) + alsoDetail(f) },
	})
}

// maxRunDelayEvidence bounds Finding.RunDelays.
const maxRunDelayEvidence = 10

// cpuStarved measures the time the threads carrying the request waited
// for a CPU, from the run-queue delays iotrace traced:
//
//   - the handler threads that appended its records, from when the broker
//     could read the request to its end (a handler woken for the request
//     that waits for a CPU holds it up, and so does one preempted while
//     it works on it);
//   - the network thread serving its connection, over the same span but
//     outside the handler's appends (it reads the request before and
//     sends the response after);
//   - the threads that ended the handlers' sleeps park-wait followed (a
//     lock's holder: the log flusher, the JVM's sweeper, another
//     handler), and those they waited for in turn, during those sleeps
//     (woken, collected by parkWait);
//   - all outside the JVM's pauses: a wait inside one is the pause's;
//   - the parts of the JVM's pauses during the request that the VM's
//     stop-the-world threads spent waiting for a CPU (stops, see
//     jvmPauses);
//   - the times the broker's cgroup had used up its CPU quota, over the
//     whole request: no thread of the broker runs then, whichever the
//     request needed (the tracer marks a wait that began while the
//     cgroup was throttled);
//   - while it was queued on its connection behind an earlier request,
//     the earlier request's starved time (a broker reads one request per
//     connection at a time), with that request's delays (ahead) as
//     evidence.
//
// It keeps the largest delays, the connection's network thread and any
// throttling of the broker's cgroup meanwhile as evidence in f; the
// delays kept are its measure's more, for the request queued behind.
func (e *Explainer) cpuStarved(c *reqCtx, f *Finding, stops *jvmStops, woken wakersStarved, ahead []event.RunDelay) measured {
	x := e.idx
	span := interval{c.brokerStart, c.E}
	var ivs []interval
	var delays []event.RunDelay
	add := func(d event.RunDelay, parts []interval, to interval) {
		n := len(ivs)
		for _, p := range clipAll(parts, to) {
			ivs = append(ivs, minus(p, stops.pauses)...)
		}
		if len(ivs) > n {
			delays = append(delays, d)
		}
	}
	for _, tid := range c.handlers {
		for _, d := range x.runDelaysOverlapping(int(tid), span.a, span.b) {
			add(d, []interval{{d.Start.UnixNano(), d.End.UnixNano()}}, span)
		}
	}
	// A lock's holder waiting for a CPU held up every thread that
	// waited for the lock (see parkedParts).
	for _, d := range woken.delays {
		add(d, []interval{{d.Start.UnixNano(), d.End.UnixNano()}}, span)
	}
	for _, w := range e.wakerDelays(c, span) {
		add(w, []interval{{w.Start.UnixNano(), w.End.UnixNano()}}, interval{min(c.netFrom, span.a), span.b})
	}
	if c.netTID != 0 && !slices.Contains(c.handlers, int32(c.netTID)) {
		netSpan := interval{c.netFrom, c.E}
		for _, d := range x.runDelaysOverlapping(c.netTID, netSpan.a, netSpan.b) {
			add(d, minus(interval{d.Start.UnixNano(), d.End.UnixNano()}, c.own), netSpan)
		}
	}
	quota := x.quotaOverlapping(c.A, c.E)
	ivs = append(ivs, quota...)
	ivs = append(ivs, stops.starved...)
	delays = append(delays, stops.delays...)
	ivs = append(ivs, c.queued[CauseCPUStarved]...)
	// The delays the request ahead was starved by while this one waited
	// for it are this one's evidence too.
	for _, d := range ahead {
		if d.Start.UnixNano() < c.brokerStart && d.End.UnixNano() > c.A {
			delays = append(delays, d)
		}
	}
	m := measured{cause: CauseCPUStarved, ivs: ivs, ns: min(unionLen(ivs), c.L)}
	if len(delays) > 0 {
		// A wait reached along two paths (the handler's wakers and the
		// network thread's) is one wait.
		slices.SortStableFunc(delays, func(a, b event.RunDelay) int {
			return cmp.Or(cmp.Compare(a.TID, b.TID), a.Start.Compare(b.Start), a.End.Compare(b.End))
		})
		delays = slices.CompactFunc(delays, func(a, b event.RunDelay) bool {
			return a.TID == b.TID && a.Start.Equal(b.Start) && a.End.Equal(b.End)
		})
		slices.SortStableFunc(delays, func(a, b event.RunDelay) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
		f.RunDelays = delays[:min(len(delays), maxRunDelayEvidence)]
	}
	m.more = f.RunDelays
	f.QuotaStoppedMs = ms(unionLen(quota))
	if m.ns > 0 {
		if th := x.throttlesOverlapping(c.A, c.E); len(th) > 0 {
			f.Throttles = th
		}
	}
	return m
}

// wakerDelays follows a handler's sleep to whoever ended it: when the
// handler that appended the request's records was woken for it (its last
// wake-up before its own append: a woken run delay, or a wake-up after a
// sleep) by another broker thread, after the broker could read the
// request, that thread's waits for a CPU before the wake-up held the
// request too (it held a lock the handler needed, or it
// was the network thread that had to queue the request). Only threads
// with waits of their own are followed; all traced waits are the
// broker's.
func (e *Explainer) wakerDelays(c *reqCtx, span interval) []event.RunDelay {
	var out []event.RunDelay
	firstOwn := c.E
	for _, tid := range c.handlers {
		ownStart := int64(math.MaxInt64)
		for i, t := range c.ownTID {
			if t == tid {
				ownStart = min(ownStart, c.own[i].a)
			}
		}
		firstOwn = min(firstOwn, ownStart)
		out = append(out, e.wokenBy(int(tid), span.a, ownStart)...)
	}
	// The network thread asleep, between when it should have read the
	// request and its first append (or its end, when no append of its
	// own was found), until another broker thread woke it: it waited for
	// that thread (a lock the thread held). Its own data arriving wakes
	// it from an interrupt, which is never reported.
	if c.netTID != 0 && !slices.Contains(c.handlers, int32(c.netTID)) {
		out = append(out, e.wokenBy(c.netTID, c.netFrom, firstOwn)...)
	}
	return out
}

// wokenBy returns the waits for a CPU, before the wake-up, of the broker
// thread that last woke tid in [a, b], clipped to [a, the wake-up], and
// those of the threads that one waited for meanwhile (heldBy).
func (e *Explainer) wokenBy(tid int, a, b int64) []event.RunDelay {
	at, waker, ok := e.idx.lastWake(tid, a, b)
	if !ok {
		return nil
	}
	out := e.delaysIn(waker, interval{a, at})
	return append(out, e.heldBy(waker, interval{a, at}, 1)...)
}

// delaysIn returns tid's waits for a CPU within iv, clipped to it.
func (e *Explainer) delaysIn(tid int, iv interval) []event.RunDelay {
	var out []event.RunDelay
	for _, d := range e.idx.runDelaysOverlapping(tid, iv.a, iv.b) {
		c := clip(interval{d.Start.UnixNano(), d.End.UnixNano()}, iv)
		if c.b <= c.a {
			continue
		}
		d.Start, d.End = time.Unix(0, c.a).UTC(), time.Unix(0, c.b).UTC()
		d.LatencyMs = float64(c.b-c.a) / float64(time.Millisecond)
		out = append(out, d)
	}
	return out
}

// heldBy follows tid's sleeps in iv that another broker thread ended to
// that thread, up to parkChainDepth deep, and returns the waits for a CPU
// of each thread so reached during the sleep it ended: a lock passed from
// handler to handler (or taken by a network thread) is held up as long
// as its holder waits for a CPU, and every thread queued on it with it.
// Sleeps that the JVM's stop-the-world threads ended are pauses, counted
// as such.
func (e *Explainer) heldBy(tid int, iv interval, depth int) []event.RunDelay {
	if depth >= parkChainDepth {
		return nil
	}
	x := e.idx
	var out []event.RunDelay
	for _, u := range x.wakeupsOverlapping(tid, iv.a, iv.b) {
		if u.WakerTID == 0 || u.WakerTID == tid || event.IsStopTheWorldThread(u.WakerThread) {
			continue
		}
		sub := clip(interval{u.Start.UnixNano(), u.End.UnixNano()}, iv)
		if sub.b <= sub.a {
			continue
		}
		out = append(out, e.delaysIn(u.WakerTID, sub)...)
		out = append(out, e.heldBy(u.WakerTID, sub, depth+1)...)
	}
	return out
}

// cpuStarvedDetail says which threads waited, who had the CPU, and
// whether the cgroup's quota was the reason.
func cpuStarvedDetail(f *Finding) string {
	var s string
	switch {
	case len(f.RunDelays) > 0:
		threads := map[int]bool{}
		for _, d := range f.RunDelays {
			threads[d.TID] = true
		}
		d := f.RunDelays[0]
		s = fmt.Sprintf("its broker threads waited %.1f ms for a CPU (%d threads; longest %.1f ms, tid %d on cpu%d); the CPU went to %s",
			f.ExplainedMs, len(threads), d.LatencyMs, d.TID, d.CPU, strings.Join(runHolders(f.RunDelays, 3), ", "))
	case f.QuotaStoppedMs > 0:
		s = fmt.Sprintf("the broker waited %.1f ms for a CPU", f.ExplainedMs)
	case f.QueuedBehind != nil:
		return fmt.Sprintf("waited %.1f ms on its connection behind request %d, whose broker threads waited for a CPU",
			f.ExplainedMs, f.QueuedBehind.CorrelationID)
	default:
		return fmt.Sprintf("its broker threads waited %.1f ms for a CPU", f.ExplainedMs)
	}
	if f.QuotaStoppedMs > 0 {
		s += fmt.Sprintf("; for %.1f ms its cgroup had used up its CPU quota, stopping every broker thread", f.QuotaStoppedMs)
	}
	if f.QueuedBehind != nil {
		s += fmt.Sprintf("; queued behind request %d, starved too", f.QueuedBehind.CorrelationID)
	}
	if len(f.Throttles) > 0 {
		var periods int64
		var throttled float64
		for _, t := range f.Throttles {
			periods += t.Periods
			throttled += t.ThrottledMs
		}
		s += fmt.Sprintf("; cgroup %s throttled by its CPU quota: %d periods, %.1f ms", f.Throttles[0].Cgroup, periods, throttled)
	}
	return s
}

// runHolders names the processes that had the CPU during the waits, the
// longest first, at most n: "comm (pid N)". A wait's Holders are summed
// when the tracer gave them; otherwise the task switched away from when
// the wait ended stands for it.
func runHolders(delays []event.RunDelay, n int) []string {
	held := map[string]float64{}
	for _, d := range delays {
		if len(d.Holders) == 0 {
			held[fmt.Sprintf("%s (pid %d)", d.HolderComm, d.HolderPID)] += d.LatencyMs
			continue
		}
		for _, h := range d.Holders {
			name := fmt.Sprintf("%s (pid %d)", h.Comm, h.PID)
			if h.PID == 0 {
				name = "idle"
			}
			held[name] += h.Ms
		}
	}
	names := make([]string, 0, len(held))
	for h := range held {
		names = append(names, h)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(held[b], held[a]), cmp.Compare(a, b)) })
	return names[:min(n, len(names))]
}
