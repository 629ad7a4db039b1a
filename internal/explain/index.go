package explain

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// wrec is a traced write kept compactly: a million of them must fit in
// well under a gigabyte, so strings are interned and times are integers.
type wrec struct {
	start, end    int64 // unix nanoseconds
	offset, bytes int64
	tid           int32
	thread        int32 // interned
	file          int32 // interned
	dev           int32 // interned
	op            int32 // interned
	part          int32 // index into Index.parts
	failed        bool
}

func (w *wrec) dur() int64 { return w.end - w.start }

type partKey struct {
	topic     string
	partition int32
}

// partWrites are one partition's writes, sorted by start.
type partWrites struct {
	key    partKey
	writes []int32 // indices into Index.writes
	maxDur int64   // longest write: bounds the backward scan of overlaps
}

// Index holds the traced events explain joins requests with: writes per
// partition, journal commits per device, lock waits per thread, and the
// scheduling and JVM evidence (schedIndex). Add
// events in any order, then call Build before use.
type Index struct {
	writes  []wrec
	parts   []partWrites
	partIdx map[partKey]int32
	strs    []string
	strIdx  map[string]int32

	commits map[string][]event.JournalCommit // by device, sorted by start
	locks   map[int][]event.LockWait         // by TID, sorted by start
	waits   map[int][]event.KernelWait       // by TID, sorted by start
	// steals: hypervisor steal taken from the broker's threads, with
	// their spans, sorted by the span's start.
	steals    []stealRec
	maxSteal  int64 // longest span, ns
	maxWait   int64
	maxLock   int64 // longest lock wait, ns
	maxCommit int64 // longest commit span, ns
	sched     schedIndex
	// handlers are the threads that appended to a partition's log
	// (handlerTIDs sorted), tidWrites their writes by thread, sorted by
	// start, maxWrite the longest write.
	handlers    map[int32]bool
	handlerTIDs []int32
	tidWrites   map[int32][]int32
	// syncs are the partitions' file syncs by thread (syncs.go).
	syncs    map[int][]fileSync
	maxSync  int64
	maxWrite int64
	// pages are the threads' runs of adds to the page cache
	// (pagecacheindex.go); PageCacheRuns counts them.
	pages         pageRuns
	PageCacheRuns int64

	// reads are the log devices' block reads (blockreads.go).
	reads blockReads
	// Syncs and block requests are counted; block reads are joined with
	// the fetches that blocked a network thread; steal taken from other
	// processes or from idle CPUs is counted only.
	Syncs, Blocks, OtherSteal int64
	built                     bool
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	x := &Index{
		partIdx: make(map[partKey]int32),
		strIdx:  make(map[string]int32),
		commits: make(map[string][]event.JournalCommit),
		locks:   make(map[int][]event.LockWait),
		waits:   make(map[int][]event.KernelWait),
	}
	x.sched.init()
	return x
}

func (x *Index) intern(s string) int32 {
	if i, ok := x.strIdx[s]; ok {
		return i
	}
	i := int32(len(x.strs))
	x.strs = append(x.strs, s)
	x.strIdx[s] = i
	return i
}

// AddWrite adds a traced write. Fsyncs go to the syncs by thread
// (syncs.go); writes that are not on a partition's log are not what an
// append waits on and are left out.
func (x *Index) AddWrite(w *event.Write) {
	if isSyncOp(w.Op) {
		x.addSync(w.TID, w.Start.UnixNano(), w.End.UnixNano(), w.Topic, w.Partition)
		return
	}
	if w.Topic == "" || w.Partition < 0 || !isWriteOp(w.Op) {
		return
	}
	k := partKey{w.Topic, w.Partition}
	p, ok := x.partIdx[k]
	if !ok {
		p = int32(len(x.parts))
		x.parts = append(x.parts, partWrites{key: k})
		x.partIdx[k] = p
	}
	x.writes = append(x.writes, wrec{
		start: w.Start.UnixNano(), end: w.End.UnixNano(),
		offset: w.Offset, bytes: w.Bytes,
		tid: int32(w.TID), thread: x.intern(w.Thread), file: x.intern(w.File), dev: x.intern(w.Dev), op: x.intern(w.Op),
		part: p, failed: w.Error != "",
	})
	x.built = false
}

func isWriteOp(op string) bool {
	switch op {
	case "write", "pwrite64", "writev", "pwritev", "pwritev2":
		return true
	}
	return false
}

// AddCommit adds a journal commit (jbd2), an ext4 fast commit or an XFS
// log write.
func (x *Index) AddCommit(c *event.JournalCommit) {
	x.commits[c.Dev] = append(x.commits[c.Dev], *c)
	x.built = false
}

