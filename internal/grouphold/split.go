package grouphold

import (
	"time"
	"unicode/utf16"

	"github.com/kscope-dev/kscope/internal/event"
)

// Hold says what held a request at the coordinator.
type Hold string

// The holds.
const (
	// HoldNone: nothing; all of its broker time was the coordinator's.
	HoldNone Hold = ""
	// HoldMembers: a JoinGroup waited for the group's other members to
	// join (until the last one's JoinGroup reached the broker).
	HoldMembers Hold = "members"
	// HoldNewGroup: a JoinGroup of a group that had no member in common
	// with its previous generation (or none seen): the coordinator waits
	// group.initial.rebalance.delay.ms for more members, a setting the
	// wire does not show, so all of its time counts as held.
	HoldNewGroup Hold = "new-group"
	// HoldLeader: a follower's SyncGroup waited for the leader's.
	HoldLeader Hold = "leader"
	// HoldUnknown: a follower's SyncGroup whose leader's SyncGroup was not
	// seen, or a JoinGroup or SyncGroup answered with an error (the
	// rebalance it waited for was cancelled): when its hold ended is
	// unknown, so all of its time counts as held.
	HoldUnknown Hold = "unknown"
)

// Split is one group request's time at the broker, in milliseconds:
// TotalMs = HoldMs + OwnMs.
type Split struct {
	TotalMs float64 `json:"total_ms"`
	HoldMs  float64 `json:"hold_ms"`
	OwnMs   float64 `json:"own_ms"`
	Hold    Hold    `json:"hold,omitempty"`
	// HoldEnd is when the hold ended (zero without one): the coordinator's
	// own part runs from the later of it and when the broker could read
	// the request, to the response.
	HoldEnd time.Time `json:"hold_end,omitzero"`
}

// Kafka API keys of the group coordinator's requests.
const (
	apiOffsetCommit    = 8
	apiOffsetFetch     = 9
	apiJoinGroup       = 11
	apiHeartbeat       = 12
	apiLeaveGroup      = 13
	apiSyncGroup       = 14
	apiTxnOffsetCommit = 28
	apiCGHeartbeat     = 68
)

// Kafka error codes a JoinGroup is answered with at once.
const (
	errUnknownMemberID  = 25
	errMemberIDRequired = 79
)

// IsGroupRequest reports whether r is a request the group coordinator
// answers: the classic protocol's, KIP-848's heartbeat, and the offset
// commits and fetches.
func IsGroupRequest(r *event.Request) bool {
	switch r.APIKey {
	case apiOffsetCommit, apiOffsetFetch, apiJoinGroup, apiHeartbeat, apiLeaveGroup, apiSyncGroup, apiTxnOffsetCommit, apiCGHeartbeat:
		return true
	}
	return false
}

// BrokerStart is when the broker could read r: its end less the broker's
// time, within the request (its arrival when the broker's time is not
// known).
func BrokerStart(r *event.Request) time.Time {
	if r.BrokerMs <= 0 {
		return r.Arrival
	}
	s := r.End.Add(-time.Duration(r.BrokerMs * float64(time.Millisecond)))
	if s.Before(r.Arrival) || s.After(r.End) {
		return r.Arrival
	}
	return s
}

// SlowOwn is the coordinator's own time from which a group request is
// slow: its own work is a few milliseconds (answering, one append to
// __consumer_offsets).
const SlowOwn = 100 * time.Millisecond

// DefaultOffsetsPartitions is offsets.topic.num.partitions' default: the
// partitions of __consumer_offsets.
const DefaultOffsetsPartitions = 50

// OffsetsTopic is the topic the coordinator stores groups in.
const OffsetsTopic = "__consumer_offsets"

// OffsetsPartition is the partition of __consumer_offsets that stores
// group (of partitions): Kafka's Utils.abs(group.hashCode()) %
// partitions, with Java's String.hashCode over UTF-16 code units.
func OffsetsPartition(group string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h < 0 {
		if h == -h { // math.MinInt32: Kafka's Utils.abs makes it 0
			h = 0
		} else {
			h = -h
		}
	}
	return h % partitions
}
