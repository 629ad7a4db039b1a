package consumers

import (
	"cmp"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Report is the consumers view of one stream of requests.
type Report struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Consumers are the groups and group-less clients, the most behind
	// (in time) first.
	Consumers []Consumer     `json:"consumers"`
	EndToEnd  []TopicLatency `json:"end_to_end"`
	// FetchLatency is each consumer's fetch time, split (the slowest
	// first).
	FetchLatency []FetchLatency `json:"fetch_latency"`
	Rebalances   []Rebalance    `json:"rebalances"`
	Findings     []Finding      `json:"findings"`
	// UntrackedPartitions counts consumer fetch partitions past the
	// bound on those followed; DroppedGroupEvents group requests past the
	// bound per group; UnmatchedMessages produced messages whose fetch
	// was not found within the bounded wait.
	UntrackedPartitions int64 `json:"untracked_partitions,omitempty"`
	DroppedGroupEvents  int64 `json:"dropped_group_events,omitempty"`
	UnmatchedMessages   int64 `json:"unmatched_messages,omitempty"`
	// UntrackedFetchClients counts consumer clients whose fetch times
	// were not kept (past the bound), UntrackedFetchPartitions the
	// partitions whose high watermark the fetch split did not follow.
	UntrackedFetchClients    int64 `json:"untracked_fetch_clients,omitempty"`
	UntrackedFetchPartitions int64 `json:"untracked_fetch_partitions,omitempty"`
}

// Consumer is one group (or a client without a group) and its partitions.
type Consumer struct {
	// Group is the consumer group; empty for a client that fetched
	// without one (assign(), Flink, Spark), which Client then names.
	Group   string   `json:"group,omitempty"`
	Clients []string `json:"clients"`
	// LagMessages sums its partitions' lag; MaxLagMs is its largest time
	// lag now, BehindSec how long its most behind partition has been
	// behind.
	LagMessages int64   `json:"lag_messages"`
	MaxLagMs    float64 `json:"max_lag_ms"`
	BehindSec   float64 `json:"behind_sec"`
	// Commits counts the OffsetCommits seen; NeverCommits says the
	// consumer fetched but committed nothing in the capture: tools that
	// read lag from committed offsets do not see it.
	Commits      int64       `json:"commits"`
	NeverCommits bool        `json:"never_commits"`
	Partitions   []Partition `json:"partitions"`
}

// Name is how findings name the consumer.
func (c *Consumer) Name() string {
	if c.Group != "" {
		return "group " + quote(c.Group)
	}
	if len(c.Clients) > 0 {
		return "client " + quote(c.Clients[0]) + " (no group)"
	}
	return "a consumer"
}

// Partition is one consumer's position in one partition at the end of
// the capture.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Client    string `json:"client"`
	// Position is the next offset it reads; HighWatermark the
	// partition's as the last response gave it; LagMessages their
	// difference.
	Position      int64 `json:"position"`
	HighWatermark int64 `json:"high_watermark"`
	LagMessages   int64 `json:"lag_messages"`
	// LagMs is the age of the data at its position when it last fetched
	// some (0 once caught up); LagTimed is false when no response gave
	// it (no timestamps returned yet).
	LagMs    float64 `json:"lag_ms"`
	LagTimed bool    `json:"lag_timed"`
	MaxLag   int64   `json:"max_lag_messages"`
	MaxLagMs float64 `json:"max_lag_ms"`
	// BehindSec is how long it has been behind (0: caught up).
	BehindSec float64 `json:"behind_sec"`
	// Committed is the group's last committed offset (-1: none seen),
	// CommitGap the position minus it.
	Committed int64     `json:"committed"`
	CommitGap int64     `json:"commit_gap"`
	LastFetch time.Time `json:"last_fetch"`
	Fetches   int64     `json:"fetches"`
	Empty     int64     `json:"empty_fetches"`
}

