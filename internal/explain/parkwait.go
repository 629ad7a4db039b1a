package explain

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseParkWait: the handler thread carrying the request slept until
// another broker thread let it go: parked on a java.util.concurrent lock
// (a ReentrantLock such as a segment index's, which Kafka holds while it
// msyncs the index to disk; a read-write lock; a condition), or blocked
// on a monitor whose owner was itself parked. A monitor's owner that was
// appending to the partition meanwhile is lock-wait instead.
const CauseParkWait = "park-wait"

func init() {
	register(cause{
		name:  CauseParkWait,
		order: 90,
		short: "park",
		help: "its handler slept until a broker thread that is not a\n" +
			"handler let it go (the log flusher holding an index lock)",
		measure: func(m *measuring) measured {
			var ahead []ParkWait
			if prev, ok := m.ahead(); ok {
				ahead = moreOf[*parkedMore](prev).parks
			}
			return m.e.parkWait(m.reqCtx, m.f, ahead)
		},
		inherited: true,
		detail:    func(f *Finding) string { return parkWaitDetail(f) + alsoDetail(f) },
	})
}

// parkedMore is what parkWait found beyond its time (its measure's more):
// the waits for a CPU of the threads that ended the sleeps it followed
// (cpu-starved's), and the sleeps it kept as evidence (for the request
// queued behind).
type parkedMore struct {
	wakersStarved wakersStarved
	parks         []ParkWait
}

// Evidence bounds.
const (
	maxParkEvidence = 10
	// parkChainDepth bounds how far a sleep is followed through the
	// handlers that ended it.
	parkChainDepth = 4
	// parkWakeSlack is how far a JFR park's end and the tracer's wake-up
	// may lie apart and be the same event (JFR's clock is offset from the
	// kernel's by up to a few hundred microseconds).
	parkWakeSlack = int64(2 * time.Millisecond)
)

// ParkWait is one sleep of a broker thread that held the request up, and
// who ended it.
type ParkWait struct {
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	TID       int       `json:"tid"`
	Thread    string    `json:"thread"`
	// Blocker is the class JFR says the thread parked on (empty when only
	// the tracer saw the sleep).
	Blocker string `json:"blocker,omitempty"`
	// WakerTID and WakerThread name the broker thread that woke it (the
	// lock's holder releasing it), when traced.
	WakerTID    int    `json:"waker_tid,omitempty"`
	WakerThread string `json:"waker_thread,omitempty"`
	// Depth is 0 for the handler's own sleep, 1 for its waker's sleep
	// meanwhile, and so on.
	Depth int `json:"depth,omitempty"`
}

