package consumers

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

var t0 = time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func i64(v int64) *int64 { return &v }

// fetch is a consumer fetch of one partition answered after 5 ms: from
// offset off, the response returned up to last (none when last < off)
// with the high watermark hwm, its data timestamped ts.
func fetch(client, clientID string, when time.Duration, topic string, part int32, off, last, hwm int64, ts time.Time) *event.Request {
	r := &event.Request{Arrival: at(when), End: at(when + 5*time.Millisecond), Client: client, Broker: "10.0.0.1:9092", APIKey: apiFetch,
		APIVersion: 12, ClientID: clientID, Answered: true, ReplicaID: new(int32)}
	*r.ReplicaID = -1
	p := event.Partition{Topic: topic, Partition: part, FetchOffset: i64(off), HighWatermark: i64(hwm)}
	if last >= off {
		p.FirstOffset, p.LastOffset, p.Bytes = i64(off), i64(last), int(100*(last-off+1))
		p.FirstTimestamp, p.MaxTimestamp = i64(ts.UnixMilli()), i64(ts.UnixMilli())
	}
	r.Partitions = []event.Partition{p}
	return r
}

func groupReq(key int16, client, clientID, groupID, member string, gen int32, when, took time.Duration, code int16) *event.Request {
	r := &event.Request{Arrival: at(when), End: at(when + took), Client: client, Broker: "10.0.0.1:9092", APIKey: key, ClientID: clientID,
		Answered: true, Group: event.Group{ID: groupID, MemberID: member, Generation: gen, SessionTimeoutMs: 10_000}}
	r.ErrorCode = &code
	return r
}

func join(client, member, groupID string, gen int32, when, took time.Duration) *event.Request {
	r := groupReq(apiJoinGroup, client, member+"-client", groupID, member, -1, when, took, 0)
	r.GroupResult = event.GroupResult{Generation: gen, MemberID: member}
	return r
}

func syncGroup(client, member, groupID string, gen int32, when, took time.Duration) *event.Request {
	return groupReq(apiSyncGroup, client, member+"-client", groupID, member, gen, when, took, 0)
}

func heartbeat(client, member, groupID string, gen int32, when time.Duration, code int16) *event.Request {
	return groupReq(apiHeartbeat, client, member+"-client", groupID, member, gen, when, time.Millisecond, code)
}

func TestLag(t *testing.T) {
	a := New(Options{})
	a.Add(heartbeat("10.0.0.5:1", "m1", "slow", 1, 0, 0))
	// The producer writes 100 messages a second, timestamped as written;
	// the consumer reads 50 a second: it falls behind by 50 a second.
	for s := range 150 {
		when := time.Duration(s) * time.Second
		off := int64(s * 50)
		a.Add(fetch("10.0.0.5:1", "m1-client", when, "orders", 0, off, off+49, int64(s*100+100), at(time.Duration(off)*10*time.Millisecond)))
		// A group-less reader that keeps up.
		a.Add(fetch("10.0.0.6:2", "etl", when, "orders", 1, int64(s*10), int64(s*10+9), int64(s*10+10), at(when)))
	}
	commit := groupReq(apiOffsetCommit, "10.0.0.5:1", "m1-client", "slow", "m1", 1, 149*time.Second, time.Millisecond, 0)
	commit.Partitions = []event.Partition{{Topic: "orders", Partition: 0, CommittedOffset: i64(7400)}}
	a.Add(commit)
	rep := a.Report()
	if len(rep.Consumers) != 2 {
		t.Fatalf("consumers %+v", rep.Consumers)
	}
	slow := rep.Consumers[0]
	p := slow.Partitions[0]
	// At 149 s it fetched from 7450 and got up to 7499: its position is
	// 7500, the high watermark 15000; the data at 7450 was written at
	// 74.5 s and returned at 149.005 s.
	if slow.Group != "slow" || p.Position != 7500 || p.HighWatermark != 15000 || p.LagMessages != 7500 {
		t.Errorf("slow: %+v", slow)
	}
	if p.LagMs != 74_505 || p.Committed != 7400 || p.CommitGap != 100 || slow.NeverCommits {
		t.Errorf("slow partition: lag %v ms, committed %d gap %d", p.LagMs, p.Committed, p.CommitGap)
	}
	if p.BehindSec < 148 || p.BehindSec > 150 {
		t.Errorf("behind for %v s", p.BehindSec)
	}
	etl := rep.Consumers[1]
	if etl.Group != "" || etl.LagMessages != 0 || etl.MaxLagMs != 0 || !etl.NeverCommits {
		t.Errorf("etl: %+v", etl)
	}
	rules := map[string]int{}
	for _, f := range rep.Findings {
		rules[f.Rule+"/"+f.Severity]++
	}
	if rules["lag/warning"] != 1 || rules["never-commits/note"] != 1 || len(rep.Findings) != 2 {
		t.Errorf("findings %+v", rep.Findings)
	}
}