// AddLockWait adds a JFR lock wait.
func (x *Index) AddLockWait(l *event.LockWait) {
	x.locks[l.TID] = append(x.locks[l.TID], *l)
	x.maxLock = max(x.maxLock, int64(l.Latency()))
	x.built = false
}

// AddWait adds a broker thread's kernel wait.
func (x *Index) AddWait(k *event.KernelWait) {
	x.waits[k.TID] = append(x.waits[k.TID], *k)
	x.maxWait = max(x.maxWait, int64(k.End.Sub(k.Start)))
	x.built = false
}

// AddSteal adds an interval of hypervisor steal. Only steal taken from the
// broker's own threads (the tracer names those) is joined with requests:
// steal from another process, or from an idle CPU, held up the broker
// only if one of its threads was waiting for that CPU, which the trace
// does not say.
func (x *Index) AddSteal(s *event.CPUSteal) {
	if s.Thread == "" {
		x.OtherSteal++
		return
	}
	from, to := s.Span(event.MaxStealLag)
	x.steals = append(x.steals, stealRec{from: from.UnixNano(), to: to.UnixNano(), ev: *s})
	x.maxSteal = max(x.maxSteal, int64(to.Sub(from)))
	x.built = false
}

// stealRec is an interval of steal with where the stolen time may lie
// (event.CPUSteal.Span with event.MaxStealLag), in unix nanoseconds.
type stealRec struct {
	from, to int64
	ev       event.CPUSteal
}

// Build sorts what was added. Adding more afterwards needs another Build.
func (x *Index) Build() {
	if x.built {
		return
	}
	for i := range x.parts {
		x.parts[i].writes = x.parts[i].writes[:0]
		x.parts[i].maxDur = 0
	}
	x.buildSyncs()
	x.reads.build()
	x.handlers, x.handlerTIDs = make(map[int32]bool), x.handlerTIDs[:0]
	x.tidWrites, x.maxWrite = make(map[int32][]int32), 0
	for i := range x.writes {
		w := &x.writes[i]
		// Network threads never append; other writers of partition
		// logs (the KRaft log's raft-io thread, the replica fetchers,
		// the cleaner) are not handlers.
		if strings.HasSuffix(x.strs[w.file], ".log") && event.MaybeRequestHandler(x.strs[w.thread]) {
			if !x.handlers[w.tid] {
				x.handlerTIDs = append(x.handlerTIDs, w.tid)
			}
			x.handlers[w.tid] = true
		}
		x.tidWrites[w.tid] = append(x.tidWrites[w.tid], int32(i))
		x.maxWrite = max(x.maxWrite, w.dur())
		p := &x.parts[x.writes[i].part]
		p.writes = append(p.writes, int32(i))
		p.maxDur = max(p.maxDur, x.writes[i].dur())
	}
	for i := range x.parts {
		ws := x.parts[i].writes
		slices.SortStableFunc(ws, func(a, b int32) int { return cmp.Compare(x.writes[a].start, x.writes[b].start) })
	}
	slices.Sort(x.handlerTIDs)
	for _, ws := range x.tidWrites {
		slices.SortStableFunc(ws, func(a, b int32) int { return cmp.Compare(x.writes[a].start, x.writes[b].start) })
	}
	x.maxCommit = 0
	for _, cs := range x.commits {
		slices.SortStableFunc(cs, func(a, b event.JournalCommit) int {
			sa, _ := commitSpan(&a)
			sb, _ := commitSpan(&b)
			return cmp.Compare(sa, sb)
		})
		for i := range cs {
			s, e := commitSpan(&cs[i])
			x.maxCommit = max(x.maxCommit, e-s)
		}
	}
	for _, ls := range x.locks {
		slices.SortStableFunc(ls, func(a, b event.LockWait) int { return a.Start.Compare(b.Start) })
	}
	for _, ws := range x.waits {
		slices.SortStableFunc(ws, func(a, b event.KernelWait) int { return a.Start.Compare(b.Start) })
	}
	slices.SortStableFunc(x.steals, func(a, b stealRec) int { return cmp.Compare(a.from, b.from) })
	x.pages.build()
	x.sched.build()
	x.built = true
}

// Writes is the number of writes indexed.
func (x *Index) Writes() int { return len(x.writes) }

