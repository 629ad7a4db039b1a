package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

// SlowLogConfig configures the slow-request log: rotating recording
// directories under Dir that `kscope explain` and `kscope report` read.
type SlowLogConfig struct {
	// Dir holds the segments, one recording directory each
	// (slow-20261122T010000Z); "" turns the log off.
	Dir string
	// Threshold: requests at least this slow are kept (default 100 ms).
	Threshold time.Duration
	// APIs the threshold applies to, by kmsg name (default Produce);
	// empty with AllAPIs: every API.
	APIs    []string
	AllAPIs bool
	// Rotate starts a new segment after this long (default 1 h); Keep is
	// the segments kept, the oldest deleted first (default 24).
	Rotate time.Duration
	Keep   int
	// MaxPerSecond bounds the slow requests written per second (default
	// 200): a broker stalled for minutes must not fill the disk.
	MaxPerSecond int
	// Window is how long traced I/O events are kept to be joined with a
	// slow request that has not completed yet (default 30 s);
	// MaxEvents bounds them in number (default 100 000, some 40 MB).
	Window    time.Duration
	MaxEvents int
	// Settle is how long after a slow request ends it is written, so that
	// the tracer's events of that time have arrived (default 1 s).
	Settle time.Duration
}

func (c SlowLogConfig) withDefaults() SlowLogConfig {
	if c.Threshold <= 0 {
		c.Threshold = 100 * time.Millisecond
	}
	if len(c.APIs) == 0 && !c.AllAPIs {
		c.APIs = []string{"Produce"}
	}
	if c.Rotate <= 0 {
		c.Rotate = time.Hour
	}
	if c.Keep <= 0 {
		c.Keep = 24
	}
	if c.MaxPerSecond <= 0 {
		c.MaxPerSecond = 200
	}
	if c.Window <= 0 {
		c.Window = 30 * time.Second
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = 100_000
	}
	if c.Settle <= 0 {
		c.Settle = time.Second
	}
	return c
}

// SegmentPrefix starts the name of every segment directory.
const SegmentPrefix = "slow-"

// segmentTimeFormat names segments so that they sort by time.
const segmentTimeFormat = "20060102T150405.000Z"

// connHistory is the number of earlier requests kept per connection: the
// ones a slow request may have queued behind.
const connHistory = 8

// joinMargin widens a slow request's span when its I/O is looked for:
// the capture and the tracer use different clocks (see recording.Clock).
const joinMargin = 50 * time.Millisecond

// ioItem is a traced event kept for joining.
type ioItem struct {
	start, end time.Time
	ev         any // *event.Write, *event.JournalCommit, *event.FileSync, *event.BlockIO, *event.KernelWait, *event.RunDelay, *event.Wakeup, *event.CPUThrottle
	written    bool
}

// connKey names a connection by its two ends.
type connKey struct{ client, broker string }

// pendingSlow is a slow request waiting to be written, with the requests
// it may have queued behind, taken when it completed: by the time it is
// written (Settle later) a busy connection's history has moved on.
type pendingSlow struct {
	k       *keptRequest
	context []*keptRequest
}

type keptRequest struct {
	r       *event.Request
	written bool
	// own is the copy r points to when the request was lent (the
	// decoder reuses its events): one allocation for both.
	own event.Request
}

// keep returns r kept: a copy of it and of its partitions, since the
// decoder reuses both once onRequest returns.
func keep(r *event.Request) *keptRequest {
	k := &keptRequest{own: *r}
	k.own.Partitions = slices.Clone(r.Partitions)
	k.r = &k.own
	return k
}

