package consumers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/grouphold"
)

// Rebalance is one rebalance of a group, as its members' requests show it.
type Rebalance struct {
	Group string `json:"group"`
	// Protocol is "classic" or "consumer" (KIP-848).
	Protocol string `json:"protocol"`
	// Generation is the generation (classic) or group epoch (KIP-848)
	// the rebalance ended in.
	Generation int32     `json:"generation"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// Trigger is how it started: "joined", "left", "timed out",
	// "rejoined" (a member of the group joined again: a subscription
	// change, or its poll loop fell behind max.poll.interval.ms), or
	// "unknown" (the first sign of it was the coordinator's
	// REBALANCE_IN_PROGRESS); Member and Client name who, Detail says
	// what shows it.
	Trigger string `json:"trigger"`
	Member  string `json:"member,omitempty"`
	Client  string `json:"client,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// JoinMs is from the start until the coordinator answered the
	// JoinGroups (classic); SyncMs from then until the last member had
	// its assignment (SyncGroup); TotalMs start to end. KIP-848: JoinMs
	// until the first answer with the new group epoch (the coordinator
	// bumped it and computed the target assignment), SyncMs from then
	// until every member reached it (reconciliation).
	JoinMs  float64 `json:"join_ms"`
	SyncMs  float64 `json:"sync_ms"`
	TotalMs float64 `json:"total_ms"`
	// Members is how many members the new generation has; Slowest is
	// the member the others waited for (the last to join, or to reach
	// the epoch) and SlowestMs how long after the start it came.
	Members       int     `json:"members"`
	Slowest       string  `json:"slowest,omitempty"`
	SlowestClient string  `json:"slowest_client,omitempty"`
	SlowestMs     float64 `json:"slowest_ms"`
	// SlowestWhy is what the wire says of why the slowest was slow: it
	// sent no group request for a while during the rebalance (stopped,
	// paused, or its poll loop stalled: silence on the client's side),
	// or its heartbeats went on but its fetches stopped (its poll loop
	// asked for nothing). Empty when it kept its pace.
	SlowestWhy string `json:"slowest_why,omitempty"`
	// CoordinatorMs is the coordinator's own time in the rebalance: the
	// longest own part (internal/grouphold: without the protocol's holds)
	// of the group's requests during it. Classic: answering the joins once
	// the last member joined, storing the assignment the leader sent; KIP-848:
	// a heartbeat's answer. CoordinatorRequest is that request, for
	// `kscope explain --api group --request CLIENT/CORRELATION-ID`.
	CoordinatorMs      float64        `json:"coordinator_ms"`
	CoordinatorRequest *grouphold.Ref `json:"coordinator_request,omitempty"`
	// CoordinatorCause and CoordinatorWhy are what explain --api group says
	// of that request, from a recording's traces (report.ExplainRebalances):
	// the broker's cause of the coordinator's own time, and its evidence.
	CoordinatorCause string `json:"coordinator_cause,omitempty"`
	CoordinatorWhy   string `json:"coordinator_why,omitempty"`
	// Complete is false when the capture ended before the rebalance did,
	// or (Superseded) a newer one began before every member reached
	// this one's epoch (KIP-848).
	Complete   bool `json:"complete"`
	Superseded bool `json:"superseded,omitempty"`
}

// rebalances works out a group's rebalances from its events.
// sessionTimeout is KIP-848's, the broker's setting.
func (g *group) rebalances(sessionTimeout time.Duration) []Rebalance {
	evs := slices.Clone(g.events)
	slices.SortStableFunc(evs, func(a, b groupEvent) int { return a.arrival.Compare(b.arrival) })
	var out []Rebalance
	if slices.ContainsFunc(evs, func(e groupEvent) bool { return e.kind == cghEvent }) {
		out = g.consumerRebalances(evs, sessionTimeout)
	} else {
		out = g.classicRebalances(evs)
	}
	return out
}