// TestClassicRebalances: a member stopped past its session timeout, one
// that leaves, one that joins; and a control group that only heartbeats.
func TestClassicRebalances(t *testing.T) {
	a := New(Options{})
	ms := time.Millisecond
	// Generation 1: m1 and m2.
	a.Add(join("10.0.0.1:1", "m1", "g", 1, 0, 3000*ms))
	a.Add(join("10.0.0.2:1", "m2", "g", 1, 500*ms, 2500*ms))
	a.Add(syncGroup("10.0.0.1:1", "m1", "g", 1, 3010*ms, 20*ms))
	a.Add(syncGroup("10.0.0.2:1", "m2", "g", 1, 3010*ms, 20*ms))
	// Both heartbeat every 3 s; m2 stops after 9 s (SIGSTOP).
	for s := 4; s < 40; s += 3 {
		a.Add(heartbeat("10.0.0.1:1", "m1", "g", 1, time.Duration(s)*time.Second, 0))
		if s <= 10 {
			a.Add(heartbeat("10.0.0.2:1", "m2", "g", 1, time.Duration(s)*time.Second, 0))
		}
	}
	// m2's last heartbeat at 10 s, session 10 s: removed at 20 s; m1
	// learns it at 22 s and rejoins: generation 2 at 22.1 s.
	a.Add(heartbeat("10.0.0.1:1", "m1", "g", 1, 22*time.Second, errRebalanceInProgress))
	a.Add(join("10.0.0.1:1", "m1", "g", 2, 22*time.Second+10*ms, 100*ms))
	a.Add(syncGroup("10.0.0.1:1", "m1", "g", 2, 22*time.Second+120*ms, 30*ms))
	// m1 leaves at 50 s.
	a.Add(groupReq(apiLeaveGroup, "10.0.0.1:1", "m1-client", "g", "m1", -1, 50*time.Second, ms, 0))
	// A control group.
	for s := range 20 {
		a.Add(heartbeat("10.0.0.9:1", "c1", "calm", 5, time.Duration(s)*3*time.Second, 0))
	}
	rep := a.Report()
	var got []string
	for _, rb := range rep.Rebalances {
		got = append(got, fmt.Sprintf("%s gen %d %s %s at %s join %.0f sync %.0f slowest %s", rb.Group, rb.Generation, rb.Trigger, rb.Member,
			rb.Start.Sub(t0), rb.JoinMs, rb.SyncMs, rb.Slowest))
	}
	want := []string{
		"g gen 1 joined m1 at 0s join 3000 sync 30 slowest m2",
		"g gen 2 timed out m2 at 20s join 2110 sync 40 slowest m1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rebalances\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rb := rep.Rebalances[1]; !strings.Contains(rb.Detail, "07:00:10.000, session timeout 10s") {
		t.Errorf("detail %q", rb.Detail)
	}
}

