// Package explain names the cause of every slow produce request: it joins
// the requests decoded from the wire with the broker's traced writes,
// journal commits and (from JFR) lock waits, by topic-partition and time,
// and exactly by message id when the segment files can be read.
//
// Each cause is one file that registers it from an init function, as
// node_exporter's collectors do (registry.go): its name, its place among
// the causes, what it measures of a request and which causes' measures it
// reads (they are measured first), whether a request queued behind
// another inherits it, and the sentence its findings carry; its constant
// says what evidence it rests on (Causes lists them; docs/explain.md
// tells them all). The registry is global and filled before main runs;
// an Explainer takes the causes registered when it is made. Adding a
// cause is adding its file (and its test): the findings' shares, the
// summary, the detail of unexplained findings and kscope explain --help
// list it without another edit.
//
// Two verdicts are explain's own rather than a cause's:
//
//   - journal: not a cause but the root under slow-write and lock-wait,
//     when the write the cause rests on overlapped a jbd2 commit, an
//     ext4 fast commit (its own thread's, or another's that held the
//     journal's updates or that it waited for) or an XFS log write on
//     the same device for most of its time (rootCause).
//   - unexplained: no cause accounts for at least Config.Share of the
//     latency, alone or (placed in time, each moment counted once)
//     together. explain never guesses (classify in cause.go).
//
// Run is the one entry point, for kscope explain, kscope report and the
// agent alike: it reads the inputs (recordings, requests with I/O traces,
// or a request held in memory), decides each one's slow threshold
// (DecideThreshold, the one place that turns --slow, --percentile and an
// agent slow log's threshold into it), explains the slow requests and
// hands the findings and summaries to an Output. New, Explainer.Run and
// ExplainOne are the steps it takes, there for tests and benchmarks.
package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/grouphold"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

// CauseUnexplained is the verdict when no cause accounts for at least
// Config.Share of a request's latency, alone or together with others.
const CauseUnexplained = "unexplained"

// RootJournal is the root under slow-write and lock-wait when the write
// overlapped a journal commit.
const RootJournal = "journal"

// How a request's own write was found.
const (
	MatchMessageID = "message-id" // the write's records carry the request's message ids
	MatchBytes     = "bytes"      // same partition, same byte count, within the request
	MatchTime      = "time"       // the only write to the partition while the broker handled it
)

// MatchLockOwner marks a blocking write made by the thread that JFR saw
// holding the monitor the request's handler waited for.
const MatchLockOwner = "lock-owner"

// lockOwner is the thread that held a monitor while a handler waited.
type lockOwner struct {
	tid int32
	iv  interval
}

// Config tunes the classifier.
type Config struct {
	// Slow is the latency at or above which a produce request is
	// explained; 0 means the Percentile of the produce latencies.
	Slow time.Duration
	// Percentile is used when Slow is 0 (default 99).
	Percentile float64
	// PercentileGiven says the user gave Percentile: it then holds even
	// for an agent's slow log, which has a threshold of its own
	// (DecideThreshold).
	PercentileGiven bool
	// Share is the part of a request's latency a cause must account for
	// (default 0.5: "most of").
	Share float64
	// StallMin: writes at least this long are grouped per device into
	// stalls (default 50 ms).
	StallMin time.Duration
	// SlowWrite: appends at least this long are listed in the summary
	// with the journal commits that overlapped them (default 10 ms).
	SlowWrite time.Duration
	// MaxMessageIDs bounds the message ids kept per partition in a
	// finding (default 10; the rest are counted).
	MaxMessageIDs int
}

func (c *Config) defaults() {
	if c.Percentile <= 0 || c.Percentile > 100 {
		c.Percentile = 99
	}
	if c.Share <= 0 || c.Share > 1 {
		c.Share = 0.5
	}
	if c.StallMin <= 0 {
		c.StallMin = 50 * time.Millisecond
	}
	if c.SlowWrite <= 0 {
		c.SlowWrite = 10 * time.Millisecond
	}
	if c.MaxMessageIDs <= 0 {
		c.MaxMessageIDs = 10
	}
}

