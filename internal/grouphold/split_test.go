package grouphold

import (
	"strconv"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// req is a group request of member in group: sent at sent after t0,
// read by the broker at once, answered took later.
func req(api int16, member string, gen int32, sent, took time.Duration, code int16) *event.Request {
	r := &event.Request{APIKey: api, Arrival: t0.Add(sent), End: t0.Add(sent + took), Answered: true,
		BrokerMs: ms(took), Client: "10.0.0.1:" + member, ClientID: member}
	r.Group.ID = "g"
	r.Group.MemberID = member
	switch api {
	case apiJoinGroup:
		r.GroupResult.Generation, r.GroupResult.MemberID = gen, member
		if code != 0 {
			r.GroupResult.Generation = -1
		}
	case apiSyncGroup:
		r.Group.Generation = gen
	}
	if code != 0 {
		r.ErrorCode = &code
	}
	return r
}

func withLeader(r *event.Request, leader string) *event.Request {
	r.GroupResult.Leader = leader
	return r
}

// TestSplit runs one group through a first generation (a new group: its
// join held for the initial delay), then a rebalance when b joins: b's
// JoinGroup waits 2 s for a to rejoin, b's SyncGroup 1 ms for a's, and
// storing the assignment takes the coordinator 1.5 s.
func TestSplit(t *testing.T) {
	s := time.Second
	msd := time.Millisecond
	gen1Join := withLeader(req(apiJoinGroup, "a", 1, 0, 3*s, 0), "a")
	gen1Sync := req(apiSyncGroup, "a", 1, 3*s+msd, 2*msd, 0)
	bJoin := withLeader(req(apiJoinGroup, "b", 2, 10*s, 2*s+3*msd, 0), "a")
	aJoin := withLeader(req(apiJoinGroup, "a", 2, 12*s, 3*msd, 0), "a")
	bSync := req(apiSyncGroup, "b", 2, 12*s+4*msd, 1501*msd, 0)
	aSync := req(apiSyncGroup, "a", 2, 12*s+5*msd, 1500*msd, 0)
	heartbeat := req(apiHeartbeat, "a", 2, 20*s, 40*msd, 0)
	inProgress := req(apiJoinGroup, "c", 0, 30*s, 100*msd, 27)
	idRequired := req(apiJoinGroup, "d", 0, 31*s, 2*msd, errMemberIDRequired)
	orphanSync := req(apiSyncGroup, "b", 9, 40*s, 50*msd, 0)
	offsetCommit := req(apiOffsetCommit, "a", 2, 41*s, 7*msd, 0)
	produce := &event.Request{APIKey: 0, Arrival: t0, End: t0.Add(msd), Answered: true, BrokerMs: 1}

	sp := New()
	for _, r := range []*event.Request{gen1Join, gen1Sync, bJoin, aJoin, bSync, aSync, heartbeat, inProgress, idRequired, orphanSync, offsetCommit, produce} {
		sp.Add(r)
	}
	for _, tc := range []struct {
		name      string
		r         *event.Request
		hold      Hold
		holdMs    float64
		ownMs     float64
		splitable bool
	}{
		{"a new group's first join is held throughout", gen1Join, HoldNewGroup, 3000, 0, true},
		{"the new group's leader sync is its own", gen1Sync, HoldNone, 0, 2, true},
		{"a join waits for the last member", bJoin, HoldMembers, 2000, 3, true},
		{"the last member's join is its own", aJoin, HoldNone, 0, 3, true},
		{"a follower's sync waits for the leader's", bSync, HoldLeader, 1, 1500, true},
		{"the leader's sync is the store", aSync, HoldNone, 0, 1500, true},
		{"a heartbeat is not held", heartbeat, HoldNone, 0, 40, true},
		{"a join answered with an error is held", inProgress, HoldUnknown, 100, 0, true},
		{"member id required is answered at once", idRequired, HoldNone, 0, 2, true},
		{"a sync of a generation not seen", orphanSync, HoldUnknown, 50, 0, true},
		{"an offset commit is not held", offsetCommit, HoldNone, 0, 7, true},
		{"a produce request is not the coordinator's", produce, HoldNone, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sp.Split(tc.r)
			if ok != tc.splitable {
				t.Fatalf("split ok = %v, want %v", ok, tc.splitable)
			}
			if !ok {
				return
			}
			if got.Hold != tc.hold || !near(got.HoldMs, tc.holdMs) || !near(got.OwnMs, tc.ownMs) || !near(got.TotalMs, got.HoldMs+got.OwnMs) {
				t.Errorf("got %+v, want hold %q %.1f ms, own %.1f ms", got, tc.hold, tc.holdMs, tc.ownMs)
			}
		})
	}
}

