package explain

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// reqCtx is what the causes see of one request: the request and the
// finding their evidence goes to, its times, the broker threads known to
// have carried it, the writes to its partitions, and the request ahead
// of it on its connection when it was queued behind that one.
type reqCtx struct {
	r           *event.Request
	f           *Finding
	A, E, L     int64 // arrival, end, latency (unix ns)
	brokerStart int64 // when the broker could read it (see event.Request.BrokerMs)
	// sw are the writes to its partitions: its own appends and the
	// others that held it (storage.go).
	sw *storageWaits
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
	// prev is the request ahead of it on its connection when it waited
	// for that one (nil when it did not).
	prev *connLast
	// queued are, by inherited cause, the intervals the request ahead of
	// it was held up by, clipped to the time this one waited for it (nil
	// when it did not wait).
	queued map[string][]interval
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
	// fetch is a consumer fetch's split (nil for a produce request).
	fetch *fetchCtx
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
	// more is what the cause found beyond its time that the causes
	// measured after it, its named hook or the request queued behind
	// this one read (of a type of the cause's own file).
	more any
}

// measuring is what a cause's measure sees of a request: the request in
// context, and what the causes it reads (cause.after) measured of it.
type measuring struct {
	*reqCtx
	e    *Explainer
	self *cause
	got  []measured // by position in e.causes, as far as measured
}

// of is what the cause called name, one that m's cause reads, measured
// of the request. Reading a cause not in after panics: the registry
// would not have measured it first.
func (m *measuring) of(name string) measured {
	if !slices.Contains(m.self.after, name) {
		panic(fmt.Sprintf("explain: cause %q reads %q, which it does not name in after", m.self.name, name))
	}
	return m.got[m.e.causes.position(name)]
}

// ahead is what m's cause measured of the request ahead of this one on
// its connection, when this one waited for it.
func (m *measuring) ahead() (measured, bool) {
	if m.prev == nil {
		return measured{}, false
	}
	return m.prev.measured[m.e.causes.position(m.self.name)], true
}

// moreOf is what a cause found beyond its time (measured.more), when of
// type T; T's zero value otherwise.
func moreOf[T any](m measured) T {
	v, _ := m.more.(T)
	return v
}

// causeOrder is where each cause stands among the registered causes:
// ties go to the earlier.
func causeOrder(c string) int { return registered().position(c) }

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