// IDLookup returns the message ids of the records a write covered: the
// segment file (as the write names it), its offset and byte count.
type IDLookup func(file string, offset, bytes int64) ([]string, error)

// Finding is one explained slow request: the request, its cause and the
// evidence. Its JSON is explain's --format json line.
type Finding struct {
	Arrival       time.Time `json:"arrival"`
	End           time.Time `json:"end"`
	LatencyMs     float64   `json:"latency_ms"`
	QueuedMs      float64   `json:"queued_ms"`
	BrokerMs      float64   `json:"broker_ms"`
	ResponseMs    float64   `json:"response_ms"`
	Client        string    `json:"client"`
	Broker        string    `json:"broker"`
	ClientID      string    `json:"client_id"`
	CorrelationID int32     `json:"correlation_id"`
	APIVersion    int16     `json:"api_version"`
	Acks          *int16    `json:"acks,omitempty"`
	ThrottleMs    int32     `json:"throttle_ms"`
	RequestBytes  int       `json:"request_bytes"`
	// The TCP trouble the capture saw on its connection during it.
	Retransmits         int     `json:"retransmits,omitempty"`
	ResponseRetransmits int     `json:"response_retransmits,omitempty"`
	ZeroWindows         int     `json:"zero_windows,omitempty"`
	BrokerZeroWindows   int     `json:"broker_zero_windows,omitempty"`
	ResponseAckWaitMs   float64 `json:"response_ack_wait_ms,omitempty"`

	// API is the request's API when it is not a produce request
	// (kscope explain --api fetch: "Fetch").
	API string `json:"api,omitempty"`
	// Group is a fetch's consumer group, as its client's group requests
	// named it (empty: none seen); a group request's own group.
	Group string `json:"group,omitempty"`
	// FetchSplit is a fetch's time, split: its purgatory (waiting for
	// data that was not there, normal), the rest of its wait, reading and
	// sending; the causes account for its abnormal part.
	FetchSplit *fetchsplit.Split `json:"fetch_split,omitempty"`
	// GroupSplit is a group request's time at the coordinator, split:
	// the protocol's hold (waiting for the members, the leader) and the
	// coordinator's own part, which is what was explained (--api group).
	GroupSplit *grouphold.Split `json:"group_split,omitempty"`
	// DiskReads are the waits of the network thread serving a fetch's
	// connection on reads of file pages from disk while its response
	// left (disk-read).
	DiskReads []event.KernelWait `json:"disk_reads,omitempty"`
	// PagesFromDisk are the pages that thread added to the page cache
	// meanwhile (the tracepoint filemap:mm_filemap_add_to_page_cache),
	// PageCacheAdds its runs of them (the largest first).
	PagesFromDisk int64                 `json:"pages_from_disk,omitempty"`
	PageCacheAdds []event.PageCacheAdds `json:"page_cache_adds,omitempty"`

	Cause string `json:"cause"`
	// Root is RootJournal when the write the cause rests on overlapped
	// a journal commit; empty otherwise.
	Root string `json:"root,omitempty"`
	// Via says how a lock-wait request waited.
	Via string `json:"via,omitempty"`
	// Follower and FollowerCause name, for a replication finding read
	// with the followers' recordings, the follower whose fetch ended the
	// wait and what its part went to (its FollowerWait is on that fetch).
	Follower      *int32 `json:"follower,omitempty"`
	FollowerCause string `json:"follower_cause,omitempty"`
	// ExplainedMs is how much of the latency the cause accounts for
	// (with Also, the causes together).
	ExplainedMs float64 `json:"explained_ms"`
	// Also are the other causes that, together with Cause, account for
	// the latency when none does alone (each a tenth of it or more).
	Also []string `json:"also,omitempty"`
	// Shares are the milliseconds each candidate cause accounts for.
	Shares CauseShares `json:"shares"`
	Detail string      `json:"detail"`
	// Stall is the index (in Summary.Stalls) of the stall the cause's
	// write belongs to.
	Stall *int `json:"stall,omitempty"`

	Partitions []PartitionEvidence `json:"partitions"`
	// QueuedBehind is the previous request on the same connection, when
	// this one waited for it (queued_ms) while it was slow: its cause's
	// writes are this request's too.
	QueuedBehind *QueuedBehind         `json:"queued_behind,omitempty"`
	Commits      []event.JournalCommit `json:"commits,omitempty"`
	// KernelWaits are uninterruptible sleeps in the file system of the
	// handler thread (outside its write calls) or of a lock's owner.
	KernelWaits []event.KernelWait `json:"kernel_waits,omitempty"`
	LockWaits   []event.LockWait   `json:"lock_waits,omitempty"`
	// Steals is the hypervisor steal taken from the broker's threads
	// while the request was in the broker (the largest first, at most
	// maxStealEvidence).
	Steals []event.CPUSteal `json:"steals,omitempty"`
	// NetworkThread is the broker thread serving the request's
	// connection, when traced.
	NetworkThread *event.ConnThread `json:"network_thread,omitempty"`
	// RunDelays are the carrying threads' waits for a CPU during the
	// request (the longest first, at most maxRunDelayEvidence), Throttles
	// the CPU-quota throttling of the broker's cgroup meanwhile.
	RunDelays []event.RunDelay    `json:"run_delays,omitempty"`
	Throttles []event.CPUThrottle `json:"throttles,omitempty"`
	// QuotaStoppedMs is how long of the request the broker's cgroup had
	// used up its CPU quota (its threads' waits marked throttled): no
	// thread of the broker ran then.
	QuotaStoppedMs float64 `json:"quota_stopped_ms,omitempty"`
	// Pauses are the JVM's stop-the-world pauses during the request (the
	// longest first, at most maxPauseEvidence).
	Pauses []event.JVMPause `json:"jvm_pauses,omitempty"`
	// NetworkThreadWaits are the uninterruptible sleeps of the network
	// thread serving its connection while the broker had it (the longest
	// first), BlockingFetches the Fetch requests that thread served then.
	NetworkThreadWaits []event.KernelWait `json:"network_thread_waits,omitempty"`
	BlockingFetches    []FetchEvidence    `json:"blocking_fetches,omitempty"`
	// ParkWaits are the handler's sleeps until another broker thread let
	// it go, and the sleeps of that thread meanwhile (Depth > 0).
	ParkWaits []ParkWait `json:"park_waits,omitempty"`
	// QueueHandlers are what each request handler was doing while the
	// request waited for one (request-queue).
	QueueHandlers []HandlerBusy `json:"queue_handlers,omitempty"`
	// InFlight is how many other produce requests, across all
	// connections, were in flight (arrived, not yet answered) when the
	// broker could read this one: the queue the wire implies, with
	// QueueHandlers.
	InFlight int `json:"in_flight,omitempty"`
	// ReplicationFrom says how the wait for followers of an acks=all
	// request was measured (ReplicationByFetch, ReplicationByGap, with
	// ReplicationUnmatched saying what was missing); Replication are the
	// follower fetches that passed its last offset, the latest first.
	ReplicationFrom      string         `json:"replication_from,omitempty"`
	ReplicationUnmatched string         `json:"replication_unmatched,omitempty"`
	Replication          []ReplicaFetch `json:"replication,omitempty"`
}

