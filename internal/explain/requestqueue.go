package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseRequestQueue: the request waited in the broker's request queue
// because every request handler thread was busy with other requests:
// appending, waiting for a lock or a CPU, asleep in the kernel or until
// another thread let it go.
const CauseRequestQueue = "request-queue"

func init() {
	register(cause{
		name:  CauseRequestQueue,
		order: 100,
		short: "queue",
		help:  "every request handler was busy while it waited for one",
		// While it was being handled it was not queued: the time its own
		// appends, lock waits, parks and run delays took is theirs.
		after: []string{CauseSlowWrite, CauseLockWait, CauseParkWait, CauseCPUStarved},
		measure: func(m *measuring) measured {
			var ahead []HandlerBusy
			if prev, ok := m.ahead(); ok {
				ahead = moreOf[[]HandlerBusy](prev)
			}
			taken := slices.Concat(m.of(CauseSlowWrite).ivs, m.of(CauseLockWait).ivs, m.of(CauseParkWait).ivs, m.of(CauseCPUStarved).ivs)
			return m.e.requestQueue(m.reqCtx, m.f, taken, ahead)
		},
		inherited: true,
		detail:    func(f *Finding) string { return requestQueueDetail(f) + alsoDetail(f) },
	})
}

// HandlerBusy is what one request handler thread was doing while a
// request waited for a handler: the activity that covered most of the
// wait.
type HandlerBusy struct {
	TID    int    `json:"tid"`
	Thread string `json:"thread"`
	// What is one of "appending" (to Partition), "waiting for a CPU",
	// "in the kernel", "waiting for a monitor", "parked" and "asleep"
	// (until Waker woke it).
	What      string  `json:"what"`
	Partition string  `json:"partition,omitempty"`
	Waker     string  `json:"waker,omitempty"`
	Ms        float64 `json:"ms"` // of the wait
}

// busySpan is a time a handler is known to have worked on something:
// what, and the partition it appended to (an index into Index.parts,
// -1 for none) or whom it waited for.
type busySpan struct {
	iv    interval
	what  string
	part  int32
	waker string
}

// requestQueue measures the time between when the broker could read the
// request and its handler's first append during which every request
// handler thread (those that appended to a partition's log in the
// recording) is known to have been busy: in a write, a kernel wait, a
// run-queue wait, a JFR lock wait or park, or asleep until a broker
// thread other than a network thread woke it (a network thread wakes an
// idle handler with a new request). A handler running on a CPU is not
// traced and never counts as busy, so the measure is a lower bound. The
// request's own other causes (its own appends, lock waits, parks and
// run delays) are taken out: while it was being handled it was not
// queued. Each handler's main activity is the evidence; while queued on
// its connection, the handlers the request ahead waited for (ahead) are
// too. The handlers kept are its measure's more, for the request behind.
func (e *Explainer) requestQueue(c *reqCtx, f *Finding, taken []interval, ahead []HandlerBusy) measured {
	m := measured{cause: CauseRequestQueue}
	x := e.idx
	all, spans := e.allHandlersBusy(c)
	all = minusAll(all, taken)
	for i, tid := range x.handlerTIDs[:len(spans)] {
		if b, ok := e.mainActivity(spans[i], all); ok {
			b.TID, b.Thread = int(tid), x.threadName(int(tid))
			f.QueueHandlers = append(f.QueueHandlers, b)
		}
	}
	if q := c.queued[CauseRequestQueue]; len(q) > 0 {
		all = append(all, q...)
		for _, h := range ahead {
			if !slices.ContainsFunc(f.QueueHandlers, func(o HandlerBusy) bool { return o.TID == h.TID }) {
				f.QueueHandlers = append(f.QueueHandlers, h)
			}
		}
	}
	m.ivs = all
	m.ns = min(unionLen(all), c.L)
	if m.ns == 0 {
		f.QueueHandlers = nil
	} else if e.inFlight != nil {
		f.InFlight = max(0, e.inFlight.at(c.brokerStart)-1) // not itself
	}
	slices.SortStableFunc(f.QueueHandlers, func(a, b HandlerBusy) int { return cmp.Compare(b.Ms, a.Ms) })
	m.more = f.QueueHandlers
	return m
}

// allHandlersBusy returns the times between when the broker could read
// the request and its first own append that every handler was busy, and
// each handler's busy spans then (by x.handlerTIDs).
func (e *Explainer) allHandlersBusy(c *reqCtx) ([]interval, [][]busySpan) {
	x := e.idx
	if len(c.own) == 0 || len(x.handlerTIDs) == 0 {
		return nil, nil
	}
	first := c.own[0].a
	for _, o := range c.own[1:] {
		first = min(first, o.a)
	}
	span := interval{c.brokerStart, first}
	if span.b <= span.a {
		return nil, nil
	}
	all := []interval{span}
	spans := make([][]busySpan, len(x.handlerTIDs))
	var ivs []interval
	for i, tid := range x.handlerTIDs {
		// Only where every handler so far was busy matters.
		spans[i] = e.busyOf(int(tid), interval{all[0].a, all[len(all)-1].b})
		ivs = ivs[:0]
		for _, b := range spans[i] {
			ivs = append(ivs, b.iv)
		}
		if all = intersect(all, mergeIntervals(ivs)); len(all) == 0 {
			return nil, nil
		}
	}
	return all, spans
}

