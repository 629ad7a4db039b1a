package explain

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/grouphold"
)

// groupRequest is member's request of group orders-app (key api, for
// generation gen) from its own connection, arriving at a and answered at
// b (ms after t0).
func groupRequest(api int16, name string, corr int32, member string, gen int32, a, b float64) *event.Request {
	r := &event.Request{Arrival: at(a), End: at(b), LatencyMs: b - a, BrokerMs: b - a, Client: "127.0.0.1:" + strconv.Itoa(50000+int(member[0])),
		Broker: "127.0.0.1:9092", API: name, APIKey: api, CorrelationID: corr, ClientID: member + "-client", Answered: true,
		Group: event.Group{ID: "orders-app", MemberID: member, Generation: gen}}
	if api == 11 {
		r.Group.Generation = -1
		r.GroupResult = event.GroupResult{Generation: gen, MemberID: member, Leader: "a"}
	}
	return r
}

// rebalance is a classic rebalance into generation 2: b joins at 0, a
// (the leader since generation 1) rejoins at 1000 and both joins are
// answered at 1003; b syncs at 1004, a at 1006, and both are answered
// storeEnd.
func rebalance(storeEnd float64) []*event.Request {
	return []*event.Request{
		groupRequest(11, "JoinGroup", 1, "a", 1, -60000, -57000),
		groupRequest(14, "SyncGroup", 2, "a", 1, -56990, -56985),
		groupRequest(11, "JoinGroup", 1, "b", 2, 0, 1003),
		groupRequest(11, "JoinGroup", 9, "a", 2, 1000, 1003),
		groupRequest(14, "SyncGroup", 2, "b", 2, 1004, storeEnd+0.5),
		groupRequest(14, "SyncGroup", 10, "a", 2, 1006, storeEnd),
	}
}

// runGroupFile explains the group requests of reqs, written as a
// requests.jsonl, against idx, as kscope explain --api group does.
func runGroupFile(t *testing.T, idx *Index, only *RequestID, reqs ...*event.Request) ([]*Finding, *Summary) {
	t.Helper()
	got, sum, err := runRequestsFile(t, idx, Options{API: APIGroup, Request: only}, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	return got, sum
}

// TestExplainGroup: the coordinator's own part of a group request is
// explained with the broker's causes, and the group protocol's hold is
// not: a GC pause while b's JoinGroup waited for a to rejoin held nothing
// up.
func TestExplainGroup(t *testing.T) {
	part := grouphold.OffsetsPartition("orders-app", grouphold.DefaultOffsetsPartitions)
	storeWrite := wr(31, 1007, 2500, 512, func(w *event.Write) {
		w.Topic, w.Partition, w.File, w.Thread = grouphold.OffsetsTopic, part, grouphold.OffsetsTopic+"-"+strconv.Itoa(int(part))+"/00000000000000000000.log", "group-coordinat"
	})
	pauseWhileHeld := pause(event.PauseGC, "Pause Young", 200, 700)
	pauseAfterJoins := pause(event.PauseGC, "Pause Full", 1001, 1300)
	tests := []struct {
		name   string
		reqs   []*event.Request
		writes []*event.Write
		pauses []*event.JVMPause
		want   map[string]string // "API corr" → cause
		detail string
		not    string // not in any detail
	}{
		{
			name:   "the store of the assignment was slow: every SyncGroup is explained by it",
			reqs:   rebalance(2501),
			writes: []*event.Write{storeWrite},
			want:   map[string]string{"SyncGroup 2": CauseSlowWrite, "SyncGroup 10": CauseSlowWrite},
			detail: "its append to __consumer_offsets-" + strconv.Itoa(int(part)),
		},
		{
			name:   "a GC pause while the joins were held is the protocol's time; one after the last join is the coordinator's",
			reqs:   append(rebalance(1020)[:3], groupRequest(11, "JoinGroup", 9, "a", 2, 1000, 1302), groupRequest(11, "JoinGroup", 1, "c", 2, 100, 1302)),
			pauses: []*event.JVMPause{pauseWhileHeld, pauseAfterJoins},
			want:   map[string]string{"JoinGroup 9": CauseGCPause, "JoinGroup 1": CauseGCPause},
			detail: "Pause Full",
			not:    "Pause Young",
		},
		{
			name:   "control: a fast rebalance, a pause while held",
			reqs:   rebalance(1020),
			pauses: []*event.JVMPause{pauseWhileHeld},
			want:   map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := indexOf(t, tt.writes)
			for _, p := range tt.pauses {
				idx.AddJVMPause(p)
			}
			got, sum := runGroupFile(t, idx, nil, tt.reqs...)
			if sum == nil || sum.API != APIGroup || sum.GroupRequests != int64(len(tt.reqs)) {
				t.Fatalf("summary %+v", sum)
			}
			found := map[string]string{}
			for _, f := range got {
				found[f.API+" "+strconv.Itoa(int(f.CorrelationID))] = f.Cause
				if f.GroupSplit == nil || f.Group != "orders-app" {
					t.Errorf("%s %d: split %+v group %q", f.API, f.CorrelationID, f.GroupSplit, f.Group)
				}
				if tt.not != "" && strings.Contains(f.Detail, tt.not) || slicesContainsPause(f.Pauses, tt.not) {
					t.Errorf("%s %d: %q in its evidence: %s", f.API, f.CorrelationID, tt.not, f.Detail)
				}
				if tt.detail != "" && !strings.Contains(f.Detail, tt.detail) {
					t.Errorf("%s %d: detail %q lacks %q", f.API, f.CorrelationID, f.Detail, tt.detail)
				}
			}
			if len(found) != len(tt.want) {
				t.Errorf("findings %v, want %v", found, tt.want)
			}
			for k, cause := range tt.want {
				if found[k] != cause {
					t.Errorf("%s: cause %q, want %q (all: %v)", k, found[k], cause, found)
				}
			}
		})
	}
}

// TestExplainGroupRequest: --request explains a held request whatever
// its own part, and says what held it.
func TestExplainGroupRequest(t *testing.T) {
	got, _ := runGroupFile(t, NewIndex(), &RequestID{Client: "127.0.0.1:50098", CorrelationID: 1}, rebalance(1020)...)
	if len(got) != 1 || got[0].GroupSplit == nil || got[0].GroupSplit.Hold != grouphold.HoldMembers || got[0].GroupSplit.HoldMs < 999 {
		t.Fatalf("findings %+v", got)
	}
}

func slicesContainsPause(ps []event.JVMPause, name string) bool {
	return name != "" && slices.ContainsFunc(ps, func(p event.JVMPause) bool { return p.Name == name })
}