// parkWait measures the time the request's handler threads slept waiting
// for another broker thread, between when the broker could read the
// request and when the handler was done with it (its last append; or the
// request's end when no follower is waited for: the handler answers
// then). The sleeps are JFR's untimed parks and the tracer's wake-ups by
// another broker thread, minus:
//
//   - the handler's own appends and kernel waits (slow-write) and the
//     times other appends to its partitions held it (lock-wait, in
//     c.lockWaited);
//   - sleeps ended by a network thread, which wakes an idle handler when
//     it queues a request: the handler was idle, not held;
//   - handlers waiting for each other (a partition's monitor passed
//     from one appender to the next), except while the one waited for
//     was itself parked; and the JVM's own threads ending a pause.
//
// The wakers' kernel waits name what the holder did. While the request
// was queued on its connection, the sleeps the request ahead was held by
// (ahead) are its evidence too.
func (e *Explainer) parkWait(c *reqCtx, f *Finding, ahead []ParkWait) measured {
	more := &parkedMore{wakersStarved: c.sw.ownerStarved}
	m := measured{cause: CauseParkWait, more: more}
	holes := slices.Concat(c.own, c.lockWaited)
	for _, tid := range c.handlers {
		from, ownStart, busy := e.handlerFrom(c, tid)
		span := interval{from, c.E}
		if c.replicating {
			// It hands the request to the purgatory after its last
			// append and moves on: later sleeps are another request's.
			span.b = c.ownEnd
		}
		// A handler that appended for another request since the broker
		// could read this one and then slept, before this one's append,
		// until a thread other than a handler woke it, was still in
		// that request: Kafka adds the index entry (under the index's
		// lock, which the flusher holds while it syncs the index) after
		// writing the batch. A wait for a handler is a wait for this
		// request's partition.
		keep := func(p ParkWait) bool {
			return p.Start.UnixNano() >= ownStart || e.idx.isHandler(p.WakerTID) || !e.inOtherRequest(tid, p, busy)
		}
		for _, p := range e.parkedParts(int(tid), span, 0, keep, f, &more.wakersStarved) {
			m.ivs = append(m.ivs, minus(p, holes)...)
		}
	}
	m.ivs = append(m.ivs, c.ownerParked...)
	f.ParkWaits = append(f.ParkWaits, c.ownerParks...)
	if q := c.queued[CauseParkWait]; len(q) > 0 {
		m.ivs = append(m.ivs, q...)
		// The sleeps the request ahead was held by while this one
		// waited for it are this one's evidence too.
		for _, p := range ahead {
			if p.Start.UnixNano() < c.brokerStart && p.End.UnixNano() > c.A {
				f.ParkWaits = append(f.ParkWaits, p)
			}
		}
	}
	m.ns = min(unionLen(m.ivs), c.L)
	if m.ns == 0 {
		f.ParkWaits = nil
		return m
	}
	slices.SortStableFunc(f.ParkWaits, func(a, b ParkWait) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), cmp.Compare(b.LatencyMs, a.LatencyMs))
	})
	f.ParkWaits = f.ParkWaits[:min(len(f.ParkWaits), maxParkEvidence)]
	more.parks = f.ParkWaits
	return m
}

// inOtherRequest reports whether handler tid was still in another
// request when sleep p began: its last append before then is more recent
// than its last wake-up by a network thread (which gives an idle handler
// a request), or busy (it appended for another request since the broker
// could read this one). Unless the thread that ended the sleep synced
// other partitions' files than that last append's all along: the other
// request holds only its own partition's locks, so the sleep was for
// this one.
func (e *Explainer) inOtherRequest(tid int32, p ParkWait, busy bool) bool {
	x := e.idx
	t := p.Start.UnixNano()
	ws := x.tidWrites[tid]
	i, _ := slices.BinarySearchFunc(ws, t, func(w int32, t int64) int { return cmp.Compare(x.writes[w].end, t) })
	// Sorted by start; ends are close enough to sorted for a handler's
	// own appends, which do not overlap.
	if i == 0 {
		return busy
	}
	last := &x.writes[ws[i-1]]
	if !busy {
		for _, u := range x.wakeupsOverlapping(int(tid), last.end, t) {
			if x.isNetworkThread(u.WakerTID) && u.End.UnixNano() > last.end && u.End.UnixNano() <= t {
				return false
			}
		}
	}
	if synced := x.syncedBy(p.WakerTID, t, p.End.UnixNano()); len(synced) > 0 && !slices.Contains(synced, x.parts[last.part].key) {
		return false
	}
	return true
}

// handlerFrom is when handler tid can have taken the request: when the
// broker could read it, or after the end of the handler's last append for
// another request before its first own append at ownStart (it was busy
// with that request until then); busy says there was such an append.
func (e *Explainer) handlerFrom(c *reqCtx, tid int32) (from, ownStart int64, busy bool) {
	ownStart = c.E
	for i, t := range c.ownTID {
		if t == tid {
			ownStart = min(ownStart, c.own[i].a)
		}
	}
	from = c.brokerStart
	for _, i := range e.idx.writesOf(tid, c.brokerStart, ownStart) {
		w := &e.idx.writes[i]
		if w.end <= ownStart && !slices.Contains(c.own, interval{w.start, w.end}) {
			from, busy = max(from, w.end), true
		}
	}
	return min(from, ownStart), ownStart, busy
}