func TestKIP848Rebalance(t *testing.T) {
	a := New(Options{})
	cgh := func(client, member string, reqEpoch, respEpoch int32, when time.Duration) *event.Request {
		r := groupReq(apiCGHeartbeat, client, member+"-client", "k", member, reqEpoch, when, 5*time.Millisecond, 0)
		r.GroupResult = event.GroupResult{Generation: respEpoch, MemberID: member}
		return r
	}
	a.Add(cgh("10.0.0.1:1", "a", 5, 5, 0))
	a.Add(cgh("10.0.0.2:1", "b", 0, 6, 1*time.Second)) // b joins: epoch 6
	a.Add(cgh("10.0.0.1:1", "a", 5, 6, 2*time.Second)) // a reaches 6
	a.Add(cgh("10.0.0.2:1", "b", 6, 6, 3*time.Second))
	rep := a.Report()
	if len(rep.Rebalances) != 2 {
		t.Fatalf("rebalances %+v", rep.Rebalances)
	}
	rb := rep.Rebalances[1]
	if rb.Protocol != "consumer" || rb.Generation != 6 || rb.Trigger != "joined" || rb.Member != "b" || !rb.Complete ||
		rb.Slowest != "a" || rb.TotalMs < 1004 || rb.TotalMs > 1006 {
		t.Errorf("%+v", rb)
	}
	// KIP-848 holds no heartbeat: the coordinator's own time is the
	// longest answer during the rebalance.
	if rb.CoordinatorMs != 5 || rb.CoordinatorRequest == nil || rb.CoordinatorRequest.API != apiCGHeartbeat {
		t.Errorf("coordinator %.1f ms in %+v, want 5 ms in a heartbeat", rb.CoordinatorMs, rb.CoordinatorRequest)
	}
}

// TestKIP848SlowCoordinator: a heartbeat answered after 1.2 s during a
// rebalance is the coordinator's own time; the same heartbeat outside
// any rebalance is no rebalance's.
func TestKIP848SlowCoordinator(t *testing.T) {
	cgh := func(client, member string, reqEpoch, respEpoch int32, when, took time.Duration) *event.Request {
		r := groupReq(apiCGHeartbeat, client, member+"-client", "k", member, reqEpoch, when, took, 0)
		r.GroupResult = event.GroupResult{Generation: respEpoch, MemberID: member}
		return r
	}
	ms := time.Millisecond
	a := New(Options{})
	a.Add(cgh("10.0.0.1:1", "a", 5, 5, 0, 5*ms))
	a.Add(cgh("10.0.0.1:1", "a", 5, 5, 500*ms, 1500*ms)) // slow, before any rebalance
	a.Add(cgh("10.0.0.2:1", "b", 0, 6, 10*time.Second, 5*ms))
	a.Add(cgh("10.0.0.1:1", "a", 5, 6, 11*time.Second, 1200*ms)) // slow, in it
	a.Add(cgh("10.0.0.2:1", "b", 6, 6, 13*time.Second, 5*ms))
	rep := a.Report()
	if len(rep.Rebalances) != 2 {
		t.Fatalf("rebalances %+v", rep.Rebalances)
	}
	if rb := rep.Rebalances[1]; math.Abs(rb.CoordinatorMs-1200) > 0.01 {
		t.Errorf("coordinator %.1f ms in %+v, want 1200 ms", rb.CoordinatorMs, rb.CoordinatorRequest)
	}
}

func TestEndToEnd(t *testing.T) {
	a := New(Options{})
	produce := func(when, took time.Duration, base int64, n int) *event.Request {
		return &event.Request{Arrival: at(when), End: at(when + took), APIKey: apiProduce, Answered: true, Client: "10.0.0.3:3",
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: n, BaseOffset: i64(base)}}}
	}
	// In order: produced at 0 (offsets 0-9), fetched at 20 ms.
	a.Add(produce(0, 2*time.Millisecond, 0, 10))
	a.Add(fetch("10.0.0.5:1", "c", 15*time.Millisecond, "t", 0, 0, 9, 10, t0))
	// Out of order: the fetch response (offsets 10-19) ends before the
	// produce response does.
	a.Add(fetch("10.0.0.5:1", "c", 100*time.Millisecond, "t", 0, 10, 19, 20, t0))
	a.Add(produce(90*time.Millisecond, 30*time.Millisecond, 10, 10))
	rep := a.Report()
	if len(rep.EndToEnd) != 1 {
		t.Fatalf("%+v", rep.EndToEnd)
	}
	e := rep.EndToEnd[0]
	if e.Messages != 20 || e.P50Ms < 14.9 || e.P50Ms > 15.1 || e.MaxMs < 19.9 || e.MaxMs > 20.1 {
		t.Errorf("%+v", e)
	}
}