// PartitionEvidence is one partition of a slow request and the writes to
// it that matter.
type PartitionEvidence struct {
	Topic      string   `json:"topic"`
	Partition  int32    `json:"partition"`
	Records    int      `json:"records"`
	Bytes      int      `json:"bytes"`
	MessageIDs []string `json:"message_ids,omitempty"`
	// MoreMessageIDs counts the request's ids not listed.
	MoreMessageIDs int `json:"more_message_ids,omitempty"`
	// Write is the request's own append, when found.
	Write *WriteEvidence `json:"write,omitempty"`
	// Blocking are the other appends to the partition in progress while
	// the request waited.
	Blocking []WriteEvidence `json:"blocking_writes,omitempty"`
}

// QueuedBehind names the request a request waited for on its connection
// (the broker reads one request per connection at a time) and the writes
// that request waited on.
type QueuedBehind struct {
	CorrelationID int32           `json:"correlation_id"`
	Cause         string          `json:"cause"`
	Writes        []WriteEvidence `json:"writes"`
	// ReplicationMs is the part of the request's wait for followers it
	// spent queued behind the request ahead (and those ahead of it),
	// Replication the follower fetches that time rests on.
	ReplicationMs float64        `json:"replication_ms,omitempty"`
	Replication   []ReplicaFetch `json:"replication,omitempty"`
}

