// Package consumers is the view behind kscope consumers: from the decoded
// requests of a capture, a recording or the agent's live stream, per
// consumer (its group, or its client for one without a group), topic and
// partition, how far its fetch position is behind the high watermark in
// messages and in time (the age of the data at its position, from the
// batch timestamps the broker returned), its committed offset and the gap
// to its position; the end-to-end latency of each message produced and
// fetched in the same capture; and every rebalance of every group, classic
// and KIP-848: when it started, which member triggered it and how, how
// long each phase took, who was the slowest.
//
// Tools that estimate lag from committed offsets cannot see a consumer
// that never commits, and guess the time; the wire has the fetch
// positions, high watermarks and record timestamps. The aggregator is a
// sink of the one decode pipeline: it takes *event.Request and nothing
// else.
package consumers

import (
	"cmp"
	"net"
	"time"

	"github.com/kscope-dev/kscope/internal/grouphold"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

// Options configure an Aggregator.
type Options struct {
	// MaxPartitions bounds the (consumer, topic, partition) rows kept
	// (0: DefaultMaxPartitions); fetches of further ones are counted,
	// not followed.
	MaxPartitions int
	// MaxGroups bounds the groups followed for rebalances (0:
	// DefaultMaxGroups).
	MaxGroups int
	// LagWarning and LagAlarm are the time lags from which a consumer is
	// a warning and an alarm (0: DefaultLagWarning, DefaultLagAlarm).
	LagWarning, LagAlarm time.Duration
	// GroupSessionTimeout is the brokers' group.consumer.session.timeout.ms
	// (0: DefaultGroupSessionTimeout): a KIP-848 member's session timeout
	// is the broker's, not on the wire, and says when the coordinator
	// fenced a member that went silent.
	GroupSessionTimeout time.Duration
	// FetchSendRate is the rate (bytes/s) a fetch response is expected
	// to pass the capture point at (0: fetchsplit.DefaultSendRate).
	FetchSendRate float64
	// SlowFetchWarning and SlowFetchAlarm are the p99 of a consumer's
	// fetches' abnormal part from which it is a warning and an alarm (0:
	// DefaultSlowFetchWarning, DefaultSlowFetchAlarm).
	SlowFetchWarning, SlowFetchAlarm time.Duration
}

// DefaultGroupSessionTimeout is Kafka's default
// group.consumer.session.timeout.ms.
const DefaultGroupSessionTimeout = 45 * time.Second

// Default lag thresholds: a minute behind is worth a look; ten minutes
// is an outage for most consumers that serve people.
const (
	DefaultLagWarning = time.Minute
	DefaultLagAlarm   = 10 * time.Minute
)

// Default slow fetch thresholds, on the abnormal part of a fetch (not
// its purgatory): a consumer's poll loop waits for every fetch, and a
// broker that keeps it waiting 200 ms beyond its data is worth a look.
const (
	DefaultSlowFetchWarning = 200 * time.Millisecond
	DefaultSlowFetchAlarm   = time.Second
)

// Bounds: a hostile or broken client population cannot make the
// aggregator hold more than this.
const (
	DefaultMaxPartitions = 100_000
	DefaultMaxGroups     = 10_000
)

// Kafka API keys the view reads.
const (
	apiProduce      = 0
	apiFetch        = 1
	apiOffsetCommit = 8
	apiJoinGroup    = 11
	apiHeartbeat    = 12
	apiLeaveGroup   = 13
	apiSyncGroup    = 14
	apiCGHeartbeat  = 68
)

// Aggregator turns requests into the consumers view. It is not safe for
// concurrent use.
type Aggregator struct {
	o Options
	// memberOf maps a consumer client (host and client id) to the group
	// its group requests named, so that its fetches count for the group.
	memberOf   map[clientKey]string
	partitions map[partKey]*partition
	// commits are each group's last committed offsets; commitRequests
	// counts its OffsetCommits.
	commits        map[string]map[topicPartition]commit
	commitRequests map[string]int64
	// untracked counts consumer fetch partitions past MaxPartitions.
	untracked   int64
	e2e         *endToEnd
	groups      map[string]*group
	first, last time.Time
	// splitter splits each consumer fetch's time; fetchTimes are the
	// splits by client, untrackedFetchClients the clients past the bound.
	splitter   *fetchsplit.Splitter
	fetchTimes map[clientKey]*fetchTimes
	// holds splits the group requests' time at the coordinator: a
	// rebalance's CoordinatorMs.
	holds                 *grouphold.Splitter
	untrackedFetchClients int64
}

// clientKey is a consumer client: its address and client id.
type clientKey struct{ host, clientID string }

// partKey is one consumer client's view of one partition. Which consumer
// (group) the client belongs to is decided when the report is built: the
// capture may show its fetches before its first group request.
type partKey struct {
	client    clientKey
	topic     string
	partition int32
}

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

// New returns an empty Aggregator.
func New(o Options) *Aggregator {
	o.MaxPartitions = cmp.Or(o.MaxPartitions, DefaultMaxPartitions)
	o.MaxGroups = cmp.Or(o.MaxGroups, DefaultMaxGroups)
	o.LagWarning = cmp.Or(o.LagWarning, DefaultLagWarning)
	o.LagAlarm = cmp.Or(o.LagAlarm, DefaultLagAlarm)
	o.GroupSessionTimeout = cmp.Or(o.GroupSessionTimeout, DefaultGroupSessionTimeout)
	o.SlowFetchWarning = cmp.Or(o.SlowFetchWarning, DefaultSlowFetchWarning)
	o.SlowFetchAlarm = cmp.Or(o.SlowFetchAlarm, DefaultSlowFetchAlarm)
	return &Aggregator{o: o, memberOf: map[clientKey]string{}, partitions: map[partKey]*partition{}, e2e: newEndToEnd(),
		groups: map[string]*group{}, commits: map[string]map[topicPartition]commit{}, commitRequests: map[string]int64{},
		splitter: fetchsplit.New(fetchsplit.Options{SendRate: o.FetchSendRate, MaxPartitions: o.MaxPartitions}), fetchTimes: map[clientKey]*fetchTimes{}, holds: grouphold.New()}
}

// Add counts one request.
func (a *Aggregator) Add(r *event.Request) {
	if a.first.IsZero() || r.Arrival.Before(a.first) {
		a.first = r.Arrival
	}
	a.last = later(a.last, r.Arrival, r.End)
	a.split(r)
	switch r.APIKey {
	case apiProduce:
		a.e2e.produced(r)
	case apiFetch:
		if r.ReplicaID != nil && *r.ReplicaID >= 0 {
			return // a follower's fetch: replication, not consumption
		}
		a.fetched(r)
		a.e2e.fetched(r)
	case apiOffsetCommit:
		a.remember(r)
		a.committed(r)
		a.holds.Add(r)
	case apiJoinGroup, apiSyncGroup, apiHeartbeat, apiLeaveGroup, apiCGHeartbeat:
		a.remember(r)
		a.groupRequest(r)
		a.holds.Add(r)
	}
}

// remember maps the client of a group request to its group.
func (a *Aggregator) remember(r *event.Request) {
	if r.Group.ID == "" {
		return
	}
	k := clientKey{hostOf(r.Client), r.ClientID}
	if _, ok := a.memberOf[k]; ok || len(a.memberOf) < a.o.MaxGroups*10 {
		a.memberOf[k] = r.Group.ID
	}
}

// consumerOf names the consumer a client's fetches count for: its group
// when its group requests named one, else the client itself.
func (a *Aggregator) consumerOf(k clientKey) (group, client string) {
	return a.memberOf[k], k.clientID + "@" + k.host
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func later(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.After(t) {
			t = u
		}
	}
	return t
}