// A KIP-848 member that stops heartbeating is fenced by the coordinator
// its session timeout (the broker's group.consumer.session.timeout.ms)
// after its last heartbeat, which bumps the group epoch: the rebalance
// starts at that expiry (not at the last heartbeat), the fenced member is
// not one the others wait for, its phases are the coordinator's answer
// with the new epoch and the members' reconciliation, and an epoch that
// a newer one replaces before every member reached it is superseded, not
// cut off by the capture's end. The member's rejoin (epoch 0, same id) is
// a join, and it counts again.
func TestKIP848Fenced(t *testing.T) {
	cgh := func(client, member string, reqEpoch, respEpoch int32, when time.Duration) *event.Request {
		r := groupReq(apiCGHeartbeat, client, member+"-client", "k", member, reqEpoch, when, 5*time.Millisecond, 0)
		r.GroupResult = event.GroupResult{Generation: respEpoch, MemberID: member}
		return r
	}
	var reqs []*event.Request
	// a and b at epoch 3, heartbeating every second; c joins at 0.5 s
	// (epoch 4) and is superseded by nothing: it reaches 4 at 1.5 s. b
	// goes silent after 2.7 s; fenced at 12.7 s (10 s session timeout):
	// a's heartbeat at 13.3 s gets epoch 5, c's at 13.5 s.
	for s := 0; s <= 20; s++ {
		at := time.Duration(s) * time.Second
		epoch := int32(3)
		switch {
		case s >= 13:
			epoch = 5
		case s >= 1:
			epoch = 4
		}
		a := cgh("10.0.0.1:1", "a", epoch, epoch, at+300*time.Millisecond)
		if s == 13 {
			a = cgh("10.0.0.1:1", "a", 4, 5, at+300*time.Millisecond)
		}
		reqs = append(reqs, a)
		if s <= 2 {
			reqs = append(reqs, cgh("10.0.0.2:1", "b", min(epoch, 4), min(epoch, 4), at+700*time.Millisecond))
		}
	}
	reqs = append(reqs, cgh("10.0.0.3:1", "c", 0, 4, 500*time.Millisecond))
	for s := 1; s <= 20; s++ {
		e := int32(4)
		if s >= 13 {
			e = 5
		}
		reqs = append(reqs, cgh("10.0.0.3:1", "c", e, e, time.Duration(s)*time.Second+500*time.Millisecond))
	}
	// The coordinator got to b's expiry late: c's heartbeat at 12.8 s,
	// after it, was still answered with epoch 4.
	late := cgh("10.0.0.3:1", "c", 4, 4, 12*time.Second+800*time.Millisecond)
	tests := []struct {
		name       string
		extra      []*event.Request
		wantStart  time.Duration
		wantDetail string
		wantJoinMs float64
	}{
		{"fenced at the expiry", nil, 12*time.Second + 700*time.Millisecond, "no heartbeat since 07:00:02.700, session timeout 10s", 605},
		{"the coordinator late", []*event.Request{late}, 12*time.Second + 800*time.Millisecond,
			"session timeout 10s: expired at 07:00:12.700, removed only after 07:00:12.800", 505},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(Options{GroupSessionTimeout: 10 * time.Second})
			for _, r := range append(slices.Clone(reqs), tt.extra...) {
				a.Add(r)
			}
			checkFenced(t, a.Report(), at(tt.wantStart), tt.wantDetail, tt.wantJoinMs)
		})
	}
}