// WriteEvidence is a traced write with how it was tied to the request.
type WriteEvidence struct {
	event.Write
	MatchedBy  string   `json:"matched_by,omitempty"`
	MessageIDs []string `json:"message_ids,omitempty"`

	idx int32
}

// Explainer classifies slow requests against an Index and accumulates the
// summary. Use New, then Explain for each slow request, then Summary.
type Explainer struct {
	cfg Config
	// causes are the registered causes when New ran: one set for every
	// request it explains.
	causes  *causeSet
	idx     *Index
	lookup  IDLookup
	idCache map[int32][]string
	sum     Summary
	stallOf map[int32]int // write → stall
	// followers: the capture shows followers fetching (replica fetcher
	// connections); without them acks=all cannot wait on replication.
	followers bool
	// last is each connection's latest finding, for requests queued
	// behind it.
	last map[string]connLast
	// fetches are the recording's Fetch requests, readRequest reads one
	// (Run sets both): evidence for network-thread-blocked.
	fetches []fetchRef
	// groups maps consumer clients to their groups (Scan.groups).
	groups      map[string]string
	readRequest func(pos int64) (*event.Request, error)
	// inFlight counts the produce requests in flight (Run sets it).
	inFlight *inFlight
	// replicas indexes the follower fetches among fetches (replication.go).
	replicas *replicaIndex
	// peers are the other brokers' recordings, by node id (SetPeers).
	peers map[int32]*Peer
}

// connLast is what a later request on the same connection needs of a
// finding: which request it was, when it ended, its cause, and what every
// cause measured of it (a request queued behind it inherits the time
// its inherited causes measured, and their evidence).
type connLast struct {
	corr  int32
	end   int64
	cause string
	// ivs are the time its cause rests on, roots the writes.
	ivs   []interval
	roots []int32
	// measured is by position in Explainer.causes.
	measured []measured
}

// New returns an explainer over idx (which it builds). lookup may be nil:
// matching is then by bytes and time only.
func New(cfg Config, idx *Index, lookup IDLookup) *Explainer {
	cfg.defaults()
	idx.Build()
	e := &Explainer{cfg: cfg, causes: registered(), idx: idx, lookup: lookup, idCache: make(map[int32][]string), stallOf: make(map[int32]int),
		last: make(map[string]connLast)}
	e.findStalls()
	e.slowWrites()
	e.sum.init(e.causes)
	e.sum.Writes = int64(len(idx.writes))
	e.sum.PageCacheRuns = idx.PageCacheRuns
	for _, cs := range idx.commits {
		e.sum.Commits += int64(len(cs))
	}
	for _, ls := range idx.locks {
		e.sum.LockWaits += int64(len(ls))
	}
	e.sum.BrokerSteals, e.sum.OtherSteals = int64(len(idx.steals)), idx.OtherSteal
	e.sum.RunDelays, e.sum.JVMPauses, e.sum.Throttles = idx.sched.runDelays, int64(len(idx.sched.pauses)), int64(len(idx.sched.throttles))
	for _, cs := range idx.sched.conns {
		e.sum.ConnThreads += int64(len(cs))
	}
	return e
}