// parkedParts returns the parts of span during which tid was parked
// (JFR), or asleep until a broker thread woke it that is not a handler
// (a background thread holding a lock: the log flusher, the cleaner, a
// fetcher), not a network thread and not one of the JVM's own; a handler
// that woke it counts for the parts of the sleep that handler was parked
// in turn, followed to parkChainDepth. The sleeps that count, and what
// their wakers did in the kernel meanwhile, are added to f as evidence.
//
// The parts of a sleep during which the thread that ended it waited for
// a CPU (or a thread it waited for in turn, see heldBy) are not
// park-wait's: the lock was held up by the CPU, not by what its holder
// did. They go to starved, cpu-starved's.
func (e *Explainer) parkedParts(tid int, span interval, depth int, keep func(ParkWait) bool, f *Finding, starved *wakersStarved) []interval {
	x := e.idx
	var out []interval
	for _, p := range e.sleepsOf(tid, span) {
		if depth == 0 && p.Start.UnixNano() < span.a {
			continue // asleep before it could have taken the request: another request's
		}
		if keep != nil && !keep(p) {
			continue
		}
		iv := clip(interval{p.Start.UnixNano(), p.End.UnixNano()}, span)
		if iv.b <= iv.a {
			continue
		}
		var parts []interval
		switch {
		case p.Blocker != "":
			parts = minusAll([]interval{iv}, e.wakerStarved(p, iv, depth, starved))
		case p.WakerTID == 0 || event.IsStopTheWorldThread(p.WakerThread):
			continue
		case x.isHandler(p.WakerTID):
			e.wakerStarved(p, iv, depth, starved)
			if depth+1 < parkChainDepth {
				parts = e.parkedParts(p.WakerTID, iv, depth+1, nil, f, starved)
			}
		default:
			parts = minusAll([]interval{iv}, e.wakerStarved(p, iv, depth, starved))
		}
		if len(parts) == 0 {
			continue
		}
		out = append(out, parts...)
		p.Depth = depth
		f.ParkWaits = append(f.ParkWaits, p)
		if p.WakerTID != 0 && !x.isHandler(p.WakerTID) {
			for _, kw := range x.waitsOverlapping(p.WakerTID, iv.a, iv.b) {
				addKernelWait(f, kw)
			}
		}
	}
	return out
}

// wakersStarved are the waits for a CPU of the threads that ended the
// sleeps park-wait followed, during those sleeps (parkedParts).
type wakersStarved struct {
	delays []event.RunDelay
}

// wakerStarved adds to starved, and returns, the parts of sleep p (within
// iv) during which the thread that ended it waited for a CPU, and, when
// that thread is not a handler (whose own sleeps parkedParts follows),
// the threads it waited for in turn (heldBy). A stop-the-world thread's
// waits are the JVM pause's (jvmPauses).
func (e *Explainer) wakerStarved(p ParkWait, iv interval, depth int, starved *wakersStarved) []interval {
	if p.WakerTID == 0 || event.IsStopTheWorldThread(p.WakerThread) {
		return nil
	}
	ds := e.delaysIn(p.WakerTID, iv)
	if !e.idx.isHandler(p.WakerTID) {
		ds = append(ds, e.heldBy(p.WakerTID, iv, depth+1)...)
	}
	starved.delays = append(starved.delays, ds...)
	return delaySpans(ds)
}

// delaySpans returns the intervals of ds.
func delaySpans(ds []event.RunDelay) []interval {
	ivs := make([]interval, 0, len(ds))
	for _, d := range ds {
		ivs = append(ivs, interval{d.Start.UnixNano(), d.End.UnixNano()})
	}
	return ivs
}