func checkFenced(t *testing.T, rep *Report, wantStart time.Time, wantDetail string, wantJoinMs float64) {
	t.Helper()
	var fenced *Rebalance
	for i := range rep.Rebalances {
		if rep.Rebalances[i].Generation == 5 {
			fenced = &rep.Rebalances[i]
		}
	}
	if fenced == nil {
		t.Fatalf("no rebalance into epoch 5: %+v", rep.Rebalances)
	}
	if fenced.Trigger != "timed out" || fenced.Member != "b" || !fenced.Start.Equal(wantStart) {
		t.Errorf("trigger %q by %q at %s, want timed out by b at %s", fenced.Trigger, fenced.Member, fenced.Start.Format("15:04:05.000"), wantStart.Format("15:04:05.000"))
	}
	if !fenced.Complete || fenced.Members != 2 || fenced.Slowest != "c" {
		t.Errorf("complete %v, %d members, slowest %q: the fenced member b is not waited for", fenced.Complete, fenced.Members, fenced.Slowest)
	}
	// Answered with epoch 5 at 13.305 s (a), c reached it at 13.505 s.
	if math.Abs(fenced.JoinMs-wantJoinMs) > 1 || math.Abs(fenced.SyncMs-200) > 1 {
		t.Errorf("join %.0f ms, sync %.0f ms; want %.0f and 200", fenced.JoinMs, fenced.SyncMs, wantJoinMs)
	}
	if !strings.Contains(fenced.Detail, wantDetail) {
		t.Errorf("detail %q, want %q", fenced.Detail, wantDetail)
	}
}

// Why the slowest member was slow, from the wire: a member that sent no
// group request for seconds while the others waited for it (stopped,
// paused in GC, or its poll loop stalled) is named silent, with when; a
// member that answered at its usual pace gets no such claim.
func TestSlowestMemberSilent(t *testing.T) {
	cgh := func(client, member string, reqEpoch, respEpoch int32, when time.Duration) *event.Request {
		r := groupReq(apiCGHeartbeat, client, member+"-client", "k", member, reqEpoch, when, 5*time.Millisecond, 0)
		r.GroupResult = event.GroupResult{Generation: respEpoch, MemberID: member}
		return r
	}
	atPace := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second, 7 * time.Second}
	// every fetches of b's client every 300 ms from 0 to its end, 500 ms
	// of purgatory asked for.
	every := func(end time.Duration) (out []time.Duration) {
		for d := time.Duration(0); d < end; d += 300 * time.Millisecond {
			out = append(out, d)
		}
		return out
	}
	tests := []struct {
		name    string
		bBeats  []time.Duration // b's heartbeats before it reaches epoch 2 at 8 s
		bFetchs []time.Duration // b's fetches
		want    string
	}{
		{"silent member", []time.Duration{500 * time.Millisecond}, nil, "no group request from it from 07:00:00.500 to 07:00:08.000 (7.5 s)"},
		{"member at its pace", atPace, nil, ""},
		{"member at its pace, fetching at its pace", atPace, every(9 * time.Second), ""},
		{"heartbeats at pace, fetches stopped", atPace, append(every(1500*time.Millisecond), 8*time.Second),
			"its fetches stopped from 07:00:01.205 to 07:00:08.000 (6.8 s) while its heartbeats went on"},
		{"fetches stopped after the rebalance only", atPace, append(every(8500*time.Millisecond), 12*time.Second), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(Options{})
			a.Add(cgh("10.0.0.1:1", "a", 0, 1, 0))
			a.Add(cgh("10.0.0.2:1", "b", 0, 1, 100*time.Millisecond))
			for _, at := range tt.bBeats {
				a.Add(cgh("10.0.0.2:1", "b", 1, 1, at))
			}
			for i, at := range tt.bFetchs {
				f := fetch("10.0.0.2:2", "b-client", at, "t", 0, int64(i), int64(i), int64(i+1), t0)
				f.Fetch.MaxWaitMs, f.Fetch.MinBytes = 500, 1
				a.Add(f)
			}
			a.Add(cgh("10.0.0.3:1", "c", 0, 2, time.Second)) // c joins: epoch 2
			for s := 2; s <= 9; s++ {
				a.Add(cgh("10.0.0.1:1", "a", 2, 2, time.Duration(s)*time.Second))
				a.Add(cgh("10.0.0.3:1", "c", 2, 2, time.Duration(s)*time.Second))
			}
			a.Add(cgh("10.0.0.2:1", "b", 1, 2, 8*time.Second))
			var rb *Rebalance
			for i := range a.Report().Rebalances {
				if r := a.Report().Rebalances[i]; r.Generation == 2 {
					rb = &r
				}
			}
			if rb == nil || rb.Slowest != "b" {
				t.Fatalf("rebalance into 2: %+v", rb)
			}
			if tt.want == "" && rb.SlowestWhy != "" || !strings.Contains(rb.SlowestWhy, tt.want) {
				t.Errorf("why %q, want %q", rb.SlowestWhy, tt.want)
			}
		})
	}
}