// slowLog keeps the slow requests, the requests before them on their
// connections and the I/O around them. Requests come from the capture
// goroutine, events from the tracer's, flush from a ticker: all under mu.
type slowLog struct {
	cfg  SlowLogConfig
	apis map[string]bool
	meta func() recording.Meta // the agent's view of the broker, for a new segment

	mu      sync.Mutex
	io      []ioItem // in arrival order, a ring trimmed from the front
	ioHead  int
	conns   map[connKey][]*keptRequest
	pending []pendingSlow
	// threads is which broker thread serves each client connection (the
	// tracer says so once, when the thread first reads from it), and
	// threadsWritten those written to the current segment.
	threads        map[string]event.ConnThread
	threadsWritten map[string]bool

	// explaining: slow requests written are also queued in jobs, to be
	// explained and exported as traces (traces.go).
	explaining bool
	jobs       []slowJob
	// replicaFetches are the followers' Fetch requests of the last Window
	// (at most MaxEvents), in arrival order: a slow acks=all request's
	// wait for its followers is measured by those around it, which are
	// written with it.
	replicaFetches []*keptRequest
	seg            *recording.Writer
	segMeta        recording.Meta
	segStart       time.Time

	budgetSecond int64 // the unix second the budget is for
	budget       int

	// Totals since the start, and the current segment's (under mu).
	written, context, dropped, ioOverflow, errors int64
	segContext, segDropped                        int64
	lastErr                                       error
	lastErrAt                                     time.Time
}

func newSlowLog(cfg SlowLogConfig, meta func() recording.Meta) (*slowLog, error) {
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("slow-request log: %w", err)
	}
	s := &slowLog{cfg: cfg, meta: meta, conns: make(map[connKey][]*keptRequest),
		threads: make(map[string]event.ConnThread), threadsWritten: make(map[string]bool),
		// compact keeps the events within twice MaxEvents: reserved at
		// once, so a busy broker's events never copy the slice to grow it
		// (untouched, the reserve costs no memory until it is used).
		io: make([]ioItem, 0, 2*cfg.MaxEvents)}
	if !cfg.AllAPIs {
		s.apis = make(map[string]bool)
		for _, a := range cfg.APIs {
			s.apis[a] = true
		}
	}
	return s, nil
}

func (s *slowLog) isSlow(r *event.Request) bool {
	if s.apis != nil && !s.apis[r.API] {
		return false
	}
	if r.End.IsZero() {
		return false // acks=0, or the connection ended: no latency to speak of
	}
	return r.End.Sub(r.Arrival) >= s.cfg.Threshold
}

// request keeps r in its connection's history and, when slow, for the
// next flush.
func (s *slowLog) request(r *event.Request) {
	key := connKey{r.Client, r.Broker}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.conns[key]
	if len(h) == connHistory {
		copy(h, h[1:])
		h = h[:connHistory-1]
	}
	k := keep(r)
	r = k.r
	s.conns[key] = append(h, k)
	if r.ReplicaID != nil && *r.ReplicaID >= 0 && r.API == "Fetch" {
		if len(s.replicaFetches) >= s.cfg.MaxEvents {
			s.replicaFetches = slices.Delete(s.replicaFetches, 0, len(s.replicaFetches)/2)
		}
		s.replicaFetches = append(s.replicaFetches, &keptRequest{r: r})
	}
	if s.isSlow(r) {
		s.pending = append(s.pending, pendingSlow{k: k, context: s.contextOf(r)})
	}
}

// event keeps a traced event for joining.
func (s *slowLog) event(start, end time.Time, ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.io)-s.ioHead >= s.cfg.MaxEvents {
		s.io[s.ioHead] = ioItem{} // the event goes now, not at the next compaction
		s.ioHead++
		s.ioOverflow++
		s.compact()
	}
	s.io = append(s.io, ioItem{start: start, end: end, ev: ev})
}

// maxConnThreads bounds the connections whose thread is remembered: a
// broker with more open connections than this loses the oldest's
// (explain then does without that connection's network thread).
const maxConnThreads = 100_000

// connThread remembers which thread serves a connection, for the slow
// requests that come on it later.
func (s *slowLog) connThread(c *event.ConnThread) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.threads[c.Client]; !ok && len(s.threads) >= maxConnThreads {
		for k := range s.threads { // any one: map order is random
			delete(s.threads, k)
			delete(s.threadsWritten, k)
			break
		}
	}
	s.threads[c.Client] = *c
	delete(s.threadsWritten, c.Client) // a new connection from a reused port
}

