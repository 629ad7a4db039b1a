// Package explain names the cause of every slow produce request: it joins
// the requests decoded from the wire with the broker's traced writes,
// journal commits and (from JFR) lock waits, by topic-partition and time,
// and exactly by message id when the segment files can be read.
//
// The causes, and the evidence each rests on (docs/explain.md):
//
//   - slow-write: the request's own append (a write to its partition's log
//     by the thread that handled it) accounts for most of its latency.
//   - lock-wait: no slow write of its own, but while it waited, another
//     append to the same partition log was in progress: it queued behind
//     it (on the partition's lock, or behind the previous request on its
//     connection, which the broker handles one at a time).
//   - journal: not a cause of its own but the root under the two above,
//     when the write it rests on overlapped a jbd2 commit or XFS log write
//     on the same device for most of its time.
//   - replication: acks=all, its append done early, and the response came
//     only much later: waiting for followers, whose fetches passing its
//     last offset are matched where the capture has them (replication.go).
//   - throttle: the response's throttle time accounts for it.
//   - response-send: the response's bytes took most of the time to leave.
//   - cpu-steal: the hypervisor took most of the time from the broker's
//     threads while the request was in the broker (a virtual machine's
//     vCPU descheduled by its host): nothing in the broker ran then, so
//     this comes before the causes above, whatever the stolen thread was
//     doing (a write stolen in the middle looks slow to the write trace).
//   - network: its own bytes were slow to arrive (network.go).
//   - network-thread-blocked: the network thread serving its connection
//     was stuck in the kernel, e.g. serving another connection's Fetch
//     from disk (netblocked.go).
//   - cpu-starved: the threads that carried the request waited in a run
//     queue for a CPU (cpustarved.go).
//   - gc-pause, safepoint: the broker's JVM stood still (jvmpause.go).
//   - unexplained: none of these accounts for at least Config.Share of the
//     latency, alone or (placed in time, each moment counted once)
//     together. explain never guesses (classify in cause.go).
package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// The causes.
const (
	CauseSlowWrite    = "slow-write"
	CauseLockWait     = "lock-wait"
	CauseReplication  = "replication"
	CauseThrottle     = "throttle"
	CauseResponseSend = "response-send"
	CauseUnexplained  = "unexplained"

	// RootJournal is the root under slow-write and lock-wait when the
	// write overlapped a journal commit.
	RootJournal = "journal"
)

// Causes lists the causes in the order ties are broken.
var Causes = []string{CauseSlowWrite, CauseLockWait, CauseReplication, CauseThrottle, CauseResponseSend, CauseNetwork,
	CauseNetworkThreadBlocked, CauseCPUStarved, CauseParkWait, CauseRequestQueue, CauseGCPause, CauseSafepoint, CauseCPUSteal, CauseUnexplained}

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

// How a lock-wait request waited.
const (
	ViaPartitionLock = "partition-lock" // in the broker, on the partition log
	ViaConnection    = "connection"     // behind the previous request on its connection
)

