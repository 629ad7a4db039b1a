package explain

import (
	"cmp"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Stall is a period when a device's writes hung: overlapping writes of at
// least Config.StallMin on one device, merged. Start is the first such
// write's start, End the last one's end: for a frozen or stuck file
// system, when writes stopped completing and when they resumed.
type Stall struct {
	Dev        string    `json:"dev"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	DurationMs float64   `json:"duration_ms"`
	Writes     int       `json:"writes"`
	Partitions []string  `json:"partitions"`
	// Requests counts the slow requests whose cause rests on a write of
	// this stall.
	Requests int `json:"requests"`
}

func (e *Explainer) findStalls() {
	x := e.idx
	minDur := int64(e.cfg.StallMin)
	var long []int32
	for i := range x.writes {
		if x.writes[i].dur() >= minDur {
			long = append(long, int32(i))
		}
	}
	// In start order, so stalls come out in start order too.
	slices.SortFunc(long, func(a, b int32) int { return cmp.Compare(x.writes[a].start, x.writes[b].start) })
	open := make(map[int32]int) // device → its latest stall
	ends := []int64{}
	parts := []map[string]bool{}
	for _, i := range long {
		w := &x.writes[i]
		j, ok := open[w.dev]
		if !ok || w.start > ends[j] {
			j = len(e.sum.Stalls)
			e.sum.Stalls = append(e.sum.Stalls, Stall{Dev: x.strs[w.dev], Start: time.Unix(0, w.start).UTC()})
			ends = append(ends, w.end)
			parts = append(parts, make(map[string]bool))
			open[w.dev] = j
		}
		ends[j] = max(ends[j], w.end)
		e.sum.Stalls[j].Writes++
		parts[j][x.parts[w.part].key.String()] = true
		e.stallOf[i] = j
	}
	for j := range e.sum.Stalls {
		s := &e.sum.Stalls[j]
		s.End = time.Unix(0, ends[j]).UTC()
		s.DurationMs = ms(ends[j] - s.Start.UnixNano())
		for p := range parts[j] {
			s.Partitions = append(s.Partitions, p)
		}
		slices.Sort(s.Partitions)
	}
}

// SlowWrite is a slow append and the journal commits that overlapped it
// (from when each was requested to its end).
type SlowWrite struct {
	event.Write
	Commits []event.JournalCommit `json:"commits"`
}

// slowWrites lists the appends of at least Config.SlowWrite with their
// commits, keeping the slowest few hundred.
func (e *Explainer) slowWrites() {
	const keep = 500
	x := e.idx
	minDur := int64(e.cfg.SlowWrite)
	var slow []int32
	for i := range x.writes {
		if x.writes[i].dur() >= minDur {
			slow = append(slow, int32(i))
		}
	}
	slices.SortFunc(slow, func(a, b int32) int {
		return cmp.Or(cmp.Compare(x.writes[b].dur(), x.writes[a].dur()), cmp.Compare(x.writes[a].start, x.writes[b].start))
	})
	for n, i := range slow {
		w := &x.writes[i]
		commits := x.commitsOverlapping(x.strs[w.dev], w.start, w.end)
		e.sum.SlowWritesTotal++
		if len(commits) > 0 {
			e.sum.SlowWritesUnderCommit++
		}
		if n < keep {
			e.sum.SlowWrites = append(e.sum.SlowWrites, SlowWrite{Write: x.toEvent(i), Commits: commits})
		}
	}
}

// Summary is what explain found over all slow requests.
type Summary struct {
	// API is what was explained when not produce requests (APIFetch);
	// FetchRequests then counts the answered consumer fetches, whose
	// threshold is on the part of their time that was not purgatory.
	API           string `json:"api,omitempty"`
	FetchRequests int64  `json:"fetch_requests,omitempty"`
	// GroupRequests counts the answered group coordinator requests
	// (APIGroup), whose own part the threshold applies to.
	GroupRequests int64 `json:"group_requests,omitempty"`
	// PageCacheRuns counts the runs of pages the broker's threads added
	// to the page cache in the trace (reads from disk).
	PageCacheRuns int64 `json:"page_cache_runs,omitempty"`

	ProduceRequests int64   `json:"produce_requests"` // answered produce requests
	ThresholdMs     float64 `json:"threshold_ms"`
	ThresholdFrom   string  `json:"threshold_from"` // "p99" or "--slow"
	Slow            int64   `json:"slow_requests"`
	SlowLatencyMs   float64 `json:"slow_latency_ms"` // sum over slow requests

	Causes  []CauseStat `json:"causes"`
	Journal int64       `json:"journal_root"` // slow requests whose root is a journal commit

	Stalls []Stall `json:"stalls"`
	// SlowWrites are the slowest appends of at least Config.SlowWrite,
	// each with the journal commits on its device that overlapped it;
	// SlowWritesTotal counts them all, SlowWritesUnderCommit those with
	// a commit.
	SlowWrites            []SlowWrite     `json:"slow_writes"`
	SlowWritesTotal       int64           `json:"slow_writes_total"`
	SlowWritesUnderCommit int64           `json:"slow_writes_under_commit"`
	Partitions            []PartitionStat `json:"worst_partitions"`
	Devices               []DeviceStat    `json:"worst_devices"`
	WorstCommits          []CommitStat    `json:"worst_commits"`

	// FollowerFetches counts the replica fetchers' Fetch requests seen:
	// without any, replication is never named.
	FollowerFetches int64 `json:"follower_fetches"`
	// ReplicationBy counts the slow acks=all requests whose wait for
	// followers was measured, by how (Finding.ReplicationFrom).
	ReplicationBy map[string]int64 `json:"replication_measured_by,omitempty"`
	// Followers counts the replication findings by the follower that
	// ended the wait and its cause, when the followers' recordings were
	// read too (most first).
	Followers []FollowerStat `json:"followers,omitempty"`
	// NodeID and Clock are set when several brokers' recordings are
	// explained together: this recording's broker, and its clock against
	// the first recording's.
	NodeID    *int32      `json:"node_id,omitempty"`
	Clock     *ClockShift `json:"clock,omitempty"`
	Writes    int64       `json:"writes"`
	Commits   int64       `json:"commits"`
	LockWaits int64       `json:"lock_waits"`
	// BrokerSteals are the intervals of hypervisor steal taken from the
	// broker's threads, OtherSteals those taken from other tasks or idle
	// CPUs (not joined with requests).
	// RunDelays, JVMPauses and ConnThreads count the scheduling and JVM
	// evidence (sched.jsonl); Throttles the samples with cgroup
	// throttling.
	// MissingEvidence lists what the recording could not show (set by
	// the caller from meta.json: recording.Meta.MissingEvidence).
	MissingEvidence  []string         `json:"missing_evidence,omitempty"`
	RunDelays        int64            `json:"run_delays"`
	JVMPauses        int64            `json:"jvm_pauses"`
	ConnThreads      int64            `json:"conn_threads"`
	Throttles        int64            `json:"throttles"`
	BrokerSteals     int64            `json:"broker_steal_intervals"`
	OtherSteals      int64            `json:"other_steal_intervals"`
	IDLookups        int64            `json:"id_lookups"`
	IDLookupErrors   int64            `json:"id_lookup_errors"`
	FirstLookupError string           `json:"first_lookup_error,omitempty"`
	MatchedBy        map[string]int64 `json:"own_write_matched_by"`

	causeIdx map[string]int
	parts    map[string]*PartitionStat
	devs     map[string]*DeviceStat
	commits  map[string]*CommitStat
}

// FollowerStat is how many replication findings waited for one follower
// whose part went to one cause.
type FollowerStat struct {
	Broker   int32  `json:"broker"`
	Cause    string `json:"cause"`
	Requests int64  `json:"requests"`
}

// ClockShift is a recording's clock against the first recording's:
// OffsetMs its clock minus the first's, within ± ErrorMs, from Exchanges
// replica fetches both captured (Agreeing of them allow it all).
type ClockShift struct {
	Against   int32   `json:"against"`
	OffsetMs  float64 `json:"offset_ms"`
	ErrorMs   float64 `json:"error_ms"`
	Exchanges int     `json:"exchanges"`
	Agreeing  int     `json:"agreeing"`
}

// CauseStat is one cause's share of the slow requests.
type CauseStat struct {
	Cause       string  `json:"cause"`
	Requests    int64   `json:"requests"`
	Share       float64 `json:"share"` // of slow requests, 0..1
	LatencyMs   float64 `json:"latency_ms"`
	ExplainedMs float64 `json:"explained_ms"`
}

// PartitionStat is one partition's part in the slow requests.
type PartitionStat struct {
	Partition  string  `json:"partition"`
	Requests   int64   `json:"slow_requests"`
	LatencyMs  float64 `json:"latency_ms"`
	MaxWriteMs float64 `json:"max_write_ms"`
}

// DeviceStat is one device's part: the writes slow requests rest on.
type DeviceStat struct {
	Dev        string  `json:"dev"`
	Requests   int64   `json:"slow_requests"`
	Writes     int64   `json:"writes"`
	MaxWriteMs float64 `json:"max_write_ms"`
}

// CommitStat is a journal commit slow requests rest on.
type CommitStat struct {
	event.JournalCommit
	Requests int64 `json:"slow_requests"`
}

// init lists every cause (those registered when the explainer was made,
// then unexplained) with no request yet.
func (s *Summary) init(causes *causeSet) {
	s.causeIdx = make(map[string]int)
	names := make([]string, 0, len(causes.byOrder)+1)
	for _, c := range causes.byOrder {
		names = append(names, c.name)
	}
	for i, c := range append(names, CauseUnexplained) {
		s.Causes = append(s.Causes, CauseStat{Cause: c})
		s.causeIdx[c] = i
	}
	s.parts = make(map[string]*PartitionStat)
	s.devs = make(map[string]*DeviceStat)
	s.commits = make(map[string]*CommitStat)
	s.MatchedBy = make(map[string]int64)
	s.ReplicationBy = make(map[string]int64)
}

func (s *Summary) add(f *Finding, e *Explainer, rootWrites []int32) {
	s.Slow++
	s.SlowLatencyMs += f.LatencyMs
	c := &s.Causes[s.causeIdx[f.Cause]]
	c.Requests++
	c.LatencyMs += f.LatencyMs
	c.ExplainedMs += f.ExplainedMs
	if f.Root == RootJournal {
		s.Journal++
	}
	if f.ReplicationFrom != "" {
		s.ReplicationBy[f.ReplicationFrom]++
	}
	if f.Follower != nil {
		s.addFollower(*f.Follower, f.FollowerCause)
	}
	if f.Stall != nil && *f.Stall >= 0 && *f.Stall < len(s.Stalls) {
		s.Stalls[*f.Stall].Requests++
	}
	for _, p := range f.Partitions {
		if p.Write != nil {
			s.MatchedBy[p.Write.MatchedBy]++
		}
		key := partKey{p.Topic, p.Partition}.String()
		ps := s.parts[key]
		if ps == nil {
			ps = &PartitionStat{Partition: key}
			s.parts[key] = ps
		}
		ps.Requests++
		ps.LatencyMs += f.LatencyMs
		if p.Write != nil {
			ps.MaxWriteMs = max(ps.MaxWriteMs, p.Write.LatencyMs)
		}
		for _, b := range p.Blocking {
			ps.MaxWriteMs = max(ps.MaxWriteMs, b.LatencyMs)
		}
	}
	seenDev := make(map[string]bool)
	for _, i := range rootWrites {
		w := &e.idx.writes[i]
		dev := e.idx.strs[w.dev]
		ds := s.devs[dev]
		if ds == nil {
			ds = &DeviceStat{Dev: dev}
			s.devs[dev] = ds
		}
		ds.Writes++
		ds.MaxWriteMs = max(ds.MaxWriteMs, ms(w.dur()))
		if !seenDev[dev] {
			seenDev[dev] = true
			ds.Requests++
		}
	}
	for _, cm := range f.Commits {
		key := cm.Dev + "@" + cm.Start.String()
		cs := s.commits[key]
		if cs == nil {
			cs = &CommitStat{JournalCommit: cm}
			s.commits[key] = cs
		}
		cs.Requests++
	}
}

// Summary returns the summary, with produce request count and threshold
// as the caller measured them. top bounds the worst-of lists.
func (e *Explainer) Summary(produce int64, threshold time.Duration, from string, top int) *Summary {
	s := &e.sum
	s.ProduceRequests = produce
	s.ThresholdMs = ms(int64(threshold))
	s.ThresholdFrom = from
	for i := range s.Causes {
		if s.Slow > 0 {
			s.Causes[i].Share = float64(s.Causes[i].Requests) / float64(s.Slow)
		}
	}
	s.Partitions = s.Partitions[:0]
	for _, p := range s.parts {
		s.Partitions = append(s.Partitions, *p)
	}
	slices.SortFunc(s.Partitions, func(a, b PartitionStat) int {
		return cmp.Or(cmp.Compare(b.LatencyMs, a.LatencyMs), cmp.Compare(a.Partition, b.Partition))
	})
	slices.SortFunc(s.Followers, func(a, b FollowerStat) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Broker, b.Broker), cmp.Compare(a.Cause, b.Cause))
	})
	s.Devices = s.Devices[:0]
	for _, d := range s.devs {
		s.Devices = append(s.Devices, *d)
	}
	slices.SortFunc(s.Devices, func(a, b DeviceStat) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Dev, b.Dev))
	})
	s.WorstCommits = s.WorstCommits[:0]
	for _, c := range s.commits {
		s.WorstCommits = append(s.WorstCommits, *c)
	}
	slices.SortFunc(s.WorstCommits, func(a, b CommitStat) int {
		return cmp.Or(cmp.Compare(b.LatencyMs, a.LatencyMs), a.Start.Compare(b.Start))
	})
	if top > 0 {
		s.SlowWrites = s.SlowWrites[:min(top, len(s.SlowWrites))]
		s.Partitions = s.Partitions[:min(top, len(s.Partitions))]
		s.Devices = s.Devices[:min(top, len(s.Devices))]
		s.WorstCommits = s.WorstCommits[:min(top, len(s.WorstCommits))]
	}
	return s
}

func (s *Summary) addFollower(broker int32, cause string) {
	for i := range s.Followers {
		if s.Followers[i].Broker == broker && s.Followers[i].Cause == cause {
			s.Followers[i].Requests++
			return
		}
	}
	s.Followers = append(s.Followers, FollowerStat{Broker: broker, Cause: cause, Requests: 1})
}