// TestCoordinatorOwnTime: m3 joins a group of m1 (the leader) and m2;
// storing the new assignment takes the coordinator 1.5 s, in which every
// member waits for its SyncGroup. The rebalance names the coordinator's
// own time and is an alarm; in the control run the store takes 5 ms and
// the coordinator is not named.
func TestCoordinatorOwnTime(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		store     time.Duration
		wantOwnMs float64
		named     bool
		severity  string
	}{
		{"slow store", 1500 * ms, 1500, true, Alarm},
		{"control", 5 * ms, 5, false, Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Options{})
			leader := func(r *event.Request) *event.Request { r.GroupResult.Leader = "m1"; return r }
			a.Add(leader(join("10.0.0.1:1", "m1", "g", 1, 0, 3000*ms)))
			a.Add(leader(join("10.0.0.2:1", "m2", "g", 1, 100*ms, 2900*ms)))
			a.Add(syncGroup("10.0.0.1:1", "m1", "g", 1, 3010*ms, 5*ms))
			a.Add(syncGroup("10.0.0.2:1", "m2", "g", 1, 3005*ms, 10*ms))
			// m3 joins at 10 s; m1 and m2 learn it from their heartbeats
			// and rejoin by 11 s; the joins are answered 2 ms after the last.
			a.Add(heartbeat("10.0.0.1:1", "m1", "g", 1, 10500*ms, errRebalanceInProgress))
			a.Add(leader(join("10.0.0.3:1", "m3", "g", 2, 10000*ms, 1002*ms)))
			a.Add(leader(join("10.0.0.1:1", "m1", "g", 2, 10600*ms, 402*ms)))
			a.Add(leader(join("10.0.0.2:1", "m2", "g", 2, 11000*ms, 2*ms)))
			// The followers sync first and wait for the leader's store.
			a.Add(syncGroup("10.0.0.2:1", "m2", "g", 2, 11003*ms, 3*ms+tc.store))
			a.Add(syncGroup("10.0.0.3:1", "m3", "g", 2, 11004*ms, 2*ms+tc.store))
			a.Add(syncGroup("10.0.0.1:1", "m1", "g", 2, 11006*ms, tc.store))
			rep := a.Report()
			if len(rep.Rebalances) != 2 {
				t.Fatalf("rebalances %+v", rep.Rebalances)
			}
			rb := rep.Rebalances[1]
			if math.Abs(rb.CoordinatorMs-tc.wantOwnMs) > 0.01 || rb.CoordinatorRequest == nil || rb.CoordinatorRequest.API != apiSyncGroup {
				t.Errorf("coordinator %.3f ms in %+v, want %.0f ms in a SyncGroup", rb.CoordinatorMs, rb.CoordinatorRequest, tc.wantOwnMs)
			}
			// The first generation's 3 s joins were the new group's
			// initial delay, not the coordinator's own time.
			if first := rep.Rebalances[0]; first.CoordinatorMs > 10 {
				t.Errorf("first generation: coordinator %.1f ms in %+v", first.CoordinatorMs, first.CoordinatorRequest)
			}
			var f *Finding
			for i := range rep.Findings {
				if rep.Findings[i].Rule == "rebalance" && strings.Contains(rep.Findings[i].Title, "m3") {
					f = &rep.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no rebalance finding naming m3: %+v", rep.Findings)
			}
			t.Logf("%s: %s", f.Title, f.Evidence)
			if named := strings.Contains(f.Evidence, "the coordinator itself took"); named != tc.named || f.Severity != tc.severity {
				t.Errorf("finding %s: %s (coordinator named %v, want %v; severity want %s)", f.Severity, f.Evidence, named, tc.named, tc.severity)
			}
		})
	}
}