// Config tunes the classifier.
type Config struct {
	// Slow is the latency at or above which a produce request is
	// explained; 0 means the Percentile of the produce latencies.
	Slow time.Duration
	// Percentile is used when Slow is 0 (default 99).
	Percentile float64
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

// CauseShares are the milliseconds of a request each cause accounts for.
type CauseShares struct {
	SlowWriteMs    float64 `json:"slow_write_ms"`
	LockWaitMs     float64 `json:"lock_wait_ms"`
	ReplicationMs  float64 `json:"replication_ms"`
	ThrottleMs     float64 `json:"throttle_ms"`
	ResponseSendMs float64 `json:"response_send_ms"`
	CPUStealMs     float64 `json:"cpu_steal_ms"`
	NetworkMs      float64 `json:"network_ms"`
	NetThreadMs    float64 `json:"network_thread_blocked_ms"`
	CPUStarvedMs   float64 `json:"cpu_starved_ms"`
	GCPauseMs      float64 `json:"gc_pause_ms"`
	SafepointMs    float64 `json:"safepoint_ms"`
	ParkWaitMs     float64 `json:"park_wait_ms"`
	RequestQueueMs float64 `json:"request_queue_ms"`
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
	cfg     Config
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
	fetches     []fetchRef
	readRequest func(pos int64) (*event.Request, error)
	// inFlight counts the produce requests in flight (Run sets it).
	inFlight *inFlight
	// replicas indexes the follower fetches among fetches (replication.go).
	replicas *replicaIndex
	// peers are the other brokers' recordings, by node id (SetPeers).
	peers map[int32]*Peer
}

// connLast is what a later request on the same connection needs of a
// finding.
type connLast struct {
	corr  int32
	end   int64
	cause string
	ivs   []interval // the time its cause rests on
	roots []int32
	// byCause: the intervals each cause measured outside the storage
	// causes (a request queued behind this one inherits them).
	byCause map[string][]interval
	// runDelays, parks and handlers: its cpu-starved, park-wait and
	// request-queue evidence, inherited with the time; replication its
	// waits for followers with their fetches.
	runDelays   []event.RunDelay
	parks       []ParkWait
	handlers    []HandlerBusy
	replication []replPiece
}

// New returns an explainer over idx (which it builds). lookup may be nil:
// matching is then by bytes and time only.
func New(cfg Config, idx *Index, lookup IDLookup) *Explainer {
	cfg.defaults()
	idx.Build()
	e := &Explainer{cfg: cfg, idx: idx, lookup: lookup, idCache: make(map[int32][]string), stallOf: make(map[int32]int),
		last: make(map[string]connLast)}
	e.findStalls()
	e.slowWrites()
	e.sum.init()
	e.sum.Writes = int64(len(idx.writes))
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
	A, E := r.Arrival.UnixNano(), r.End.UnixNano()
	L := E - A
	brokerStart := E - int64(r.BrokerMs*1e6)
	if brokerStart < A || brokerStart > E {
		brokerStart = A
	}
	f := &Finding{
		Arrival: r.Arrival, End: r.End, LatencyMs: r.LatencyMs, QueuedMs: r.QueuedMs, BrokerMs: r.BrokerMs, ResponseMs: r.ResponseMs,
		Client: r.Client, Broker: r.Broker, ClientID: r.ClientID, CorrelationID: r.CorrelationID, APIVersion: r.APIVersion,
		Acks: r.Acks, ThrottleMs: r.ThrottleMs, RequestBytes: r.RequestBytes,
		Retransmits: r.Retransmits, ResponseRetransmits: r.ResponseRetransmits, ZeroWindows: r.ZeroWindows, BrokerZeroWindows: r.BrokerZeroWindows, ResponseAckWaitMs: r.ResponseAckWaitMs,
	}

	sw := e.partitionWrites(r, f, A, brokerStart, E)

	// Queued on the connection behind a slow request: the writes that
	// request waited on held this one up too, whatever their partition.
	prev, queued := e.last[r.Client]
	queued = queued && brokerStart > A && prev.end <= E && abs64(prev.end-brokerStart) <= queueTolerance
	if queued && (prev.cause == CauseSlowWrite || prev.cause == CauseLockWait) {
		e.queuedBehindWrites(&sw, f, prev, A, brokerStart)
	}

	waited := slices.Concat(sw.blockConn, sw.blockPart)
	slowWrite := unionLen(sw.own)
	connWait := unionLen(sw.blockConn)
	partWait := unionLen(sw.blockPart)
	lockWait := unionLen(waited)
	storage := unionLen(slices.Concat(sw.own, waited))
	replicating := e.followers && r.Acks != nil && *r.Acks == -1
	throttle := min(int64(r.ThrottleMs)*int64(time.Millisecond), L)
	response := min(int64(r.ResponseMs*1e6), L)
	steal := e.steal(f, A, E, L)

	c := e.newReqCtx(r, f, &sw, A, E, brokerStart, replicating)
	if queued {
		c.queued = make(map[string][]interval, len(prev.byCause))
		for cause, ivs := range prev.byCause {
			c.queued[cause] = clipAll(ivs, interval{A, brokerStart})
		}
		c.queuedDelays, c.queuedParks, c.queuedHandlers = prev.runDelays, prev.parks, prev.handlers
	}
	var ahead []replPiece
	if queued {
		ahead = prev.replication
	}
	repl := e.replication(r, c, f, replicating && sw.allOwn, sw.ownEnd, ahead)
	netBlocked := e.networkThreadBlocked(c, f)
	gc, safepoint := e.jvmPauses(c, f)
	// park-wait first: the waits for a CPU of the threads its sleeps
	// waited for are cpu-starved's (c.wakersStarved).
	parked := e.parkWait(c, f)
	starved := e.cpuStarved(c, f)
	queue := e.requestQueue(c, f, slices.Concat(sw.own, sw.blockPart, parked.ivs, starved.ivs))
	net := network(r, c, sw.ownEnd, replicating, slices.Concat(starved.ivs, netBlocked.ivs, parked.ivs))

	f.Shares = CauseShares{SlowWriteMs: ms(slowWrite), LockWaitMs: ms(lockWait), ReplicationMs: ms(repl.ns),
		ThrottleMs: ms(throttle), ResponseSendMs: ms(response), CPUStealMs: ms(steal),
		NetworkMs: ms(net.ns), NetThreadMs: ms(netBlocked.ns), CPUStarvedMs: ms(starved.ns), GCPauseMs: ms(gc.ns), SafepointMs: ms(safepoint.ns),
		ParkWaitMs: ms(parked.ns), RequestQueueMs: ms(queue.ns)}

	var respIvs []interval
	if response > 0 {
		respIvs = []interval{{E - response, E}}
	}
	need := int64(e.cfg.Share * float64(L))
	cause, best, also := classify(L, need, storage, []measured{
		{cause: CauseSlowWrite, ns: slowWrite, ivs: sw.own},
		{cause: CauseLockWait, ns: lockWait, ivs: waited},
		repl.measured,
		{cause: CauseThrottle, ns: throttle},
		{cause: CauseResponseSend, ns: response, ivs: respIvs},
		net, netBlocked, starved, parked, queue, gc, safepoint,
		{cause: CauseCPUSteal, ns: steal, stw: true},
	})
	f.Cause, f.ExplainedMs, f.Also = cause, ms(best), also
	if f.Cause == CauseUnexplained {
		f.ExplainedMs = 0
	}
	if (f.Cause == CauseCPUStarved || f.Cause == CauseNetwork || f.Cause == CauseNetworkThreadBlocked || f.Cause == CauseParkWait || f.Cause == CauseRequestQueue) && queued && len(c.queued[f.Cause]) > 0 {
		f.QueuedBehind = &QueuedBehind{CorrelationID: prev.corr, Cause: prev.cause}
	}
	if f.Cause == CauseReplication && repl.queuedNs > 0 {
		f.QueuedBehind = &QueuedBehind{CorrelationID: prev.corr, Cause: prev.cause, ReplicationMs: ms(repl.queuedNs), Replication: repl.queuedFetches}
	}
	if f.Cause == CauseNetworkThreadBlocked {
		e.blockingFetches(f)
	}
	setFollower(f)

	rootWrites := e.storageRoots(f, &sw, connWait > partWait)
	e.rootCause(f, rootWrites)
	f.Detail = e.detail(f, L)
	var causeIvs []interval
	switch f.Cause {
	case CauseSlowWrite:
		causeIvs = sw.own
	case CauseLockWait:
		causeIvs = waited
	}
	e.last[r.Client] = connLast{corr: r.CorrelationID, end: E, cause: f.Cause, roots: rootWrites, ivs: causeIvs,
		byCause: map[string][]interval{CauseCPUStarved: starved.ivs, CauseNetwork: net.ivs, CauseNetworkThreadBlocked: netBlocked.ivs,
			CauseParkWait: parked.ivs, CauseRequestQueue: queue.ivs},
		runDelays: f.RunDelays, parks: f.ParkWaits, handlers: f.QueueHandlers, replication: repl.pieces}
	if count {
		e.sum.add(f, e, rootWrites)
	}
	return f
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
