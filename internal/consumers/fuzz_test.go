package consumers

import (
	"io"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/reqlines"
)

// FuzzAggregate feeds any requests (JSON Lines, as a recording holds
// them) through an aggregator with small bounds, builds its report and
// writes it in every format: no panic, the bounds hold, lags are never
// negative.
func FuzzAggregate(f *testing.F) {
	f.Add(reqlines.Of(join("10.0.0.1:1", "m1", "g", 1, 0, time.Second), syncGroup("10.0.0.1:1", "m1", "g", 1, time.Second, time.Millisecond),
		heartbeat("10.0.0.1:1", "m1", "g", 1, 20*time.Second, errRebalanceInProgress),
		fetch("10.0.0.1:1", "m1-client", time.Second, "t", 0, 5, 9, 100, t0), fetch("10.0.0.2:1", "x", 0, "t", 0, 50, 10, 5, t0)))
	// A KIP-848 group: a join, a member gone silent and fenced, a leave.
	cgh := func(client, member string, reqEpoch, respEpoch int32, when time.Duration) *event.Request {
		r := groupReq(apiCGHeartbeat, client, member+"-client", "k", member, reqEpoch, when, 5*time.Millisecond, 0)
		r.GroupResult = event.GroupResult{Generation: respEpoch, MemberID: member}
		return r
	}
	f.Add(reqlines.Of(cgh("10.0.0.1:1", "a", 0, 1, 0), cgh("10.0.0.2:1", "b", 0, 2, time.Second), cgh("10.0.0.1:1", "a", 1, 2, 2*time.Second),
		cgh("10.0.0.1:1", "a", 2, 2, 13*time.Second), cgh("10.0.0.1:1", "a", 2, 3, 14*time.Second), cgh("10.0.0.1:1", "a", -1, -1, 15*time.Second)))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := New(Options{MaxPartitions: 4, MaxGroups: 2})
		reqlines.Each(data, func(r *event.Request) {
			a.Add(r)
		})
		// A produce request that arrived when a held delivery came must
		// not pass over it, whatever the order of the deliveries.
		for tp, p := range a.e2e.parts.All() {
			for i, d := range p.delivered.items() {
				if since := p.deliveredSince(d.at); since > i || d.latest < d.at {
					t.Fatalf("%v: delivery %d at %v passed over (from %d)", tp, i, d.at, since)
				}
			}
		}
		a.prune(t0.Add(-time.Hour))
		rep := a.Report()
		if len(a.partitions) > 4 || len(a.groups) > 2 {
			t.Fatalf("%d partitions, %d groups: past the bounds", len(a.partitions), len(a.groups))
		}
		for _, c := range rep.Consumers {
			for _, p := range c.Partitions {
				if p.LagMessages < 0 || p.LagMs < 0 || p.BehindSec < 0 {
					t.Fatalf("negative lag %+v", p)
				}
			}
		}
		if len(a.fetchTimes) > 2*10 {
			t.Fatalf("%d fetch clients: past the bound", len(a.fetchTimes))
		}
		for _, fl := range rep.FetchLatency {
			if fl.AbnormalP99Ms < 0 || fl.P99Ms < 0 || fl.PurgatoryShare < 0 || fl.PurgatoryShare > 1 || len(fl.Clients) == 0 {
				t.Fatalf("fetch latency %+v", fl)
			}
		}
		for _, format := range Formats() {
			if err := Write(io.Discard, rep, format, 3); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