// overlapping calls fn for the writes on partition k that overlap [a, b),
// in start order.
func (x *Index) overlapping(k partKey, a, b int64, fn func(i int32)) {
	p, ok := x.partIdx[k]
	if !ok {
		return
	}
	pw := &x.parts[p]
	ws := pw.writes
	// The first write that may overlap starts at or after a-maxDur.
	lo, _ := slices.BinarySearchFunc(ws, a-pw.maxDur, func(i int32, t int64) int { return cmp.Compare(x.writes[i].start, t) })
	for _, i := range ws[lo:] {
		w := &x.writes[i]
		if w.start >= b {
			return
		}
		if w.end > a {
			fn(i)
		}
	}
}

// commitSpan is the time a commit may hold writes up: from when it was
// requested (jbd2's request delay before the commit thread started it)
// to its end.
func commitSpan(c *event.JournalCommit) (int64, int64) {
	a := c.Start.UnixNano()
	if c.Phases != nil && c.Phases.RequestDelayMs > 0 {
		a -= int64(c.Phases.RequestDelayMs * 1e6)
	}
	return a, c.End.UnixNano()
}

// commitsOverlapping returns the commits on dev whose span overlaps
// [a, b).
func (x *Index) commitsOverlapping(dev string, a, b int64) []event.JournalCommit {
	cs := x.commits[dev]
	lo, _ := slices.BinarySearchFunc(cs, a-x.maxCommit, func(c event.JournalCommit, t int64) int {
		s, _ := commitSpan(&c)
		return cmp.Compare(s, t)
	})
	var out []event.JournalCommit
	for i := lo; i < len(cs); i++ {
		s, e := commitSpan(&cs[i])
		if s >= b {
			break
		}
		if e > a {
			out = append(out, cs[i])
		}
	}
	return out
}

// locksOverlapping returns tid's lock waits overlapping [a, b).
func (x *Index) locksOverlapping(tid int, a, b int64) []event.LockWait {
	ls := x.locks[tid]
	lo, _ := slices.BinarySearchFunc(ls, a-x.maxLock, func(l event.LockWait, t int64) int { return cmp.Compare(l.Start.UnixNano(), t) })
	var out []event.LockWait
	for _, l := range ls[lo:] {
		if l.Start.UnixNano() >= b {
			break
		}
		if l.End.UnixNano() > a {
			out = append(out, l)
		}
	}
	return out
}

// writesOf returns the writes of tid overlapping [a, b).
func (x *Index) writesOf(tid int32, a, b int64) []int32 {
	ws := x.tidWrites[tid]
	lo, _ := slices.BinarySearchFunc(ws, a-x.maxWrite, func(i int32, t int64) int { return cmp.Compare(x.writes[i].start, t) })
	var out []int32
	for _, i := range ws[lo:] {
		if x.writes[i].start >= b {
			break
		}
		if x.writes[i].end > a {
			out = append(out, i)
		}
	}
	return out
}

// waitsOverlapping returns tid's kernel waits overlapping [a, b).
func (x *Index) waitsOverlapping(tid int, a, b int64) []event.KernelWait {
	ws := x.waits[tid]
	lo, _ := slices.BinarySearchFunc(ws, a-x.maxWait, func(k event.KernelWait, t int64) int { return cmp.Compare(k.Start.UnixNano(), t) })
	var out []event.KernelWait
	for _, k := range ws[lo:] {
		if k.Start.UnixNano() >= b {
			break
		}
		if k.End.UnixNano() > a {
			out = append(out, k)
		}
	}
	return out
}

// stealsOverlapping returns the steal taken from the broker's threads
// whose span overlaps [a, b).
func (x *Index) stealsOverlapping(a, b int64) []event.CPUSteal {
	lo, _ := slices.BinarySearchFunc(x.steals, a-x.maxSteal, func(s stealRec, t int64) int { return cmp.Compare(s.from, t) })
	var out []event.CPUSteal
	for _, s := range x.steals[lo:] {
		if s.from >= b {
			break
		}
		if s.to > a {
			out = append(out, s.ev)
		}
	}
	return out
}

// toEvent rebuilds the event of write i.
func (x *Index) toEvent(i int32) event.Write {
	w := &x.writes[i]
	k := x.parts[w.part].key
	ev := event.Write{
		Start: time.Unix(0, w.start).UTC(), End: time.Unix(0, w.end).UTC(),
		LatencyMs: float64(w.dur()) / 1e6,
		TID:       int(w.tid), Thread: x.strs[w.thread], Op: x.strs[w.op],
		Bytes: w.bytes, Offset: w.offset, File: x.strs[w.file],
		Topic: k.topic, Partition: k.partition, Dev: x.strs[w.dev],
	}
	if w.failed {
		ev.Error = "failed"
	}
	return ev
}

func (k partKey) String() string { return k.topic + "-" + strconv.Itoa(int(k.partition)) }