// flush writes the slow requests that ended at least Settle ago, with
// their context and I/O, rotates the segment when it is due, and trims
// what is too old to be joined. With explaining on, it returns what
// explaining each request written needs.
func (s *slowLog) flush(now time.Time) []slowJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.jobs = nil }()
	if s.seg != nil && now.Sub(s.segStart) >= s.cfg.Rotate {
		s.fail(s.closeSegment(now))
	}
	cut := now.Add(-s.cfg.Settle)
	keep := s.pending[:0]
	wrote := false
	for _, p := range s.pending {
		if p.k.r.End.After(cut) {
			keep = append(keep, p)
			continue
		}
		if !s.take(p.k.r.End) {
			s.dropped++
			s.segDropped++
			continue
		}
		if err := s.writeSlow(p, now); err != nil {
			s.fail(err)
			continue
		}
		wrote = true
	}
	clear(s.pending[len(keep):])
	s.pending = keep
	if wrote {
		s.fail(s.seg.Flush())
	}
	s.trim(now)
	return s.jobs
}

func (s *slowLog) fail(err error) {
	if err != nil {
		s.errors++
		s.lastErr, s.lastErrAt = err, time.Now()
	}
}

// take spends one of the second's budget.
func (s *slowLog) take(t time.Time) bool {
	if sec := t.Unix(); sec != s.budgetSecond {
		s.budgetSecond, s.budget = sec, s.cfg.MaxPerSecond
	}
	if s.budget == 0 {
		return false
	}
	s.budget--
	return true
}

// writeSlow writes a slow request, the requests before it on its
// connection that it may have waited for, the followers' fetches around
// it, and the events around them all. With explaining on, the same go
// into a job.
func (s *slowLog) writeSlow(p pendingSlow, now time.Time) error {
	if s.seg == nil {
		if err := s.openSegment(now); err != nil {
			return err
		}
	}
	var errs []error
	r, context := p.k.r, p.context
	for _, k := range context {
		if !k.written {
			k.written = true
			s.context++
			s.segContext++
			errs = append(errs, s.seg.Request(k.r))
		}
	}
	p.k.written = true
	errs = append(errs, s.seg.Request(r))
	s.written++
	if ct, ok := s.threads[r.Client]; ok && !s.threadsWritten[r.Client] {
		s.threadsWritten[r.Client] = true
		errs = append(errs, s.seg.ConnThread(&ct))
	}
	fetches := s.fetchesAround(r)
	for _, f := range fetches {
		if !f.written {
			f.written = true
			errs = append(errs, s.seg.Request(f.r))
		}
	}

	// The events from the earliest request r may have queued behind: its
	// own append is what r waited for.
	from, to := r.Arrival.Add(-joinMargin), r.End.Add(joinMargin)
	for _, k := range context {
		from = minTime(from, k.r.Arrival.Add(-joinMargin))
	}
	var job *slowJob
	if s.explaining {
		job = &slowJob{r: r}
		for _, k := range context {
			job.before = append(job.before, k.r)
		}
		for _, f := range fetches {
			job.fetches = append(job.fetches, f.r)
		}
		if ct, ok := s.threads[r.Client]; ok {
			job.conn = &ct
		}
		defer func() { s.jobs = append(s.jobs, *job) }()
	}
	errs = append(errs, s.writeEvents(from, to, job))
	return errors.Join(errs...)
}