// Config is the configuration in effect, defaults filled in.
func (e *Explainer) Config() Config { return e.cfg }

// ids returns the message ids of write i's records, looked up once.
func (e *Explainer) ids(i int32) []string {
	if e.lookup == nil {
		return nil
	}
	if ids, ok := e.idCache[i]; ok {
		return ids
	}
	w := &e.idx.writes[i]
	ids, err := e.lookup(e.idx.strs[w.file], w.offset, w.bytes)
	e.sum.IDLookups++
	if err != nil {
		e.sum.IDLookupErrors++
		if e.sum.FirstLookupError == "" {
			e.sum.FirstLookupError = err.Error()
		}
	}
	e.idCache[i] = ids
	return ids
}

// interval is a half-open time range in unix nanoseconds.
type interval struct{ a, b int64 }

func clip(iv interval, to interval) interval {
	iv.a, iv.b = max(iv.a, to.a), min(iv.b, to.b)
	if iv.b < iv.a {
		iv.b = iv.a
	}
	return iv
}

// unionLen is the length of the union of ivs.
func unionLen(ivs []interval) int64 {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(x, y interval) int { return cmp.Compare(x.a, y.a) })
	var total, curA, curB int64
	started := false
	for _, iv := range ivs {
		if iv.b <= iv.a {
			continue
		}
		if !started || iv.a > curB {
			if started {
				total += curB - curA
			}
			curA, curB, started = iv.a, iv.b, true
			continue
		}
		curB = max(curB, iv.b)
	}
	if started {
		total += curB - curA
	}
	return total
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Explain classifies one answered produce request.
func (e *Explainer) Explain(r *event.Request) *Finding { return e.explain(r, true) }

// explain classifies r; count adds it to the summary (a request explained
// only because a slow one queued behind it is not counted).
func (e *Explainer) explain(r *event.Request, count bool) *Finding {
	c := e.newRequest(r)
	got := e.measure(c)
	f := c.f
	f.Shares = e.shares(got)
	e.name(c, got)
	rootWrites := e.storageRoots(f, c.sw, unionLen(c.sw.blockConn) > unionLen(c.sw.blockPart))
	e.rootCause(f, rootWrites)
	f.Detail = e.detail(f, c.L)
	last := connLast{corr: r.CorrelationID, end: c.E, cause: f.Cause, roots: rootWrites, measured: got}
	if i := e.causes.position(f.Cause); i >= 0 {
		last.ivs = got[i].ivs
	}
	e.last[r.Client] = last
	if count {
		e.sum.add(f, e, rootWrites)
	}
	return f
}

// newFinding is the finding of r before anything is explained: the
// request as the wire showed it.
func newFinding(r *event.Request) *Finding {
	return &Finding{
		Arrival: r.Arrival, End: r.End, LatencyMs: r.LatencyMs, QueuedMs: r.QueuedMs, BrokerMs: r.BrokerMs, ResponseMs: r.ResponseMs,
		Client: r.Client, Broker: r.Broker, ClientID: r.ClientID, CorrelationID: r.CorrelationID, APIVersion: r.APIVersion,
		Acks: r.Acks, ThrottleMs: r.ThrottleMs, RequestBytes: r.RequestBytes,
		Retransmits: r.Retransmits, ResponseRetransmits: r.ResponseRetransmits, ZeroWindows: r.ZeroWindows, BrokerZeroWindows: r.BrokerZeroWindows, ResponseAckWaitMs: r.ResponseAckWaitMs,
	}
}

