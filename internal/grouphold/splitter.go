package grouphold

import (
	"maps"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Bounds of what a Splitter keeps: the wire may name any number of
// groups, generations and members.
const (
	MaxGroups      = 10000
	MaxGenerations = 64
	MaxJoins       = 4096
)

// Splitter collects the generations of the groups whose requests it is
// given, to split any group request afterwards. The zero value is not
// usable: New.
type Splitter struct {
	groups map[string]*groupGens
	// Dropped counts the requests it could not keep (past a bound).
	Dropped int64
}

// groupGens is one group's latest generations.
type groupGens struct {
	gens map[int32]*generation
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

// Add takes one request; only answered JoinGroups and SyncGroups without
// error are kept.
func (s *Splitter) Add(r *event.Request) {
	if !r.Answered || r.Group.ID == "" || errorCode(r) != 0 {
		return
	}
	switch r.APIKey {
	case apiJoinGroup:
		gen := s.generation(r.Group.ID, r.GroupResult.Generation)
		if gen == nil {
			return
		}
		member := r.GroupResult.MemberID
		if member == "" {
			member = r.Group.MemberID
		}
		if len(gen.joins) >= MaxJoins {
			s.Dropped++
			return
		}
		bs := BrokerStart(r)
		gen.joins = append(gen.joins, join{member: member, brokerStart: bs})
		gen.lastJoin = later(gen.lastJoin, bs)
		gen.checked = false
		if r.GroupResult.Leader != "" {
			gen.leader = r.GroupResult.Leader
		}
	case apiSyncGroup:
		gen := s.generation(r.Group.ID, r.Group.Generation)
		if gen == nil || gen.leader == "" || r.Group.MemberID != gen.leader {
			return
		}
		if bs := BrokerStart(r); gen.leaderSync.IsZero() || bs.Before(gen.leaderSync) {
			gen.leaderSync = bs
		}
	}
}

// generation returns group's generation id, made if new; nil past the
// bounds (the oldest generation goes for a newer one).
func (s *Splitter) generation(group string, id int32) *generation {
	if id < 0 {
		return nil
	}
	g := s.groups[group]
	if g == nil {
		if len(s.groups) >= MaxGroups {
			s.Dropped++
			return nil
		}
		g = &groupGens{gens: map[int32]*generation{}}
		s.groups[group] = g
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
	start := BrokerStart(r)
	sp.TotalMs = ms(r.End.Sub(start))
	hold, end := s.hold(r, start)
	if hold == HoldNone || !end.After(start) {
		sp.OwnMs = sp.TotalMs
		return sp, true
	}
	if end.After(r.End) {
		end = r.End
	}
	sp.Hold, sp.HoldEnd = hold, end
	sp.HoldMs = ms(end.Sub(start))
	sp.OwnMs = sp.TotalMs - sp.HoldMs
	return sp, true
}

// hold is what held r, read by the broker at start, and when that ended.
func (s *Splitter) hold(r *event.Request, start time.Time) (Hold, time.Time) {
	switch r.APIKey {
	case apiJoinGroup:
		switch code := errorCode(r); code {
		case 0:
			return s.joinHold(r)
		case errMemberIDRequired, errUnknownMemberID:
			return HoldNone, time.Time{}
		}
		return HoldUnknown, r.End
	case apiSyncGroup:
		if errorCode(r) != 0 {
			return HoldUnknown, r.End
		}
		gen := s.gen(r.Group.ID, r.Group.Generation)
		switch {
		case gen == nil || gen.leader == "":
			return HoldUnknown, r.End
		case r.Group.MemberID == gen.leader:
			return HoldNone, time.Time{}
		case gen.leaderSync.IsZero():
			return HoldUnknown, r.End
		}
		return HoldLeader, gen.leaderSync
	}
	return HoldNone, time.Time{}
}

// joinHold is a JoinGroup's hold: until the generation's last member
// joined; all of it for a new group.
func (s *Splitter) joinHold(r *event.Request) (Hold, time.Time) {
	id := r.GroupResult.Generation
	gen := s.gen(r.Group.ID, id)
	if gen == nil {
		return HoldUnknown, r.End
	}
	if s.newGroup(r.Group.ID, id, gen) {
		return HoldNewGroup, r.End
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