// TestLongest: the rebalance's longest own part is the store of its
// assignment, not b's 2 s wait for a; before the rebalance, the longest
// is the first generation's leader sync (its join was all held).
func TestLongest(t *testing.T) {
	sp := New()
	for _, r := range []*event.Request{
		withLeader(req(apiJoinGroup, "a", 1, 0, 3*time.Second, 0), "a"),
		req(apiSyncGroup, "a", 1, 3*time.Second, 2*time.Millisecond, 0),
		withLeader(req(apiJoinGroup, "b", 2, 10*time.Second, 2*time.Second+3*time.Millisecond, 0), "a"),
		withLeader(req(apiJoinGroup, "a", 2, 12*time.Second, 3*time.Millisecond, 0), "a"),
		req(apiSyncGroup, "a", 2, 12*time.Second+5*time.Millisecond, 1500*time.Millisecond, 0),
	} {
		sp.Add(r)
	}
	for _, tc := range []struct {
		from, to time.Duration
		api      int16
		ownMs    float64
		found    bool
	}{
		{10 * time.Second, 14 * time.Second, apiSyncGroup, 1500, true},
		{0, 5 * time.Second, apiSyncGroup, 2, true},
		{20 * time.Second, 30 * time.Second, 0, 0, false},
	} {
		ref, ok := sp.Longest("g", t0.Add(tc.from), t0.Add(tc.to))
		if ok != tc.found || ok && (ref.API != tc.api || !near(ref.Split.OwnMs, tc.ownMs)) {
			t.Errorf("%s..%s: got %+v %v, want API %d own %.0f ms", tc.from, tc.to, ref, ok, tc.api, tc.ownMs)
		}
	}
	if _, ok := sp.Longest("nope", t0, t0.Add(time.Hour)); ok {
		t.Error("a group never seen has a longest request")
	}
}

// TestNewGroupAgain: a group whose members all left and came back with
// new ids was empty in between: its next join waits the initial delay
// again.
func TestNewGroupAgain(t *testing.T) {
	sp := New()
	first := withLeader(req(apiJoinGroup, "a", 1, 0, 3*time.Second, 0), "a")
	again := withLeader(req(apiJoinGroup, "x", 2, 60*time.Second, 3*time.Second, 0), "x")
	sp.Add(first)
	sp.Add(again)
	if got, _ := sp.Split(again); got.Hold != HoldNewGroup || got.OwnMs != 0 {
		t.Errorf("got %+v, want held as a new group", got)
	}
}

// TestBounds: generations past MaxGenerations push the oldest out, and
// an older one than all kept is dropped, counted.
func TestBounds(t *testing.T) {
	sp := New()
	for g := int32(1); g <= MaxGenerations+10; g++ {
		sp.Add(withLeader(req(apiJoinGroup, "a", g, time.Duration(g)*time.Second, time.Millisecond, 0), "a"))
	}
	if n := len(sp.groups["g"].gens); n != MaxGenerations {
		t.Errorf("%d generations kept, want %d", n, MaxGenerations)
	}
	sp.Add(withLeader(req(apiJoinGroup, "a", 1, 0, time.Millisecond, 0), "a"))
	if sp.Dropped != 1 {
		t.Errorf("dropped %d, want 1", sp.Dropped)
	}
}

// TestOffsetsPartition checks Kafka's partitioning of groups against
// values Java computed (String.hashCode, Utils.abs, % 50 and % 7, with java
// running the same expression).
func TestOffsetsPartition(t *testing.T) {
	for _, tc := range []struct {
		group     string
		p50, p7   int32
		whyListed string
	}{
		{"my-group", 12, 1, "negative hash"},
		{"console-consumer-12345", 6, 6, "positive hash"},
		{"kscope-e2e", 40, 3, "negative hash"},
		{"", 0, 0, "empty"},
		{"grüße-😀", 27, 1, "non-ASCII and a surrogate pair"},
		{"polygenelubricants", 0, 0, "hash MinInt32: Utils.abs gives 0"},
	} {
		if got := OffsetsPartition(tc.group, 50); got != tc.p50 {
			t.Errorf("%q (%s): partition %d of 50, Java says %d", tc.group, tc.whyListed, got, tc.p50)
		}
		if got := OffsetsPartition(tc.group, 7); got != tc.p7 {
			t.Errorf("%q (%s): partition %d of 7, Java says %d", tc.group, tc.whyListed, got, tc.p7)
		}
	}
	if got := OffsetsPartition("g", 0); got != 0 {
		t.Errorf("0 partitions: %d", got)
	}
}

func near(a, b float64) bool { return a-b < 0.01 && b-a < 0.01 }

// TestBoundsTotal: many groups, each with many generations and requests,
// keep no more than the totals allow; what is left out is counted.
func TestBoundsTotal(t *testing.T) {
	sp := New()
	n := 0
	for g := range MaxGroups + 10 {
		for gen := int32(1); gen <= 80; gen++ {
			r := withLeader(req(apiJoinGroup, "a", gen, time.Duration(gen)*time.Second, time.Millisecond, 0), "a")
			r.Group.ID = "g" + strconv.Itoa(g)
			sp.Add(r)
			n++
		}
	}
	recent, joins := 0, 0
	for _, g := range sp.groups {
		recent += len(g.recent)
		for _, gen := range g.gens {
			joins += len(gen.joins)
		}
	}
	if len(sp.groups) > MaxGroups || joins > MaxJoinsTotal || joins != sp.joins || recent > MaxRecentTotal+MinRecent*MaxGroups {
		t.Errorf("kept %d groups, %d joins (counted %d), %d recent requests", len(sp.groups), joins, sp.joins, recent)
	}
	if sp.Dropped == 0 {
		t.Errorf("%d requests, none counted as dropped", n)
	}
}