// contextOf are the requests before r on its connection still in the
// broker when r arrived, or that ended just before: the ones r may have
// queued behind, oldest first.
func (s *slowLog) contextOf(r *event.Request) []*keptRequest {
	var out []*keptRequest
	for _, k := range s.conns[connKey{r.Client, r.Broker}] {
		if k.r == r || !k.r.Arrival.Before(r.Arrival) {
			continue
		}
		if end := k.r.End; end.IsZero() || !end.Before(r.Arrival.Add(-s.cfg.Threshold)) {
			out = append(out, k)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// writeEvents writes the traced events overlapping [from, to] not
// written yet, and adds them all to job (when not nil).
func (s *slowLog) writeEvents(from, to time.Time, job *slowJob) error {
	var errs []error
	h := s.seg.Handlers()
	for i := s.firstEndingAfter(from); i < len(s.io); i++ {
		it := &s.io[i]
		if it.end.Before(from) || it.start.After(to) {
			continue
		}
		if job != nil {
			job.events = append(job.events, it.ev)
		}
		if it.written {
			continue
		}
		it.written = true
		if err := h.Handle(it.ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// arrivalDisorder bounds how far out of end-time order events arrive:
// the tracer sends each event when its call ends, and its readers (one
// per ring buffer) run within milliseconds of each other.
const arrivalDisorder = 5 * time.Second

// firstEndingAfter is the index from which the buffered events may end at
// or after t: events arrive in about the order they end, so the search
// walks back from the newest instead of reading the whole window for
// every slow request.
func (s *slowLog) firstEndingAfter(t time.Time) int {
	limit := t.Add(-arrivalDisorder)
	i := len(s.io)
	for i > s.ioHead && !s.io[i-1].end.Before(limit) {
		i--
	}
	return i
}

// fetchLead is how long before a slow request its followers' fetches are
// kept with it: the fetch before its append says how long a follower
// had been silent.
const fetchLead = 2 * time.Second

// fetchesAround are the replica fetches that arrived from fetchLead
// before r to its end.
func (s *slowLog) fetchesAround(r *event.Request) []*keptRequest {
	from, to := r.Arrival.Add(-fetchLead), r.End.Add(joinMargin)
	i, _ := slices.BinarySearchFunc(s.replicaFetches, from, func(f *keptRequest, t time.Time) int { return f.r.Arrival.Compare(t) })
	var out []*keptRequest
	for _, f := range s.replicaFetches[i:] {
		if f.r.Arrival.After(to) {
			break
		}
		out = append(out, f)
	}
	return out
}

// trim forgets events and connections too old to be joined.
func (s *slowLog) trim(now time.Time) {
	old := now.Add(-s.cfg.Window)
	k := 0
	for k < len(s.replicaFetches) && s.replicaFetches[k].r.Arrival.Before(old) {
		k++
	}
	s.replicaFetches = slices.Delete(s.replicaFetches, 0, k)
	for s.ioHead < len(s.io) && s.io[s.ioHead].end.Before(old) {
		s.io[s.ioHead] = ioItem{}
		s.ioHead++
	}
	s.compact()
	for key, h := range s.conns {
		if last := h[len(h)-1].r; !last.End.IsZero() && last.End.Before(old) || last.End.IsZero() && last.Arrival.Before(old) {
			delete(s.conns, key)
		}
	}
}

// compact moves the live events to the front when the dead front is
// half the slice, so the slice stays within twice MaxEvents.
func (s *slowLog) compact() {
	if s.ioHead > 0 && s.ioHead >= len(s.io)/2 {
		n := copy(s.io, s.io[s.ioHead:])
		clear(s.io[n:])
		s.io, s.ioHead = s.io[:n], 0
	}
}

func (s *slowLog) openSegment(now time.Time) error {
	dir := filepath.Join(s.cfg.Dir, SegmentPrefix+now.UTC().Format(segmentTimeFormat))
	w, err := recording.Create(dir)
	if err != nil {
		return fmt.Errorf("slow-request log: %w", err)
	}
	s.seg, s.segStart = w, now
	s.segMeta = s.meta()
	s.segMeta.Version = recording.FormatVersion
	s.segMeta.Start = now.UTC()
	s.segMeta.SlowLog = &recording.SlowLog{ThresholdMs: float64(s.cfg.Threshold) / float64(time.Millisecond), APIs: s.cfg.APIs}
	s.segContext, s.segDropped = 0, 0
	clear(s.threadsWritten)
	// meta.json from the start: explain reads a segment still being written.
	if err := recording.WriteMeta(dir, &s.segMeta); err != nil {
		return fmt.Errorf("slow-request log: %w", err)
	}
	return s.prune()
}

// closeSegment ends the current segment; the next slow request opens one.
func (s *slowLog) closeSegment(now time.Time) error {
	if s.seg == nil {
		return nil
	}
	m := s.segMeta
	m.End = now.UTC()
	// The counters over the segment's time: the agent's totals now less
	// those when it opened.
	cur := s.meta()
	m.Capture, m.Trace = subCapture(cur.Capture, s.segMeta.Capture), subTrace(cur.Trace, s.segMeta.Trace)
	m.Broker = cur.Broker
	m.Sched = cur.Sched // totals since the agent started
	if m.Broker.PID != s.segMeta.Broker.PID && s.segMeta.Broker.PID != 0 {
		m.Broker.PIDs = []int{s.segMeta.Broker.PID, m.Broker.PID}
	}
	sl := *m.SlowLog
	sl.ContextRequests, sl.Dropped = s.segContext, s.segDropped
	m.SlowLog = &sl
	err := s.seg.Close(&m)
	s.seg = nil
	return err
}

func subCapture(a, b recording.CaptureCounters) recording.CaptureCounters {
	return recording.CaptureCounters{Packets: a.Packets - b.Packets, KernelDrops: a.KernelDrops - b.KernelDrops,
		Requests: a.Requests - b.Requests, Answered: a.Answered - b.Answered, Unanswered: a.Unanswered - b.Unanswered,
		SkippedBytes: a.SkippedBytes - b.SkippedBytes, Gaps: a.Gaps - b.Gaps, DecodeErrors: a.DecodeErrors - b.DecodeErrors}
}

func subTrace(a, b recording.TraceCounters) recording.TraceCounters {
	return recording.TraceCounters{Writes: a.Writes - b.Writes, JournalEvents: a.JournalEvents - b.JournalEvents,
		KernelWaits: a.KernelWaits - b.KernelWaits, WaitRingbufDrops: a.WaitRingbufDrops - b.WaitRingbufDrops,
		OtherFiles: a.OtherFiles - b.OtherFiles, Unnamed: a.Unnamed - b.Unnamed, RingbufDrops: a.RingbufDrops - b.RingbufDrops,
		JournalRingbufDrops: a.JournalRingbufDrops - b.JournalRingbufDrops, HistFull: a.HistFull - b.HistFull,
		StartFull: a.StartFull - b.StartFull, Mode: a.Mode}
}

// prune deletes the oldest segments beyond Keep.
func (s *slowLog) prune() error {
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("slow-request log: %w", err)
	}
	var segs []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), SegmentPrefix) {
			segs = append(segs, e.Name())
		}
	}
	slices.Sort(segs)
	var errs []error
	for len(segs) > s.cfg.Keep {
		errs = append(errs, os.RemoveAll(filepath.Join(s.cfg.Dir, segs[0])))
		segs = segs[1:]
	}
	return errors.Join(errs...)
}

// close writes what is pending (without waiting for it to settle) and
// closes the segment; it returns the jobs of the requests written, as
// flush does.
func (s *slowLog) close(now time.Time) ([]slowJob, error) {
	s.mu.Lock()
	s.cfg.Settle = time.Nanosecond
	s.mu.Unlock()
	jobs := s.flush(now.Add(time.Millisecond))
	s.mu.Lock()
	defer s.mu.Unlock()
	return jobs, s.closeSegment(now)
}

// stats are the log's counters.
type slowLogStats struct {
	Written, Context, Dropped, IOOverflow, Errors int64
	LastError                                     string
	LastErrorAt                                   time.Time
	Segment                                       string
}

func (s *slowLog) stats() slowLogStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := slowLogStats{Written: s.written, Context: s.context, Dropped: s.dropped, IOOverflow: s.ioOverflow, Errors: s.errors}
	if s.lastErr != nil {
		st.LastError, st.LastErrorAt = s.lastErr.Error(), s.lastErrAt
	}
	if s.seg != nil {
		st.Segment = s.seg.Dir()
	}
	return st
}
