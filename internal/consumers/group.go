package consumers

import (
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// group is what a consumer group's requests said, kept compact: the
// events that shape a rebalance (joins, syncs, leaves, heartbeat errors,
// KIP-848 epochs) and each member's heartbeats as silences, so that the
// rebalances are worked out when the report is built (rebalance.go).
type group struct {
	id      string
	events  []groupEvent
	members map[string]*member
	// dropped counts events past maxGroupEvents.
	dropped int64
}

// groupEvent is one group request and its response.
type groupEvent struct {
	kind         eventKind
	arrival, end time.Time
	member       string // the member id the request named, or the response assigned
	client       string // client id@host
	generation   int32  // the response's generation (classic) or member epoch (KIP-848); -1 none
	reqEpoch     int32  // KIP-848: the epoch the member sent (0 join, -1 leave, -2 static leave)
	errorCode    int16
	leader       string
	answered     bool
}

type eventKind uint8

const (
	joinEvent eventKind = iota
	syncEvent
	leaveEvent
	heartbeatErrorEvent
	cghEvent
)

// member is one member's heartbeats.
type member struct {
	id, client string
	// conn is its client as the fetches name it: their consumer's
	// fetch stalls are its.
	conn             clientKey
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	lastHeartbeat    time.Time
	silences         []silence
	heartbeats       int64
	consumerProtocol bool
}

// silence is a time a member sent no group request for longer than it
// usually does: with its session timeout, whether it was removed.
type silence struct{ from, to time.Time }

// Bounds per group.
const (
	maxGroupEvents = 20_000
	maxMembers     = 5_000
	maxSilences    = 64
)

// Kafka error codes the rebalances read.
const (
	errIllegalGeneration   = 22
	errUnknownMemberID     = 25
	errRebalanceInProgress = 27
	errMemberIDRequired    = 79
	errFencedInstanceID    = 82
	errFencedMemberEpoch   = 110
)

// groupRequest records a group request.
func (a *Aggregator) groupRequest(r *event.Request) {
	id := r.Group.ID
	if id == "" {
		return
	}
	g := a.groups[id]
	if g == nil {
		if len(a.groups) >= a.o.MaxGroups {
			return
		}
		g = &group{id: id, members: map[string]*member{}}
		a.groups[id] = g
	}
	client := r.ClientID + "@" + hostOf(r.Client)
	memberID := r.Group.MemberID
	if memberID == "" {
		memberID = r.GroupResult.MemberID
	}
	code := int16(0)
	if r.ErrorCode != nil {
		code = *r.ErrorCode
	}
	if memberID != "" {
		g.heard(memberID, client, r)
	}
	ev := groupEvent{arrival: r.Arrival, end: r.End, member: memberID, client: client, generation: -1, errorCode: code,
		answered: r.Answered, reqEpoch: r.Group.Generation}
	if r.Answered {
		ev.generation = r.GroupResult.Generation
		ev.leader = r.GroupResult.Leader
	}
	switch r.APIKey {
	case apiJoinGroup:
		ev.kind = joinEvent
	case apiSyncGroup:
		ev.kind, ev.generation = syncEvent, r.Group.Generation
	case apiLeaveGroup:
		ev.kind = leaveEvent
	case apiHeartbeat:
		if code != errRebalanceInProgress && code != errUnknownMemberID && code != errIllegalGeneration && code != errFencedInstanceID {
			return
		}
		ev.kind, ev.generation = heartbeatErrorEvent, r.Group.Generation
	case apiCGHeartbeat:
		ev.kind = cghEvent
	default:
		return
	}
	if len(g.events) >= maxGroupEvents {
		// The oldest half goes: what a rebalance needs is recent.
		g.dropped += int64(len(g.events) / 2)
		g.events = slices.Delete(g.events, 0, len(g.events)/2)
	}
	g.events = append(g.events, ev)
}

// heard notes a member's request: a long gap since its last one is a
// silence.
func (g *group) heard(id, client string, r *event.Request) {
	m := g.members[id]
	if m == nil {
		if len(g.members) >= maxMembers {
			return
		}
		m = &member{id: id, client: client, conn: clientKey{hostOf(r.Client), r.ClientID}}
		g.members[id] = m
	}
	if t := r.Group.SessionTimeoutMs; t > 0 {
		m.sessionTimeout = time.Duration(t) * time.Millisecond
	}
	if t := r.Group.RebalanceTimeoutMs; t > 0 {
		m.rebalanceTimeout = time.Duration(t) * time.Millisecond
	}
	m.consumerProtocol = m.consumerProtocol || r.APIKey == apiCGHeartbeat
	m.heartbeats++
	// A gap longer than a third of the session timeout (the default
	// heartbeat interval is a third of it, or 5 s when the timeout is
	// not known) is a silence worth keeping.
	gap := cmpOr(m.sessionTimeout/3, 5*time.Second)
	if !m.lastHeartbeat.IsZero() && r.Arrival.Sub(m.lastHeartbeat) > gap && len(m.silences) < maxSilences {
		m.silences = append(m.silences, silence{m.lastHeartbeat, r.Arrival})
	}
	if r.Arrival.After(m.lastHeartbeat) {
		m.lastHeartbeat = r.Arrival
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
