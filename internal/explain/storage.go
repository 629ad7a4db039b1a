package explain

import (
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// storageWaits is what the writes to a request's partitions account for:
// its own appends and what held it before them (slow-write's and
// lock-wait's measures), with the evidence the other causes need.
type storageWaits struct {
	// own are its appends and the handler's file-system waits outside
	// them; ownSlow the appends' writes; ownEnd the last one's end (-1:
	// none found); allOwn says every partition's append was found.
	own     []interval
	ownSlow []int32
	ownEnd  int64
	allOwn  bool
	// blockConn are other writes to its partitions while it waited on its
	// connection (before the broker could read it), blockPart those and
	// its handler's monitor waits after; blockers the writes.
	blockConn, blockPart []interval
	blockers             []int32
	// ownerParked are the parts of its monitor waits during which the
	// monitor's owner was parked (park-wait's), ownerParks those sleeps,
	// ownerStarved the waits for a CPU of the threads the owner waited
	// for (cpu-starved's).
	ownerParked  []interval
	ownerParks   []ParkWait
	ownerStarved wakersStarved
}

// waited are the times other writes held the request (lock-wait's).
func (sw *storageWaits) waited() []interval { return slices.Concat(sw.blockConn, sw.blockPart) }

// partitionWrites finds, per partition of r, its own append and the other
// writes that held it, adds them to f as evidence and returns the
// intervals they account for. A..E is the request, brokerStart when the
// broker could read it.
func (e *Explainer) partitionWrites(r *event.Request, f *Finding, A, brokerStart, E int64) storageWaits {
	sw := storageWaits{ownEnd: -1, allOwn: len(r.Partitions) > 0}
	for pi := range r.Partitions {
		p := &r.Partitions[pi]
		ev := PartitionEvidence{Topic: p.Topic, Partition: p.Partition, Records: p.Records, Bytes: p.Bytes}
		ev.MessageIDs = p.MessageIDs
		if len(ev.MessageIDs) > e.cfg.MaxMessageIDs {
			ev.MoreMessageIDs = len(ev.MessageIDs) - e.cfg.MaxMessageIDs
			ev.MessageIDs = ev.MessageIDs[:e.cfg.MaxMessageIDs]
		}
		var cands []int32
		e.idx.overlapping(partKey{p.Topic, p.Partition}, A, E, func(i int32) { cands = append(cands, i) })

		ownIdx, matched := e.findOwn(p, cands, A, brokerStart, E)
		waitEnd := E
		var lockOwners []lockOwner
		if ownIdx >= 0 {
			waitEnd = max(e.idx.writes[ownIdx].start, A)
			we := e.evidence(ownIdx)
			we.MatchedBy = matched
			ev.Write = &we
			lockOwners = e.ownAppend(&sw, f, ownIdx, A, brokerStart, E)
		} else {
			sw.allOwn = false
		}
		e.blockingWrites(&sw, &ev, cands, ownIdx, lockOwners, A, brokerStart, waitEnd)
		f.Partitions = append(f.Partitions, ev)
	}
	return sw
}

// ownAppend adds write ownIdx, the request's append to one partition, to
// sw with the handler's file-system waits outside it and its JFR lock
// waits before it (from when the broker took the request: before that the
// thread may have been busy with the connection's previous request), and
// returns the monitors' owners during those waits.
func (e *Explainer) ownAppend(sw *storageWaits, f *Finding, ownIdx int32, A, brokerStart, E int64) []lockOwner {
	x := e.idx
	w := &x.writes[ownIdx]
	waitEnd := max(w.start, A)
	sw.own = append(sw.own, clip(interval{w.start, w.end}, interval{A, E}))
	sw.ownEnd = max(sw.ownEnd, w.end)
	sw.ownSlow = append(sw.ownSlow, ownIdx)
	// The handler blocked in the file system outside its write call (a
	// page fault on a memory-mapped index, a journal handle): part of
	// appending, too.
	for _, kw := range x.waitsOverlapping(int(w.tid), brokerStart, E) {
		if !isFSWait(kw.Stack) {
			continue
		}
		sw.own = append(sw.own, clip(interval{kw.Start.UnixNano(), kw.End.UnixNano()}, interval{brokerStart, E}))
		addKernelWait(f, kw)
	}
	var owners []lockOwner
	for _, l := range x.locksOverlapping(int(w.tid), brokerStart, waitEnd) {
		// A request's partitions are appended by one thread: its waits
		// show up once per partition.
		if l.Park || slices.ContainsFunc(f.LockWaits, func(o event.LockWait) bool { return o.TID == l.TID && o.Start.Equal(l.Start) }) {
			continue // parks are park-wait's (parkwait.go)
		}
		f.LockWaits = append(f.LockWaits, l)
		iv := clip(interval{l.Start.UnixNano(), l.End.UnixNano()}, interval{brokerStart, waitEnd})
		parked, rest := e.ownerParked(l, iv, &sw.ownerParks, &sw.ownerStarved)
		sw.ownerParked = append(sw.ownerParked, parked...)
		sw.blockPart = append(sw.blockPart, rest...)
		owners = append(owners, lockOwner{tid: int32(l.OwnerTID), iv: interval{l.Start.UnixNano(), l.End.UnixNano()}})
		// Where the owner was stuck meanwhile, if in the kernel.
		if l.OwnerTID != 0 {
			for _, kw := range x.waitsOverlapping(l.OwnerTID, l.Start.UnixNano(), l.End.UnixNano()) {
				if isFSWait(kw.Stack) {
					addKernelWait(f, kw)
				}
			}
		}
	}
	return owners
}

// blockingWrites adds to sw and ev the other writes to a partition (cands,
// but ownIdx) that held the request before its own append began at
// waitEnd: on its connection before brokerStart, on the partition after.
// A write by the owner of a monitor it waited for (JFR) is named so.
func (e *Explainer) blockingWrites(sw *storageWaits, ev *PartitionEvidence, cands []int32, ownIdx int32, owners []lockOwner, A, brokerStart, waitEnd int64) {
	for _, i := range cands {
		if i == ownIdx {
			continue
		}
		w := &e.idx.writes[i]
		if w.start >= waitEnd {
			continue
		}
		conn := clip(interval{w.start, w.end}, interval{A, brokerStart})
		part := clip(interval{w.start, w.end}, interval{brokerStart, waitEnd})
		if conn.b-conn.a+part.b-part.a <= 0 {
			continue
		}
		sw.blockConn = append(sw.blockConn, conn)
		sw.blockPart = append(sw.blockPart, part)
		we := e.evidence(i)
		if slices.ContainsFunc(owners, func(o lockOwner) bool {
			return o.tid != 0 && o.tid == w.tid && w.start < o.iv.b && w.end > o.iv.a
		}) {
			we.MatchedBy = MatchLockOwner
		}
		ev.Blocking = append(ev.Blocking, we)
		sw.blockers = append(sw.blockers, i)
	}
}

// addKernelWait adds kw to f's evidence once.
func addKernelWait(f *Finding, kw event.KernelWait) {
	if !slices.ContainsFunc(f.KernelWaits, func(o event.KernelWait) bool { return o.TID == kw.TID && o.Start.Equal(kw.Start) }) {
		f.KernelWaits = append(f.KernelWaits, kw)
	}
}

// queuedBehindWrites adds to sw what the request ahead of it on its
// connection (prev, a slow-write or lock-wait) rested on while this one
// waited for it, A..brokerStart: the writes, named in f.QueuedBehind, and
// the kernel or lock waits that have no write of their own.
func (e *Explainer) queuedBehindWrites(sw *storageWaits, f *Finding, prev *connLast, A, brokerStart int64) {
	qb := &QueuedBehind{CorrelationID: prev.corr, Cause: prev.cause}
	for _, i := range prev.roots {
		w := &e.idx.writes[i]
		if iv := clip(interval{w.start, w.end}, interval{A, brokerStart}); iv.b > iv.a {
			qb.Writes = append(qb.Writes, e.evidence(i))
			sw.blockers = append(sw.blockers, i)
		}
	}
	held := int64(0)
	for _, iv := range prev.ivs {
		if c := clip(iv, interval{A, brokerStart}); c.b > c.a {
			sw.blockConn = append(sw.blockConn, c)
			held += c.b - c.a
		}
	}
	if held > 0 {
		f.QueuedBehind = qb
	}
}

// storageRoots returns the writes f's storage cause rests on (none for
// another cause): its own appends for slow-write, the writes it waited
// behind for lock-wait (which sets f.Via: byConn, it waited on its
// connection longer than on the partition), only those that make up most
// of it: a fast append that also overlapped the wait is evidence, not a
// root.
func (e *Explainer) storageRoots(f *Finding, sw *storageWaits, byConn bool) []int32 {
	var roots []int32
	switch f.Cause {
	case CauseSlowWrite:
		roots = sw.ownSlow
	case CauseLockWait:
		roots = sw.blockers
		f.Via = ViaPartitionLock
		if byConn {
			f.Via = ViaConnection
		}
	}
	var significant []int32
	for _, i := range roots {
		if float64(e.idx.writes[i].dur()) >= e.cfg.Share*f.ExplainedMs*1e6 {
			significant = append(significant, i)
		}
	}
	return significant
}