// sleepsOf returns tid's sleeps overlapping span that another broker
// thread ended: JFR's untimed parks (each with the wake-up that ended
// it, when traced) and the tracer's wake-ups not already among them;
// none ended by a network thread.
func (e *Explainer) sleepsOf(tid int, span interval) []ParkWait {
	x := e.idx
	var out []ParkWait
	for _, l := range x.locksOverlapping(tid, span.a, span.b) {
		if !l.Park {
			continue
		}
		p := ParkWait{Start: l.Start, End: l.End, LatencyMs: l.LatencyMs, TID: l.TID, Thread: l.Thread, Blocker: l.Monitor}
		if _, waker, ok := x.lastWake(tid, l.End.UnixNano()-parkWakeSlack, l.End.UnixNano()+parkWakeSlack); ok {
			if x.isNetworkThread(waker) {
				continue
			}
			p.WakerTID, p.WakerThread = waker, x.threadName(waker)
		}
		out = append(out, p)
	}
	for _, u := range x.wakeupsOverlapping(tid, span.a, span.b) {
		if u.WakerTID == tid || x.isNetworkThread(u.WakerTID) {
			continue
		}
		if slices.ContainsFunc(out, func(p ParkWait) bool { return abs64(p.End.UnixNano()-u.End.UnixNano()) <= parkWakeSlack }) {
			continue
		}
		out = append(out, ParkWait{Start: u.Start, End: u.End, LatencyMs: u.SleptMs, TID: u.TID, Thread: u.Thread,
			WakerTID: u.WakerTID, WakerThread: u.WakerThread})
	}
	return out
}

// ownerParked splits a handler's monitor wait (JFR, with the monitor's
// owner) into the parts during which the owner was parked (see
// parkedParts; park-wait's), those during which the threads it waited for
// waited for a CPU (in starved, cpu-starved's) and the rest (lock-wait's).
// ps collects the owner's sleeps as evidence.
func (e *Explainer) ownerParked(l event.LockWait, iv interval, ps *[]ParkWait, starved *wakersStarved) (parked, rest []interval) {
	if l.Park || l.OwnerTID == 0 {
		return nil, []interval{iv}
	}
	var ev Finding
	n := len(starved.delays)
	parked = e.parkedParts(l.OwnerTID, iv, 1, nil, &ev, starved)
	*ps = append(*ps, ev.ParkWaits...)
	held := append(slices.Clone(parked), delaySpans(starved.delays[n:])...)
	return parked, minusAll([]interval{iv}, held)
}

// minusAll returns the parts of ivs not covered by holes.
func minusAll(ivs, holes []interval) []interval {
	var out []interval
	for _, iv := range ivs {
		out = append(out, minus(iv, holes)...)
	}
	return out
}

// parkWaitDetail says who the handler waited for, and what that thread
// was doing.
func parkWaitDetail(f *Finding) string {
	if len(f.ParkWaits) == 0 {
		if f.QueuedBehind != nil {
			return fmt.Sprintf("waited %.1f ms on its connection behind request %d, whose handler waited for another broker thread",
				f.ExplainedMs, f.QueuedBehind.CorrelationID)
		}
		return fmt.Sprintf("its handler waited %.1f ms for another broker thread", f.ExplainedMs)
	}
	p := f.ParkWaits[0]
	s := fmt.Sprintf("its handler %s (tid %d) waited %.1f ms", p.Thread, p.TID, f.ExplainedMs)
	if p.Blocker != "" {
		s += " parked on " + p.Blocker
	}
	if p.WakerTID != 0 {
		s += fmt.Sprintf(" until %s (tid %d) let it go", p.WakerThread, p.WakerTID)
	}
	for _, w := range f.ParkWaits[1:] {
		if w.Depth == p.Depth+1 && w.TID == p.WakerTID && w.WakerTID != 0 {
			s += fmt.Sprintf(", which waited %.1f ms for %s (tid %d)", w.LatencyMs, w.WakerThread, w.WakerTID)
			break
		}
	}
	if kw, ok := longestWait(f.KernelWaits); ok {
		s += fmt.Sprintf("; %s (tid %d) slept %.1f ms in the kernel meanwhile, at %s", kw.Thread, kw.TID, kw.LatencyMs, frames(kw.Stack))
	}
	return s
}
