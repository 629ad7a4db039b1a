package grouphold

import (
	"maps"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Bounds of what a Splitter keeps: the wire may name any number of
// groups, generations and members. Per group: MaxGenerations generations
// of up to MaxJoins joins, and its recent requests; in all: MaxGroups
// groups, MaxJoinsTotal joins, and about MaxRecentTotal recent requests
// (each group keeps its share of them, at least MinRecent).
const (
	MaxGroups      = 4096
	MaxGenerations = 64
	MaxJoins       = 4096
	MaxJoinsTotal  = 1 << 18
	MaxRecentTotal = 1 << 18
	MinRecent      = 64
)

// Splitter collects the generations of the groups whose requests it is
// given, to split any group request afterwards. The zero value is not
// usable: New.
type Splitter struct {
	groups map[string]*groupGens
	// joins counts the joins kept in all generations.
	joins int
	// Dropped counts the requests it could not keep (past a bound).
	Dropped int64
}

// groupGens is one group's latest generations and requests.
type groupGens struct {
	gens map[int32]*generation
	// recent are its latest requests, for Longest.
	recent []entry
}

// entry is what a split needs of a group request.
type entry struct {
	api                       int16
	code                      int16
	gen                       int32 // JoinGroup: the generation answered; SyncGroup: the one it syncs
	group, member, client     string
	corr                      int32
	arrival, brokerStart, end time.Time
}

func entryOf(r *event.Request) entry {
	e := entry{api: r.APIKey, code: errorCode(r), gen: r.Group.Generation, group: r.Group.ID, member: r.Group.MemberID,
		client: r.Client, corr: r.CorrelationID, arrival: r.Arrival, brokerStart: BrokerStart(r), end: r.End}
	if r.APIKey == apiJoinGroup {
		e.gen = r.GroupResult.Generation
		if r.GroupResult.MemberID != "" {
			e.member = r.GroupResult.MemberID
		}
	}
	return e
}

// generation is what the classic protocol holds its requests for: the
// JoinGroups answered with it, its leader, and when the leader's
// SyncGroup reached the broker.
type generation struct {
	joins      []join
	lastJoin   time.Time // the latest of the joins' brokerStart
	leader     string
	leaderSync time.Time
	// isNew is newGroup's answer, worked out once (checked).
	checked, isNew bool
}

// join is one member's JoinGroup answered with a generation.
type join struct {
	member      string
	brokerStart time.Time
}

// New returns an empty Splitter.
func New() *Splitter { return &Splitter{groups: map[string]*groupGens{}} }

// Add takes one request of the coordinator's, answered; the JoinGroups
// and SyncGroups answered without error make the generations.
func (s *Splitter) Add(r *event.Request) {
	if !r.Answered || r.Group.ID == "" || r.End.IsZero() || !IsGroupRequest(r) {
		return
	}
	e := entryOf(r)
	s.remember(e)
	if e.code != 0 {
		return
	}
	switch r.APIKey {
	case apiJoinGroup:
		gen := s.generation(e.group, e.gen)
		if gen == nil {
			return
		}
		if len(gen.joins) >= MaxJoins || s.joins >= MaxJoinsTotal {
			s.Dropped++
			return
		}
		gen.joins = append(gen.joins, join{member: e.member, brokerStart: e.brokerStart})
		s.joins++
		gen.lastJoin = later(gen.lastJoin, e.brokerStart)
		gen.checked = false
		if r.GroupResult.Leader != "" {
			gen.leader = r.GroupResult.Leader
		}
	case apiSyncGroup:
		gen := s.generation(e.group, e.gen)
		if gen == nil || gen.leader == "" || e.member != gen.leader {
			return
		}
		if gen.leaderSync.IsZero() || e.brokerStart.Before(gen.leaderSync) {
			gen.leaderSync = e.brokerStart
		}
	}
}

// remember keeps e among its group's recent requests; the oldest half
// goes when they are past the group's share of MaxRecentTotal.
func (s *Splitter) remember(e entry) {
	g := s.group(e.group)
	if g == nil {
		return
	}
	if len(g.recent) >= max(MinRecent, MaxRecentTotal/len(s.groups)) {
		s.Dropped += int64(len(g.recent) / 2)
		g.recent = slices.Delete(g.recent, 0, len(g.recent)/2)
	}
	g.recent = append(g.recent, e)
}

// group returns a group's generations, made if new; nil past MaxGroups.
func (s *Splitter) group(id string) *groupGens {
	g := s.groups[id]
	if g == nil {
		if len(s.groups) >= MaxGroups {
			s.Dropped++
			return nil
		}
		g = &groupGens{gens: map[int32]*generation{}}
		s.groups[id] = g
	}
	return g
}

// generation returns group's generation id, made if new; nil past the
// bounds (the oldest generation goes for a newer one).
func (s *Splitter) generation(group string, id int32) *generation {
	if id < 0 {
		return nil
	}
	g := s.group(group)
	if g == nil {
		return nil
	}
	if gen := g.gens[id]; gen != nil {
		return gen
	}
	if len(g.gens) >= MaxGenerations {
		oldest := slices.Min(slices.Collect(maps.Keys(g.gens)))
		if id < oldest {
			s.Dropped++
			return nil
		}
		s.joins -= len(g.gens[oldest].joins)
		delete(g.gens, oldest)
	}
	gen := &generation{}
	g.gens[id] = gen
	return gen
}

// Split splits r's time at the broker; ok is false for a request the
// coordinator does not answer, or one without a response.
func (s *Splitter) Split(r *event.Request) (sp Split, ok bool) {
	if !IsGroupRequest(r) || !r.Answered || r.End.IsZero() {
		return Split{}, false
	}
	e := entryOf(r)
	return s.split(&e), true
}

func (s *Splitter) split(e *entry) (sp Split) {
	start := e.brokerStart
	sp.TotalMs = ms(e.end.Sub(start))
	hold, end := s.hold(e)
	if hold == HoldNone || !end.After(start) {
		sp.OwnMs = sp.TotalMs
		return sp
	}
	if end.After(e.end) {
		end = e.end
	}
	sp.Hold, sp.HoldEnd = hold, end
	sp.HoldMs = ms(end.Sub(start))
	sp.OwnMs = sp.TotalMs - sp.HoldMs
	return sp
}

// hold is what held e, and when that ended.
func (s *Splitter) hold(e *entry) (Hold, time.Time) {
	switch e.api {
	case apiJoinGroup:
		switch e.code {
		case 0:
			return s.joinHold(e)
		case errMemberIDRequired, errUnknownMemberID:
			return HoldNone, time.Time{}
		}
		return HoldUnknown, e.end
	case apiSyncGroup:
		if e.code != 0 {
			return HoldUnknown, e.end
		}
		gen := s.gen(e.group, e.gen)
		switch {
		case gen == nil || gen.leader == "":
			return HoldUnknown, e.end
		case e.member == gen.leader:
			return HoldNone, time.Time{}
		case gen.leaderSync.IsZero():
			return HoldUnknown, e.end
		}
		return HoldLeader, gen.leaderSync
	}
	return HoldNone, time.Time{}
}

// joinHold is a JoinGroup's hold: until the generation's last member
// joined; all of it for a new group.
func (s *Splitter) joinHold(e *entry) (Hold, time.Time) {
	gen := s.gen(e.group, e.gen)
	if gen == nil {
		return HoldUnknown, e.end
	}
	if s.newGroup(e.group, e.gen, gen) {
		return HoldNewGroup, e.end
	}
	return HoldMembers, gen.lastJoin
}

// newGroup says whether generation id of group shares no member with the
// group's previous generation seen (or there is none): the group was
// empty, and the coordinator delayed its first join.
func (s *Splitter) newGroup(group string, id int32, gen *generation) bool {
	if gen.checked {
		return gen.isNew
	}
	gen.checked, gen.isNew = true, true
	g := s.groups[group]
	prevID, found := int32(0), false
	for pid := range g.gens {
		if pid < id && (!found || pid > prevID) {
			prevID, found = pid, true
		}
	}
	if !found {
		return true
	}
	prev := make(map[string]bool, len(g.gens[prevID].joins))
	for _, j := range g.gens[prevID].joins {
		prev[j.member] = true
	}
	for _, j := range gen.joins {
		if prev[j.member] {
			gen.isNew = false
			break
		}
	}
	return gen.isNew
}

func (s *Splitter) gen(group string, id int32) *generation {
	if g := s.groups[group]; g != nil {
		return g.gens[id]
	}
	return nil
}

func errorCode(r *event.Request) int16 {
	if r.ErrorCode == nil {
		return 0
	}
	return *r.ErrorCode
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ref names one group request and its split.
type Ref struct {
	API           int16     `json:"api_key"`
	Client        string    `json:"client"` // ip:port
	CorrelationID int32     `json:"correlation_id"`
	Member        string    `json:"member,omitempty"`
	Arrival       time.Time `json:"arrival"`
	Split         Split     `json:"split"`
}

// Longest is the request of group, arrived from from to to, in which the
// coordinator's own part was the longest; ok is false when none of its
// requests kept arrived then.
func (s *Splitter) Longest(group string, from, to time.Time) (Ref, bool) {
	g := s.groups[group]
	if g == nil {
		return Ref{}, false
	}
	var best Ref
	found := false
	for i := range g.recent {
		e := &g.recent[i]
		if e.arrival.Before(from) || e.arrival.After(to) {
			continue
		}
		sp := s.split(e)
		if !found || sp.OwnMs > best.Split.OwnMs {
			best, found = Ref{API: e.api, Client: e.client, CorrelationID: e.corr, Member: e.member, Arrival: e.arrival, Split: sp}, true
		}
	}
	return best, found
}