// slowestWhy is what the wire says of why rb's slowest member came late:
// a silence of its group requests during rb (the others waited for a
// client that said nothing), else a stall of its fetches (its heartbeat
// thread went on, but its poll loop asked for nothing: busy processing a
// batch past max.poll.interval.ms, or blocked), from stalls, its client's
// fetch stalls.
func slowestWhy(rb *Rebalance, m *member, stalls []silence) string {
	if m == nil {
		return ""
	}
	came := rb.Start.Add(time.Duration(rb.SlowestMs * float64(time.Millisecond)))
	during := func(s silence) bool { return s.from.Before(came) && s.to.After(rb.Start) }
	for _, s := range m.silences {
		if during(s) {
			return fmt.Sprintf("no group request from it from %s to %s (%s): silent on the client's side (stopped, paused, or its poll loop stalled)",
				clock(s.from), clock(s.to), dur(ms(s.to.Sub(s.from))))
		}
	}
	for _, s := range stalls {
		if during(s) {
			return fmt.Sprintf("its fetches stopped from %s to %s (%s) while its heartbeats went on: its poll loop asked for nothing (processing a batch, max.poll.interval.ms, or blocked)",
				clock(s.from), clock(s.to), dur(ms(s.to.Sub(s.from))))
		}
	}
	return ""
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// generation is one classic generation: the JoinGroups the coordinator
// answered with it, and the SyncGroups that gave its members their
// assignment.
type generation struct {
	id       int32
	joinDone time.Time             // the JoinGroup responses' end
	joins    map[string]groupEvent // member → its JoinGroup answered with this generation
	syncEnd  time.Time
	synced   int
}

func (g *group) classicRebalances(evs []groupEvent) []Rebalance {
	gens := map[int32]*generation{}
	var order []int32
	for _, e := range evs {
		switch {
		case e.kind == joinEvent && e.answered && e.errorCode == 0 && e.generation >= 0:
			gen := gens[e.generation]
			if gen == nil {
				gen = &generation{id: e.generation, joins: map[string]groupEvent{}}
				gens[e.generation] = gen
				order = append(order, e.generation)
			}
			gen.joins[e.member] = e
			gen.joinDone = later(gen.joinDone, e.end)
		case e.kind == syncEvent && e.answered && e.errorCode == 0:
			if gen := gens[e.generation]; gen != nil {
				gen.syncEnd = later(gen.syncEnd, e.end)
				gen.synced++
			}
		}
	}
	slices.Sort(order)
	var out []Rebalance
	var prev *generation
	prevEnd := time.Time{}
	for _, id := range order {
		gen := gens[id]
		rb := g.classicRebalance(evs, prev, prevEnd, gen)
		out = append(out, rb)
		prev, prevEnd = gen, later(gen.joinDone, gen.syncEnd)
	}
	return out
}

// classicRebalance works out the rebalance that ended in gen: its start
// is the earliest cause between the previous generation's end and gen's
// join.
func (g *group) classicRebalance(evs []groupEvent, prev *generation, prevEnd time.Time, gen *generation) Rebalance {
	rb := Rebalance{Group: g.id, Protocol: "classic", Generation: gen.id, Members: len(gen.joins), Trigger: "unknown",
		End: gen.syncEnd, Complete: gen.synced >= len(gen.joins) && !gen.syncEnd.IsZero()}
	if rb.End.IsZero() {
		rb.End = gen.joinDone
	}
	causes := g.classicCauses(evs, prev, prevEnd, gen)
	if len(causes) > 0 {
		c := slices.MinFunc(causes, func(a, b cause) int { return a.at.Compare(b.at) })
		rb.Start, rb.Trigger, rb.Member, rb.Client, rb.Detail = c.at, c.trigger, c.member, c.client, c.detail
	} else {
		rb.Start = gen.joinDone
	}
	rb.JoinMs = ms(gen.joinDone.Sub(rb.Start))
	if !gen.syncEnd.IsZero() {
		rb.SyncMs = ms(gen.syncEnd.Sub(gen.joinDone))
	}
	rb.TotalMs = ms(rb.End.Sub(rb.Start))
	// The member the coordinator waited for: the last to send the
	// JoinGroup it answered.
	for id, j := range gen.joins {
		at := later(g.joinStart(evs, id, j, rb.Start.Add(-time.Nanosecond)), rb.Start)
		if d := ms(at.Sub(rb.Start)); rb.Slowest == "" || d > rb.SlowestMs || (d == rb.SlowestMs && id < rb.Slowest) {
			rb.Slowest, rb.SlowestClient, rb.SlowestMs = id, j.client, d
		}
	}
	return rb
}

// joinStart is when a member started joining gen: its first JoinGroup
// after since that the coordinator did not answer MEMBER_ID_REQUIRED (a
// first join asks twice).
func (g *group) joinStart(evs []groupEvent, id string, answered groupEvent, since time.Time) time.Time {
	at := answered.arrival
	for _, e := range evs {
		if e.kind == joinEvent && e.member == id && e.errorCode != errMemberIDRequired && e.arrival.After(since) && e.arrival.Before(at) {
			at = e.arrival
		}
	}
	return at
}

// cause is one candidate start of a rebalance.
type cause struct {
	at                              time.Time
	trigger, member, client, detail string
}

// classicCauses lists what can have started the rebalance into gen. A
// member's JoinGroup counts from the one the coordinator did not answer
// MEMBER_ID_REQUIRED (that one only hands out an id: the member is added,
// and the rebalance prepared, when it asks again with it); a join that
// arrived while the previous rebalance was completing starts this one
// when that one ends.
func (g *group) classicCauses(evs []groupEvent, prev *generation, prevEnd time.Time, gen *generation) []cause {
	var out []cause
	in := func(t time.Time) bool { return t.After(prevEnd) && !t.After(gen.joinDone) }
	for id, j := range gen.joins {
		at := g.joinStart(evs, id, j, prevEnd)
		trigger, detail := "joined", "JoinGroup of a new member"
		if prev != nil && hasMember(prev, id) {
			if !in(at) || g.rejoinedAfterTimeout(id, at) != nil {
				continue
			}
			trigger, detail = "rejoined", "JoinGroup of a member of the last generation"
		}
		out = append(out, cause{later(at, prevEnd), trigger, id, j.client, detail})
	}
	var firstInProgress *groupEvent
	for i := range evs {
		e := &evs[i]
		if !in(e.arrival) {
			continue
		}
		switch {
		case e.kind == leaveEvent:
			out = append(out, cause{e.arrival, "left", e.member, e.client, "LeaveGroup"})
		case e.kind == heartbeatErrorEvent && e.errorCode == errRebalanceInProgress && firstInProgress == nil:
			firstInProgress = e
		}
	}
	if prev != nil {
		for id := range prev.joins {
			if c, ok := g.expired(id, prevEnd, gen.joinDone); ok {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 && firstInProgress != nil {
		out = append(out, cause{firstInProgress.arrival, "unknown", "", "",
			"the first sign: a heartbeat of " + firstInProgress.client + " answered REBALANCE_IN_PROGRESS"})
	}
	return out
}

func hasMember(gen *generation, id string) bool {
	_, ok := gen.joins[id]
	return ok
}

// rejoinedAfterTimeout is the silence after which a member rejoined, if
// it was removed for it (nil if it was not).
func (g *group) rejoinedAfterTimeout(id string, at time.Time) *silence {
	m := g.members[id]
	if m == nil || m.sessionTimeout == 0 {
		return nil
	}
	for i := range m.silences {
		s := &m.silences[i]
		if !s.to.After(at) && s.to.Sub(s.from) > m.sessionTimeout {
			return s
		}
	}
	return nil
}

// expired says whether member id was removed for missing its session
// timeout between from and to: its last request before to was more than
// the timeout before to, and the expiry falls after from.
func (g *group) expired(id string, from, to time.Time) (cause, bool) {
	m := g.members[id]
	if m == nil || m.sessionTimeout == 0 {
		return cause{}, false
	}
	// Its last request at or before to: the last of all, or the start of
	// a silence that spans to; otherwise it was heard from around to.
	last := m.lastHeartbeat
	if last.After(to) {
		i := slices.IndexFunc(m.silences, func(s silence) bool { return !s.from.After(to) && s.to.After(to) })
		if i < 0 {
			return cause{}, false
		}
		last = m.silences[i].from
	}
	expiry := last.Add(m.sessionTimeout)
	if !expiry.After(from) || expiry.After(to) {
		return cause{}, false
	}
	return cause{expiry, "timed out", id, m.client, fmt.Sprintf("its last group request at %s, session timeout %s",
		last.UTC().Format("15:04:05.000"), m.sessionTimeout)}, true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sortRebalances orders rebalances by start.
func sortRebalances(rs []Rebalance) {
	slices.SortStableFunc(rs, func(a, b Rebalance) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Group, b.Group)) })
}
