package consumers

import (
	"fmt"
	"time"
)

// kip848State is what consumerRebalances follows through a KIP-848
// group's heartbeats.
type kip848State struct {
	g              *group
	sessionTimeout time.Duration
	out            []Rebalance
	cur            *Rebalance
	// reached maps the members of the current rebalance to when they
	// reached its epoch (zero: not yet).
	reached map[string]time.Time
	epoch   int32
	// lastOld is the arrival of the last heartbeat answered with the
	// current epoch: a newer epoch was bumped after it.
	lastOld  time.Time
	trigger  *cause
	gone     map[string]bool // left, or fenced: not waited for
	lastSeen map[string]time.Time
}

// consumerRebalances works out the rebalances of a KIP-848 group from its
// ConsumerGroupHeartbeats: each rise of the group epoch is one. It
// starts at the join or leave that caused it (a request with member
// epoch 0, or -1/-2), else at the expiry of a member gone silent (its
// last heartbeat plus sessionTimeout, the broker's), else at the first
// response giving the new epoch; the coordinator answers with the new
// epoch (JoinMs), and the rebalance ends when every member heard from
// since reached it (SyncMs).
func (g *group) consumerRebalances(evs []groupEvent, sessionTimeout time.Duration) []Rebalance {
	s := &kip848State{g: g, sessionTimeout: sessionTimeout, epoch: -1, gone: map[string]bool{}, lastSeen: map[string]time.Time{}}
	for _, e := range evs {
		if e.kind == cghEvent {
			s.add(e)
		}
	}
	s.finish(false)
	return s.out
}

func (s *kip848State) add(e groupEvent) {
	switch {
	case e.reqEpoch == 0:
		delete(s.gone, e.member) // a member fenced earlier may join again with its id
		if s.trigger == nil {
			s.trigger = &cause{e.arrival, "joined", e.member, e.client, "ConsumerGroupHeartbeat with member epoch 0"}
		}
	case e.reqEpoch < 0:
		s.gone[e.member] = true
		if s.trigger == nil {
			s.trigger = &cause{e.arrival, "left", e.member, e.client, fmt.Sprintf("ConsumerGroupHeartbeat with member epoch %d", e.reqEpoch)}
		}
	}
	s.lastSeen[e.member] = e.arrival
	if !e.answered || e.errorCode != 0 || e.generation < 0 {
		return
	}
	if e.generation > s.epoch {
		s.begin(e)
	} else if e.generation == s.epoch {
		s.lastOld = e.arrival
	}
	if s.cur != nil && e.generation >= s.epoch && !s.gone[e.member] {
		if at, ok := s.reached[e.member]; !ok || at.IsZero() {
			s.reached[e.member] = e.end
		}
	}
}

// begin starts the rebalance into e's epoch, the first answer with it.
func (s *kip848State) begin(e groupEvent) {
	s.finish(s.cur != nil)
	s.epoch = e.generation
	rb := &Rebalance{Group: s.g.id, Protocol: "consumer", Generation: s.epoch, Trigger: "unknown", Start: e.arrival,
		Detail: "the first response with the new group epoch"}
	c, ok := cause{}, false
	if s.trigger != nil {
		c, ok = *s.trigger, true
	} else if c, ok = s.g.silentMember(s.lastSeen, s.gone, e.arrival, min(10*time.Second, s.sessionTimeout)); ok {
		c = s.fencedAt(c, e.arrival)
		s.gone[c.member] = true
	}
	if ok {
		rb.Start, rb.Trigger, rb.Member, rb.Client, rb.Detail = c.at, c.trigger, c.member, c.client, c.detail
	}
	rb.JoinMs = max(0, ms(e.end.Sub(rb.Start)))
	s.cur, s.trigger, s.lastOld = rb, nil, time.Time{}
	s.reached = map[string]time.Time{}
	for id, at := range s.lastSeen {
		if !s.gone[id] && e.arrival.Sub(at) < 30*time.Second {
			s.reached[id] = time.Time{}
		}
	}
}

// fencedAt dates a silent member's removal: its last heartbeat plus the
// session timeout, when that falls between the last answer with the old
// epoch and the first with the new one (the coordinator bumped the epoch
// then). A coordinator that got to the expiry late (its timer fires on
// its event loop, behind other work) answered with the old epoch after
// the expiry: the removal is then dated at that answer, the earliest it
// can have been. An expiry after the first answer with the new epoch
// means the session timeout is not the one configured.
func (s *kip848State) fencedAt(c cause, firstNew time.Time) cause {
	last := c.at
	expiry := last.Add(s.sessionTimeout)
	from := later(last, s.lastOld)
	clock := func(t time.Time) string { return t.UTC().Format("15:04:05.000") }
	switch {
	case expiry.After(from) && !expiry.After(firstNew):
		c.at = expiry
		c.detail = fmt.Sprintf("no heartbeat since %s, session timeout %s", clock(last), s.sessionTimeout)
	case !expiry.After(from):
		c.at = from
		c.detail = fmt.Sprintf("no heartbeat since %s, session timeout %s: expired at %s, removed only after %s (the coordinator answered with the old epoch until then)",
			clock(last), s.sessionTimeout, clock(expiry), clock(from))
	default:
		c.at = from
		c.detail = fmt.Sprintf("no heartbeat since %s; removed between %s and %s (not after a session timeout of %s: set --group-session-timeout to the brokers' group.consumer.session.timeout.ms)",
			clock(last), clock(from), clock(firstNew), s.sessionTimeout)
	}
	return c
}

// finish closes the current rebalance: superseded when a newer epoch
// began before every member reached this one.
func (s *kip848State) finish(superseded bool) {
	cur := s.cur
	if cur == nil {
		return
	}
	cur.Members = len(s.reached)
	cur.Complete = true
	cur.End = cur.Start.Add(time.Duration(cur.JoinMs * float64(time.Millisecond)))
	for id, at := range s.reached {
		if at.IsZero() {
			cur.Complete = false
			continue
		}
		cur.End = later(cur.End, at)
		if d := ms(at.Sub(cur.Start)); cur.Slowest == "" || d > cur.SlowestMs {
			cur.Slowest, cur.SlowestMs = id, d
			if m := s.g.members[id]; m != nil {
				cur.SlowestClient = m.client
			}
		}
	}
	cur.Superseded = superseded && !cur.Complete
	cur.TotalMs = ms(cur.End.Sub(cur.Start))
	cur.SyncMs = max(0, cur.TotalMs-cur.JoinMs)
	s.out = append(s.out, *cur)
	s.cur = nil
}

// silentMember is a member not heard from for silence or longer (longer
// than its heartbeats allow), at the time the group epoch rose: the
// coordinator removed it.
func (g *group) silentMember(lastSeen map[string]time.Time, gone map[string]bool, at time.Time, silence time.Duration) (cause, bool) {
	var best cause
	found := false
	for id, seen := range lastSeen {
		if gone[id] || at.Sub(seen) < silence {
			continue
		}
		if !found || seen.Before(best.at) {
			client := ""
			if m := g.members[id]; m != nil {
				client = m.client
			}
			best = cause{seen, "timed out", id, client, fmt.Sprintf("no heartbeat since %s", seen.UTC().Format("15:04:05.000"))}
			found = true
		}
	}
	return best, found
}
