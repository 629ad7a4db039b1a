package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// reqCtx is what the causes measured outside explain.go see of one
// request: its times, the broker threads known to have carried it, and
// what it inherited from the request ahead of it on its connection.
type reqCtx struct {
	A, E, L     int64 // arrival, end, latency (unix ns)
	brokerStart int64 // when the broker could read it (see event.Request.BrokerMs)
	// handlers are the threads that appended its records (its own
	// writes), own the times of those appends.
	handlers []int32
	own      []interval
	ownTID   []int32 // the thread of each own write
	// netTID is the network thread serving its connection (0: not known).
	netTID int
	// netFrom is when the network thread became responsible for it:
	// brokerStart, or its arrival when the broker's receive window closed
	// meanwhile (the thread did not read it).
	netFrom int64
	// queued are, by cause, the intervals the request ahead of it on its
	// connection was held up by, clipped to the time this one waited
	// for it (nil when it did not wait).
	queued map[string][]interval
	// queuedDelays are the run delays the request ahead of it was
	// starved by: evidence for the time it inherits.
	queuedDelays []event.RunDelay
	// queuedParks are the sleeps the request ahead of it was held by
	// (park-wait's evidence, likewise).
	queuedParks []ParkWait
	// queuedHandlers: what the handlers did while the request ahead of
	// it waited for one (request-queue's evidence, likewise).
	queuedHandlers []HandlerBusy
	// pauseStarved are the parts of the JVM's pauses during the request
	// that its stop-the-world threads spent waiting for a CPU (the
	// waits: pauseDelays): starvation that made the pauses longer.
	pauseStarved []interval
	pauseDelays  []event.RunDelay
	// pauses are the JVM's pauses during the request: a broker thread's
	// wait for a CPU inside one is the pause's (the GC had the CPUs).
	pauses []interval
	// replicating: acks=all with followers, so the handler left the
	// request after its last append (ownEnd) and the purgatory answered.
	replicating bool
	ownEnd      int64
	// lockWaited are the times other appends to its partitions held its
	// handler (lock-wait's); ownerParked the parts of its monitor waits
	// during which the monitor's owner slept waiting for another thread
	// (park-wait's), ownerParks those sleeps.
	lockWaited  []interval
	ownerParked []interval
	ownerParks  []ParkWait
	// wakersStarved are the waits for a CPU of the threads that ended the
	// sleeps park-wait followed (and the monitor owners' sleeps in
	// ownerParked), during those sleeps: cpu-starved's.
	wakersStarved wakersStarved
}

// measured is what a cause accounts for in a request: the union of ivs,
// clipped to the request. STW marks causes that stop every thread of the
// broker (steal, JVM pauses): they come first when they account for
// most of the time, since whatever a stopped thread was doing only looks
// slow.
type measured struct {
	cause string
	ns    int64
	ivs   []interval // nil for causes known only as a sum
	stw   bool
}

// causeOrder is where each cause stands in Causes: ties go to the earlier.
func causeOrder(c string) int { return slices.Index(Causes, c) }

// classify names the cause of a request of latency L from what each cause
// measured; need is the part of L a cause must account for. The rule
// never guesses:
//  1. a stop-the-world cause that alone accounts for need, the largest;
//  2. else any cause that alone accounts for need, the largest;
//  3. else the storage causes together (a wait, then a slow write of its
//     own): the larger part names it, as before;
//  4. else the causes measured as intervals together (their union, each
//     moment counted once): the largest part names it and the others
//     that took a tenth or more of L are listed in also;
//  5. else unexplained.
func classify(L, need, storage int64, ms []measured) (cause string, explained int64, also []string) {
	best := func(keep func(m *measured) bool) (measured, bool) {
		var b measured
		found := false
		for i := range ms {
			m := &ms[i]
			if !keep(m) || m.ns <= 0 {
				continue
			}
			if !found || m.ns > b.ns || (m.ns == b.ns && causeOrder(m.cause) < causeOrder(b.cause)) {
				b, found = *m, true
			}
		}
		return b, found
	}
	if b, ok := best(func(m *measured) bool { return m.stw && m.ns >= need }); ok {
		return b.cause, b.ns, nil
	}
	if b, ok := best(func(m *measured) bool { return m.ns >= need }); ok {
		return b.cause, b.ns, nil
	}
	top, _ := best(func(*measured) bool { return true })
	byName := func(c string) int64 {
		for _, m := range ms {
			if m.cause == c {
				return m.ns
			}
		}
		return 0
	}
	if storage >= need && storage >= top.ns {
		if byName(CauseLockWait) > byName(CauseSlowWrite) {
			return CauseLockWait, storage, nil
		}
		return CauseSlowWrite, storage, nil
	}
	// Only causes placed in time can be added up without counting a
	// moment twice; the largest of them names the request.
	var all []interval
	for _, m := range ms {
		all = append(all, m.ivs...)
	}
	union := min(unionLen(all), L)
	topIv, ok := best(func(m *measured) bool { return m.ivs != nil })
	if union < need || !ok {
		return CauseUnexplained, 0, nil
	}
	for _, m := range ms {
		if m.cause != topIv.cause && m.ivs != nil && m.ns*10 >= L {
			also = append(also, m.cause)
		}
	}
	slices.SortFunc(also, func(a, b string) int { return cmp.Compare(byName(b), byName(a)) })
	return topIv.cause, union, also
}

// minus returns the parts of iv not covered by holes.
func minus(iv interval, holes []interval) []interval {
	out := []interval{iv}
	for _, h := range holes {
		var next []interval
		for _, o := range out {
			if h.b <= o.a || h.a >= o.b {
				next = append(next, o)
				continue
			}
			if h.a > o.a {
				next = append(next, interval{o.a, h.a})
			}
			if h.b < o.b {
				next = append(next, interval{h.b, o.b})
			}
		}
		out = next
	}
	return out
}

// clipAll clips ivs to to, dropping what is left empty.
func clipAll(ivs []interval, to interval) []interval {
	var out []interval
	for _, iv := range ivs {
		if c := clip(iv, to); c.b > c.a {
			out = append(out, c)
		}
	}
	return out
}

// queueTolerance is how close the previous response's end must be to when
// the broker could read a request for the request to count as queued
// behind it on its connection.
const queueTolerance = int64(time.Millisecond)

// newReqCtx is the context the causes measure r in: A..E, when the
// broker could read it, the handlers and own appends sw found, and the
// network thread serving its connection (also set in f).
func (e *Explainer) newReqCtx(r *event.Request, f *Finding, sw *storageWaits, A, E, brokerStart int64, replicating bool) *reqCtx {
	x := e.idx
	c := &reqCtx{A: A, E: E, L: E - A, brokerStart: brokerStart, netFrom: brokerStart, replicating: replicating, ownEnd: sw.ownEnd,
		lockWaited: sw.blockPart, ownerParked: sw.ownerParked, ownerParks: sw.ownerParks, wakersStarved: sw.ownerStarved}
	if r.BrokerZeroWindows > 0 && r.QueuedMs <= 0 {
		// The broker's window closed while the request arrived: its
		// network thread was not reading, so the arrival is its time.
		c.netFrom = A
	}
	for _, i := range sw.ownSlow {
		w := &x.writes[i]
		c.own = append(c.own, interval{w.start, w.end})
		c.ownTID = append(c.ownTID, w.tid)
		if !slices.Contains(c.handlers, w.tid) {
			c.handlers = append(c.handlers, w.tid)
		}
	}
	if ct, ok := x.connThread(r.Client, A); ok {
		c.netTID = ct.TID
		f.NetworkThread = &ct
	}
	return c
}