// busyOf returns the times tid is known to have been busy within span.
func (e *Explainer) busyOf(tid int, span interval) []busySpan {
	x := e.idx
	var out []busySpan
	add := func(a, b int64, what string, part int32, waker string) {
		if iv := clip(interval{a, b}, span); iv.b > iv.a {
			out = append(out, busySpan{iv: iv, what: what, part: part, waker: waker})
		}
	}
	for _, i := range x.writesOf(int32(tid), span.a, span.b) {
		w := &x.writes[i]
		add(w.start, w.end, "appending", w.part, "")
	}
	for _, k := range x.waitsOverlapping(tid, span.a, span.b) {
		add(k.Start.UnixNano(), k.End.UnixNano(), "in the kernel", -1, "")
	}
	for _, d := range x.runDelaysOverlapping(tid, span.a, span.b) {
		add(d.Start.UnixNano(), d.End.UnixNano(), "waiting for a CPU", -1, "")
	}
	for _, l := range x.locksOverlapping(tid, span.a, span.b) {
		if !l.Park {
			add(l.Start.UnixNano(), l.End.UnixNano(), "waiting for a monitor", -1, l.Monitor)
		}
	}
	// Sleeps a network thread ended were idle (it queued a request);
	// those the VM Thread ended were the JVM's pause.
	for _, p := range e.sleepsOf(tid, span) {
		switch {
		case p.Blocker != "":
			add(p.Start.UnixNano(), p.End.UnixNano(), "parked", -1, p.Blocker)
		case p.WakerTID != 0 && !event.IsStopTheWorldThread(p.WakerThread):
			add(p.Start.UnixNano(), p.End.UnixNano(), "asleep", -1, p.WakerThread)
		}
	}
	// A timed sleep is the idle handler's poll of the request queue,
	// unless it lasted longer than that poll can.
	for _, iv := range x.sched.longTimed[tid] {
		if iv.a < span.b && iv.b > span.a {
			add(iv.a, iv.b, "in a timed sleep", -1, "")
		}
	}
	return out
}

// maxIdlePoll is the longest sleep of an idle request handler: Kafka's
// KafkaRequestHandler waits for the next request at most 300 ms
// (requestChannel.receiveRequest(300)), and the network thread that
// queues one wakes it sooner; 50 ms is the timer's and the scheduler's
// slack. A handler asleep longer, and not woken by another thread, was
// in a timed wait inside a request (the JVM's backoff on a contended
// monitor sleeps 1, 8, 64, then 512 ms): busy.
const maxIdlePoll = 350 * time.Millisecond

// mainActivity is the activity of spans covering most of within.
func (e *Explainer) mainActivity(spans []busySpan, within []interval) (HandlerBusy, bool) {
	var best busySpan
	var bestNs int64
	for _, b := range spans {
		var ns int64
		for _, w := range within {
			if c := clip(b.iv, w); c.b > c.a {
				ns += c.b - c.a
			}
		}
		if ns > bestNs {
			bestNs, best = ns, b
		}
	}
	h := HandlerBusy{What: best.what, Waker: best.waker, Ms: ms(bestNs)}
	if best.part >= 0 && bestNs > 0 {
		k := e.idx.parts[best.part].key
		h.Partition = fmt.Sprintf("%s-%d", k.topic, k.partition)
	}
	return h, bestNs > 0
}

// intersect returns the intersection of two sorted, merged interval
// lists.
func intersect(a, b []interval) []interval {
	var out []interval
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].a, b[j].a), min(a[i].b, b[j].b)
		if hi > lo {
			out = append(out, interval{lo, hi})
		}
		if a[i].b < b[j].b {
			i++
		} else {
			j++
		}
	}
	return out
}

// requestQueueDetail names what the handlers were doing.
func requestQueueDetail(f *Finding) string {
	s := fmt.Sprintf("waited %.1f ms for a request handler: all %d were busy", f.ExplainedMs, len(f.QueueHandlers))
	if len(f.QueueHandlers) == 0 {
		if f.QueuedBehind != nil {
			return fmt.Sprintf("waited %.1f ms on its connection behind request %d, which waited for a request handler",
				f.ExplainedMs, f.QueuedBehind.CorrelationID)
		}
		return fmt.Sprintf("waited %.1f ms for a request handler", f.ExplainedMs)
	}
	var parts []string
	for _, h := range f.QueueHandlers[:min(len(f.QueueHandlers), 4)] {
		p := fmt.Sprintf("tid %d %s", h.TID, h.What)
		switch {
		case h.Partition != "":
			p += " to " + h.Partition
		case h.What == "asleep" && h.Waker != "":
			p += " until " + h.Waker + " woke it"
		case h.Waker != "":
			p += " on " + h.Waker // a JFR blocker or monitor class
		}
		parts = append(parts, p)
	}
	if n := len(f.QueueHandlers) - len(parts); n > 0 {
		parts = append(parts, fmt.Sprintf("%d more", n))
	}
	s += ": " + strings.Join(parts, "; ")
	if f.InFlight > 0 {
		s += fmt.Sprintf("; %d other produce requests were in flight", f.InFlight)
	}
	return s
}