// TopicLatency is the end-to-end latency of one topic's messages: from
// the produce request's arrival to the first consumer fetch response that
// carried the message.
type TopicLatency struct {
	Topic    string  `json:"topic"`
	Messages int64   `json:"messages"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	P999Ms   float64 `json:"p999_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// Report returns the view of everything added so far.
func (a *Aggregator) Report() *Report {
	rep := &Report{Start: a.first, End: a.last, UntrackedPartitions: a.untracked, UnmatchedMessages: a.e2e.dropped}
	if a.last.After(a.first) {
		rep.Seconds = a.last.Sub(a.first).Seconds()
	}
	rep.Consumers = a.consumers()
	rep.EndToEnd = a.e2e.report()
	rep.FetchLatency = a.fetchLatencies()
	rep.UntrackedFetchClients, rep.UntrackedFetchPartitions = a.untrackedFetchClients, a.splitter.Untracked
	for _, g := range a.groups {
		for _, rb := range g.rebalances(a.o.GroupSessionTimeout) {
			m := g.members[rb.Slowest]
			rb.SlowestWhy = slowestWhy(&rb, m, a.fetchStalls(m))
			if ref, ok := a.holds.Longest(rb.Group, rb.Start, rb.End); ok {
				rb.CoordinatorMs, rb.CoordinatorRequest = ref.Split.OwnMs, &ref
			}
			rep.Rebalances = append(rep.Rebalances, rb)
		}
		rep.DroppedGroupEvents += g.dropped
	}
	sortRebalances(rep.Rebalances)
	rep.Findings = Evaluate(rep, a.o)
	return rep
}

// consumers builds one row per consumer from the partitions followed.
func (a *Aggregator) consumers() []Consumer {
	byName := map[string]*Consumer{}
	for pk, st := range a.partitions {
		group, client := a.consumerOf(pk.client)
		key := "group:" + group
		if group == "" {
			key = "client:" + client
		}
		c := byName[key]
		if c == nil {
			c = &Consumer{Group: group}
			byName[key] = c
		}
		if !slices.Contains(c.Clients, client) {
			c.Clients = append(c.Clients, client)
		}
		c.Partitions = append(c.Partitions, a.partitionRow(pk, st, client, group))
	}
	var out []Consumer
	for _, c := range byName {
		a.summarize(c)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y Consumer) int {
		return cmp.Or(cmp.Compare(y.MaxLagMs, x.MaxLagMs), cmp.Compare(y.LagMessages, x.LagMessages), cmp.Compare(x.Group, y.Group),
			slices.Compare(x.Clients, y.Clients))
	})
	return out
}

func (a *Aggregator) partitionRow(pk partKey, st *partition, client, group string) Partition {
	p := Partition{Topic: pk.topic, Partition: pk.partition, Client: client, Position: st.position, HighWatermark: st.hwm,
		LagMs: st.lagMs, LagTimed: st.timed, MaxLag: st.maxLag, MaxLagMs: st.maxLagMs, Committed: -1, LastFetch: st.lastFetch,
		Fetches: st.fetches, Empty: st.empty}
	if st.position >= 0 && st.hwm >= 0 {
		p.LagMessages = max(0, st.hwm-st.position)
	}
	if !st.behindSince.IsZero() {
		p.BehindSec = a.last.Sub(st.behindSince).Seconds()
	}
	if cm, ok := a.commits[group][topicPartition{pk.topic, pk.partition}]; ok {
		p.Committed = cm.offset
		if st.position >= 0 {
			p.CommitGap = st.position - cm.offset
		}
	}
	return p
}

// summarize fills a consumer's totals, and orders its partitions.
func (a *Aggregator) summarize(c *Consumer) {
	slices.Sort(c.Clients)
	slices.SortFunc(c.Partitions, func(x, y Partition) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition), y.LastFetch.Compare(x.LastFetch))
	})
	// A partition read by two clients of the group in turn (after a
	// rebalance) keeps the row of the later reader.
	c.Partitions = slices.CompactFunc(c.Partitions, func(x, y Partition) bool { return x.Topic == y.Topic && x.Partition == y.Partition })
	for _, p := range c.Partitions {
		c.LagMessages += p.LagMessages
		c.MaxLagMs = max(c.MaxLagMs, p.LagMs)
		c.BehindSec = max(c.BehindSec, p.BehindSec)
	}
	if c.Group != "" {
		c.Commits = a.commitRequests[c.Group]
	}
	c.NeverCommits = c.Commits == 0
}

func (e *endToEnd) report() []TopicLatency {
	var out []TopicLatency
	for topic, h := range e.byTopic {
		out = append(out, TopicLatency{Topic: topic, Messages: h.TotalCount(), P50Ms: msOf(h, 50), P99Ms: msOf(h, 99),
			P999Ms: msOf(h, 99.9), MaxMs: float64(h.Max()) / 1000})
	}
	slices.SortFunc(out, func(x, y TopicLatency) int { return cmp.Compare(x.Topic, y.Topic) })
	return out
}

func msOf(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