// measure measures every cause of the request, each after the causes it
// reads; the measures are by position in e.causes.
func (e *Explainer) measure(c *reqCtx) []measured {
	got := make([]measured, len(e.causes.byOrder))
	m := &measuring{reqCtx: c, e: e, got: got}
	for _, i := range e.causes.measureOrder {
		m.self = e.causes.byOrder[i]
		got[i] = m.self.measure(m)
		got[i].cause, got[i].stw = m.self.name, m.self.stopsTheWorld
	}
	return got
}

// shares are the milliseconds each cause measured.
func (e *Explainer) shares(got []measured) CauseShares {
	s := make(CauseShares, len(got))
	for i, c := range e.causes.byOrder {
		s[c.name] = ms(got[i].ns)
	}
	return s
}

// name names the request's cause from what the causes measured (classify),
// and lets the cause complete its finding: the request it queued behind
// when it inherited the cause, and the evidence the cause gathers only
// for the requests it names.
func (e *Explainer) name(c *reqCtx, got []measured) {
	f := c.f
	need := int64(e.cfg.Share * float64(c.L))
	storage := unionLen(slices.Concat(c.sw.own, c.sw.waited()))
	var best int64
	f.Cause, best, f.Also = classify(c.L, need, storage, got)
	f.ExplainedMs = ms(best)
	if f.Cause == CauseUnexplained {
		f.ExplainedMs = 0
	}
	i := e.causes.position(f.Cause)
	if i < 0 {
		return
	}
	named := e.causes.byOrder[i]
	if named.inherited && c.prev != nil && len(c.queued[f.Cause]) > 0 {
		f.QueuedBehind = &QueuedBehind{CorrelationID: c.prev.corr, Cause: c.prev.cause}
	}
	if named.named != nil {
		named.named(&measuring{reqCtx: c, e: e, self: named, got: got}, got[i])
	}
}

// newRequest puts r in context for the causes: its finding, its times,
// the writes to its partitions, the threads that carried it, and the
// request ahead of it on its connection when it waited for that one.
func (e *Explainer) newRequest(r *event.Request) *reqCtx {
	A, E := r.Arrival.UnixNano(), r.End.UnixNano()
	brokerStart := E - int64(r.BrokerMs*1e6)
	if brokerStart < A || brokerStart > E {
		brokerStart = A
	}
	f := newFinding(r)
	// A fetch appends nothing: the writes to its partitions are
	// others'.
	sw := storageWaits{ownEnd: -1}
	if r.APIKey == fetchKey {
		f.Partitions = fetchPartitions(r)
	} else {
		sw = e.partitionWrites(r, f, A, brokerStart, E)
	}
	c := &reqCtx{r: r, f: f, A: A, E: E, L: E - A, brokerStart: brokerStart, netFrom: brokerStart, sw: &sw, ownEnd: sw.ownEnd,
		replicating: e.followers && r.Acks != nil && *r.Acks == -1,
		lockWaited:  sw.blockPart, ownerParked: sw.ownerParked, ownerParks: sw.ownerParks}
	if prev, ok := e.last[r.Client]; ok && brokerStart > A && prev.end <= E && abs64(prev.end-brokerStart) <= queueTolerance {
		e.queueBehind(c, &prev)
	}
	e.carriers(c)
	return c
}

// queueTolerance is how close the previous response's end must be to when
// the broker could read a request for the request to count as queued
// behind it on its connection.
const queueTolerance = int64(time.Millisecond)

// queueBehind records that c waited on its connection for prev, the
// request ahead: the time prev's inherited causes held it up while c
// waited is c's too, and so, for a storage cause, are the writes prev
// waited on, whatever their partition.
func (e *Explainer) queueBehind(c *reqCtx, prev *connLast) {
	c.prev = prev
	c.queued = make(map[string][]interval)
	for i, cause := range e.causes.byOrder {
		if cause.inherited {
			c.queued[cause.name] = clipAll(prev.measured[i].ivs, interval{c.A, c.brokerStart})
		}
	}
	if prev.cause == CauseSlowWrite || prev.cause == CauseLockWait {
		e.queuedBehindWrites(c.sw, c.f, prev, c.A, c.brokerStart)
	}
}

