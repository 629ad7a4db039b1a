package consumers

import (
	"slices"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Live is the consumers view of a live stream (the agent's): one
// aggregator for the agent's life, from which what is older than the
// window is pruned when the view is read (partitions no consumer fetched
// within it, group events before it), so that it says what the consumers
// do now and its memory stays bounded.
type Live struct {
	mu     sync.Mutex
	agg    *Aggregator
	window time.Duration
}

// DefaultWindow is Live's window: a consumer silent this long is gone,
// and its rebalances are history.
const DefaultWindow = 10 * time.Minute

// NewLive returns an empty Live view (window 0: DefaultWindow).
func NewLive(o Options, window time.Duration) *Live {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Live{agg: New(o), window: window}
}

// Add counts one request.
func (l *Live) Add(r *event.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.agg.Add(r)
}

// Report is the view as of now, without what is older than the window.
func (l *Live) Report(now time.Time) *Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.agg.prune(now.Add(-l.window))
	return l.agg.Report()
}

// prune forgets the partitions not fetched since before, and the group
// events that arrived before it (with the silences of members then).
func (a *Aggregator) prune(before time.Time) {
	for k, p := range a.partitions {
		if p.lastFetch.Before(before) {
			delete(a.partitions, k)
		}
	}
	for k, ft := range a.fetchTimes {
		if ft.last.Before(before) {
			delete(a.fetchTimes, k)
			continue
		}
		ft.stalls = slices.DeleteFunc(ft.stalls, func(s silence) bool { return s.to.Before(before) })
	}
	for id, g := range a.groups {
		g.events = slices.DeleteFunc(g.events, func(e groupEvent) bool { return e.arrival.Before(before) })
		for mid, m := range g.members {
			if m.lastHeartbeat.Before(before) {
				delete(g.members, mid)
				continue
			}
			m.silences = slices.DeleteFunc(m.silences, func(s silence) bool { return s.to.Before(before) })
		}
		if len(g.events) == 0 && len(g.members) == 0 {
			delete(a.groups, id)
		}
	}
	if a.first.Before(before) {
		a.first = before
	}
}
