package consumers

import (
	"fmt"
	"time"
)

// consumerRebalances works out the rebalances of a KIP-848 group from its
// ConsumerGroupHeartbeats: each rise of the group epoch is one. It
// starts at the join or leave that caused it (a request with member
// epoch 0, or -1/-2), else at the first response giving the new epoch,
// and ends when every member heard from since reached that epoch.
func (g *group) consumerRebalances(evs []groupEvent) []Rebalance {
	var out []Rebalance
	var cur *Rebalance
	var reached map[string]time.Time // members of the current rebalance → when they reached its epoch
	epoch := int32(-1)
	var trigger *cause
	left := map[string]bool{}
	lastSeen := map[string]time.Time{}
	finish := func() {
		if cur == nil {
			return
		}
		cur.Members = len(reached)
		cur.Complete = true
		for id, at := range reached {
			if at.IsZero() {
				cur.Complete = false
				continue
			}
			cur.End = later(cur.End, at)
			if d := ms(at.Sub(cur.Start)); cur.Slowest == "" || d > cur.SlowestMs {
				cur.Slowest, cur.SlowestMs = id, d
				if m := g.members[id]; m != nil {
					cur.SlowestClient = m.client
				}
			}
		}
		cur.TotalMs = ms(cur.End.Sub(cur.Start))
		cur.JoinMs = cur.TotalMs
		out = append(out, *cur)
		cur = nil
	}
	for _, e := range evs {
		if e.kind != cghEvent {
			continue
		}
		switch {
		case e.reqEpoch == 0 && trigger == nil:
			trigger = &cause{e.arrival, "joined", e.member, e.client, "ConsumerGroupHeartbeat with member epoch 0"}
		case e.reqEpoch < 0:
			left[e.member] = true
			if trigger == nil {
				trigger = &cause{e.arrival, "left", e.member, e.client, fmt.Sprintf("ConsumerGroupHeartbeat with member epoch %d", e.reqEpoch)}
			}
		}
		lastSeen[e.member] = e.arrival
		if !e.answered || e.errorCode != 0 || e.generation < 0 {
			continue
		}
		if e.generation > epoch {
			finish()
			epoch = e.generation
			cur = &Rebalance{Group: g.id, Protocol: "consumer", Generation: epoch, Trigger: "unknown", Start: e.arrival,
				Detail: "the first response with the new group epoch"}
			if trigger != nil {
				cur.Start, cur.Trigger, cur.Member, cur.Client, cur.Detail = trigger.at, trigger.trigger, trigger.member, trigger.client, trigger.detail
			} else if c, ok := g.silentMember(lastSeen, left, e.arrival); ok {
				cur.Start, cur.Trigger, cur.Member, cur.Client, cur.Detail = c.at, c.trigger, c.member, c.client, c.detail
			}
			trigger = nil
			reached = map[string]time.Time{}
			for id, at := range lastSeen {
				if !left[id] && e.arrival.Sub(at) < 30*time.Second {
					reached[id] = time.Time{}
				}
			}
		}
		if cur != nil && e.generation >= epoch && !left[e.member] {
			if at, ok := reached[e.member]; !ok || at.IsZero() {
				reached[e.member] = e.end
			}
		}
	}
	finish()
	return out
}

// silentMember is a member not heard from for longer than its heartbeats
// usually allow, at the time the group epoch rose: the coordinator
// removed it (KIP-848's session timeout is the broker's
// group.consumer.session.timeout.ms, not on the wire).
func (g *group) silentMember(lastSeen map[string]time.Time, left map[string]bool, at time.Time) (cause, bool) {
	var best cause
	found := false
	for id, seen := range lastSeen {
		if left[id] || at.Sub(seen) < 10*time.Second {
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