// carriers sets the threads that carried the request: the handlers of its
// own appends, and the network thread serving its connection (also in
// the finding).
func (e *Explainer) carriers(c *reqCtx) {
	x := e.idx
	if c.r.BrokerZeroWindows > 0 && c.r.QueuedMs <= 0 {
		// The broker's window closed while the request arrived: its
		// network thread was not reading, so the arrival is its time.
		c.netFrom = c.A
	}
	for _, i := range c.sw.ownSlow {
		w := &x.writes[i]
		c.own = append(c.own, interval{w.start, w.end})
		c.ownTID = append(c.ownTID, w.tid)
		if !slices.Contains(c.handlers, w.tid) {
			c.handlers = append(c.handlers, w.tid)
		}
	}
	if ct, ok := x.connThread(c.r.Client, c.A); ok {
		c.netTID = ct.TID
		c.f.NetworkThread = &ct
	}
}

// findOwn picks the request's own append to partition p among the writes
// overlapping the request: by message id, else by byte count, else the
// only write that started while the broker handled the request.
func (e *Explainer) findOwn(p *event.Partition, cands []int32, A, brokerStart, E int64) (int32, string) {
	x := e.idx
	if len(p.MessageIDs) > 0 && e.lookup != nil {
		want := make(map[string]struct{}, len(p.MessageIDs))
		for _, id := range p.MessageIDs {
			want[id] = struct{}{}
		}
		for _, i := range cands {
			if x.writes[i].start < A {
				continue
			}
			for _, id := range e.ids(i) {
				if _, ok := want[id]; ok {
					return i, MatchMessageID
				}
			}
		}
	}
	if p.Bytes > 0 {
		for _, i := range cands {
			w := &x.writes[i]
			// Not before the broker took the request: until then it
			// was busy with the connection's previous one, whose
			// batches often have the same size.
			if w.start >= brokerStart && w.bytes == int64(p.Bytes) {
				return i, MatchBytes
			}
		}
	}
	found := int32(-1)
	for _, i := range cands {
		w := &x.writes[i]
		if w.start >= brokerStart && w.end <= E {
			if found >= 0 {
				return -1, ""
			}
			found = i
		}
	}
	if found >= 0 {
		return found, MatchTime
	}
	return -1, ""
}

func (e *Explainer) evidence(i int32) WriteEvidence {
	// The write's ids, when a lookup already read them.
	return WriteEvidence{Write: e.idx.toEvent(i), idx: i, MessageIDs: e.idCache[i]}
}

// rootCause looks for journal commits under the writes a storage cause
// rests on, and the stall they belong to.
func (e *Explainer) rootCause(f *Finding, writes []int32) {
	x := e.idx
	seen := make(map[time.Time]bool)
	for _, i := range writes {
		w := &x.writes[i]
		if s, ok := e.stallOf[i]; ok && f.Stall == nil {
			s := s
			f.Stall = &s
		}
		// Where the write's thread slept in the kernel meanwhile.
		for _, kw := range x.waitsOverlapping(int(w.tid), w.start, w.end) {
			addKernelWait(f, kw)
		}
		dur := w.dur()
		if dur <= 0 {
			continue
		}
		for _, c := range x.commitsOverlapping(x.strs[w.dev], w.start, w.end) {
			cs, ce := commitSpan(&c)
			ov := clip(interval{cs, ce}, interval{w.start, w.end})
			if float64(ov.b-ov.a) >= e.cfg.Share*float64(dur) {
				f.Root = RootJournal
				if !seen[c.Start] {
					seen[c.Start] = true
					f.Commits = append(f.Commits, c)
				}
			}
		}
	}
}
