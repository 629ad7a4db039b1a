package explain

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

// acksAll makes a request acks=all with base offset base in each of its
// partitions (its last offset is base+records-1).
func acksAll(base int64) func(*event.Request) {
	return func(r *event.Request) {
		r.Acks = i16(-1)
		for i := range r.Partitions {
			r.Partitions[i].BaseOffset = i64(base)
		}
	}
}

// ffetch is a Fetch request from replica (-1: a consumer) arriving at a
// (ms after t0), answered 1 ms later, naming t-0 at offset off (and any
// further partitions mod adds).
func ffetch(corr, replica int32, a float64, off int64, mod ...func(*event.Request)) *event.Request {
	client := "127.0.0.1:5000" + string(rune('0'+replica+1))
	r := &event.Request{Arrival: at(a), End: at(a + 1), LatencyMs: 1, Client: client, Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
		APIVersion: 17, CorrelationID: corr, ClientID: "broker-" + itoa(replica) + "-fetcher-0", ReplicaID: i32(replica), Answered: true,
		Partitions: []event.Partition{{Topic: "t", Partition: 0, FetchOffset: i64(off)}}}
	for _, m := range mod {
		m(r)
	}
	return r
}

// runRequests explains the slow (>= 50 ms) produce requests of reqs,
// written as a requests.jsonl, against writes.
func runRequests(t *testing.T, reqs []*event.Request, writes []*event.Write) []*Finding {
	t.Helper()
	got, _ := runFile(t, New(Config{Slow: 50 * time.Millisecond}, indexOf(t, writes), nil), reqs)
	return got
}

// TestReplicationFollowerFetches: the wait for followers ends when the
// last follower's first fetch past the request's last offset arrives; a
// fetch at the last offset has not passed it. The request (corr 7) is
// acks=all, t-0 offsets 40..40, appended from 1 to 1.2 ms, answered at
// 100 ms.
func TestReplicationFollowerFetches(t *testing.T) {
	base := func(mod ...func(*event.Request)) *event.Request {
		return req(7, 0, 100, append([]func(*event.Request){acksAll(40)}, mod...)...)
	}
	own := []*event.Write{wr(11, 1, 1.2, 100), wr(11, 1.2, 1.3, 200, func(w *event.Write) { w.Partition, w.File = 1, "t-1/00000000000000000000.log" })}
	tests := []struct {
		name     string
		reqs     []*event.Request
		cause    string
		from     string  // Finding.ReplicationFrom
		replMs   float64 // shares.replication_ms
		decisive []int32 // the replicas whose fetch ended the wait
		detail   string  // in the detail
	}{
		{
			name: "known yes: a late follower",
			reqs: []*event.Request{ffetch(1, 2, -5, 40), ffetch(2, 2, 0.5, 40), ffetch(3, 2, 80, 41), base()},
			// 80 - 1.2: from the append's end to the fetch past offset 40.
			cause: CauseReplication, from: ReplicationByFetch, replMs: 78.8, decisive: []int32{2},
			detail: "follower 2 fetched t-0 past offset 40 (fetch offset 41) 78.8 ms after the append; it had not fetched for 79.5 ms",
		},
		{
			name: "known no: the follower fetched promptly",
			// The response came late for something else: without the
			// fetches this was 98.8 ms of "replication".
			reqs:  []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 2, 2, 41), ffetch(3, 2, 60, 41), base()},
			cause: CauseUnexplained, from: ReplicationByFetch, replMs: 0.8, decisive: []int32{2},
		},
		{
			name:  "known no: acks=1 waits for no follower",
			reqs:  []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 2, 80, 41), req(7, 0, 100, func(r *event.Request) { r.Partitions[0].BaseOffset = i64(40) })},
			cause: CauseUnexplained, replMs: 0,
		},
		{
			name:  "two followers: the later decides",
			reqs:  []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 3, 0.6, 40), ffetch(3, 2, 30, 41), ffetch(4, 3, 85, 45), base()},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 83.8, decisive: []int32{3},
			detail: "follower 3 fetched t-0 past offset 40 (fetch offset 45) 83.8 ms after the append",
		},
		{
			name:  "two followers at the same moment: both decide",
			reqs:  []*event.Request{ffetch(1, 2, 60, 41), ffetch(2, 3, 60, 41), base()},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 58.8, decisive: []int32{2, 3},
		},
		{
			name:  "a fetch at the last offset has not passed it",
			reqs:  []*event.Request{ffetch(1, 2, 50, 40), ffetch(2, 2, 90, 41), base()},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 88.8, decisive: []int32{2},
		},
		{
			name:  "the last offset + 1 has",
			reqs:  []*event.Request{ffetch(1, 2, 50, 41), ffetch(2, 2, 90, 42), base()},
			cause: CauseUnexplained, from: ReplicationByFetch, replMs: 48.8, decisive: []int32{2},
		},
		{
			name: "the last offset counts the request's records",
			// Three records from 40: the last is 42; a fetch at 42 has
			// not passed it.
			reqs:  []*event.Request{ffetch(1, 2, 50, 42), ffetch(2, 2, 90, 43), base(func(r *event.Request) { r.Partitions[0].Records = 3 })},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 88.8, decisive: []int32{2},
		},
		{
			name: "two partitions: the later partition's follower decides",
			reqs: []*event.Request{
				ffetch(1, 2, 20, 41, func(r *event.Request) {
					r.Partitions = append(r.Partitions, event.Partition{Topic: "t", Partition: 1, FetchOffset: i64(7)})
				}),
				ffetch(2, 2, 70, 41, func(r *event.Request) {
					r.Partitions = []event.Partition{{Topic: "t", Partition: 1, FetchOffset: i64(8)}}
				}),
				base(func(r *event.Request) {
					r.Partitions = append(r.Partitions, event.Partition{Topic: "t", Partition: 1, Records: 1, Bytes: 200, BaseOffset: i64(7)})
				}),
			},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 68.7, decisive: []int32{2},
			detail: "follower 2 fetched t-1 past offset 7 (fetch offset 8) 68.7 ms after the append",
		},
		{
			name: "two partitions: the first partition's follower decides",
			reqs: []*event.Request{
				ffetch(1, 2, 20, 40, func(r *event.Request) {
					r.Partitions = append(r.Partitions, event.Partition{Topic: "t", Partition: 1, FetchOffset: i64(8)})
				}),
				ffetch(2, 2, 70, 41),
				base(func(r *event.Request) {
					r.Partitions = append(r.Partitions, event.Partition{Topic: "t", Partition: 1, Records: 1, Bytes: 200, BaseOffset: i64(7)})
				}),
			},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 68.7, decisive: []int32{2},
			detail: "follower 2 fetched t-0 past offset 40 (fetch offset 41) 68.8 ms after the append",
		},
		{
			name:  "the passing fetch went to another broker",
			reqs:  []*event.Request{ffetch(1, 2, 80, 41, func(r *event.Request) { r.Broker = "127.0.0.1:9093" }), base()},
			cause: CauseReplication, from: ReplicationByGap, replMs: 98.8,
			detail: "no follower fetch passed offset 40 before the response",
		},
		{
			name:  "a consumer's fetch is no follower's",
			reqs:  []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, -1, 80, 41), base()},
			cause: CauseReplication, from: ReplicationByGap, replMs: 98.8,
		},
		{
			name:  "the passing fetch came after the response",
			reqs:  []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 2, 101, 41), base()},
			cause: CauseReplication, from: ReplicationByGap, replMs: 98.8,
		},
		{
			name:  "no base offset (a recording from before): the gap",
			reqs:  []*event.Request{ffetch(1, 2, 80, 41), req(7, 0, 100, func(r *event.Request) { r.Acks = i16(-1) })},
			cause: CauseReplication, from: ReplicationByGap, replMs: 98.8,
			detail: "no base offset",
		},
		{
			name:  "fetches without replica ids (a recording from before): the gap",
			reqs:  []*event.Request{ffetch(1, 2, 80, 41, func(r *event.Request) { r.ReplicaID = nil }), base()},
			cause: CauseReplication, from: ReplicationByGap, replMs: 98.8,
			detail: "no follower fetch with its replica id",
		},
		{
			name: "the topic by id (Produce and Fetch v13+)",
			reqs: []*event.Request{
				// The fetch's topic name not known: matched by id.
				ffetch(1, 2, 80, 41, func(r *event.Request) { r.Partitions[0].Topic, r.Partitions[0].TopicID = "", "AAAAAAAAAAAAAAAAAAAAAQ" }),
				base(func(r *event.Request) { r.Partitions[0].TopicID = "AAAAAAAAAAAAAAAAAAAAAQ" }),
			},
			cause: CauseReplication, from: ReplicationByFetch, replMs: 78.8, decisive: []int32{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runRequests(t, tt.reqs, own)
			if len(got) != 1 {
				t.Fatalf("%d findings", len(got))
			}
			f := got[0]
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			if math.Abs(f.Shares[CauseReplication]-tt.replMs) > 0.001 {
				t.Errorf("replication %.3f ms, want %.3f", f.Shares[CauseReplication], tt.replMs)
			}
			if f.ReplicationFrom != tt.from {
				t.Errorf("replication from %q, want %q (%s)", f.ReplicationFrom, tt.from, f.ReplicationUnmatched)
			}
			var decisive []int32
			for _, rf := range f.Replication {
				if rf.Decisive {
					decisive = append(decisive, rf.Replica)
				}
			}
			slices.Sort(decisive)
			if !slices.Equal(decisive, tt.decisive) {
				t.Errorf("decisive replicas %v, want %v; evidence %+v", decisive, tt.decisive, f.Replication)
			}
			if (tt.from == ReplicationByGap) != (f.ReplicationUnmatched != "") {
				t.Errorf("unmatched %q with replication from %q", f.ReplicationUnmatched, f.ReplicationFrom)
			}
			if !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", f.Detail, tt.detail)
			}
		})
	}
}

// TestReplicationEvidence: the late follower's fetch, with its lateness
// and the follower's previous fetch, is in the finding.
func TestReplicationEvidence(t *testing.T) {
	got := runRequests(t, []*event.Request{ffetch(1, 2, 0.5, 39, func(r *event.Request) {
		r.Partitions = append(r.Partitions, event.Partition{Topic: "u", Partition: 0, FetchOffset: i64(3)})
	}), ffetch(2, 2, 10, 0, func(r *event.Request) {
		// an incremental fetch that leaves t-0 out
		r.Partitions = []event.Partition{{Topic: "u", Partition: 0, FetchOffset: i64(4)}}
	}), ffetch(3, 2, 80, 41), req(7, 0, 100, acksAll(40))}, []*event.Write{wr(11, 1, 1.2, 100)})
	if len(got) != 1 || len(got[0].Replication) != 1 {
		t.Fatalf("findings %+v", got)
	}
	rf := got[0].Replication[0]
	// Fetches at 0.5, 10 and 80 ms: silent for 70.
	want := ReplicaFetch{Replica: 2, Topic: "t", Partition: 0, LastOffset: 40, FetchOffset: 41, FetchArrival: at(80), LateMs: 78.8,
		SilentMs: 70, Client: "127.0.0.1:50003", CorrelationID: 3, Decisive: true}
	prev := rf.PrevFetchArrival
	rf.PrevFetchArrival, rf.PrevFetchOffset = nil, nil
	rf.LateMs, rf.SilentMs = math.Round(rf.LateMs*1000)/1000, math.Round(rf.SilentMs*1000)/1000
	if rf != want {
		t.Errorf("evidence %+v, want %+v", rf, want)
	}
	// The follower's previous fetch did not name t-0: no offset.
	if prev == nil || !prev.Equal(at(10)) || got[0].Replication[0].PrevFetchOffset != nil {
		t.Errorf("previous fetch %v offset %v, want at +10 ms without an offset", prev, got[0].Replication[0].PrevFetchOffset)
	}
}

// TestReplicationQueuedBehind: a request queued on its connection behind
// one that waited for a late follower waited for it too, and names that
// follower; its own wait (the follower prompt by then) is small.
func TestReplicationQueuedBehind(t *testing.T) {
	second := req(8, 10, 104, acksAll(41), func(r *event.Request) { r.QueuedMs, r.BrokerMs = 90, 4 })
	got := runRequests(t, []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 2, 98, 41), ffetch(3, 2, 102, 42), req(7, 0, 100, acksAll(40)), second},
		[]*event.Write{wr(11, 1, 1.2, 100), wr(11, 101, 101.2, 100)})
	if len(got) != 2 {
		t.Fatalf("%d findings", len(got))
	}
	f := got[1]
	if f.CorrelationID != 8 || f.Cause != CauseReplication {
		t.Fatalf("second request: %s: %s; shares %+v", f.Cause, f.Detail, f.Shares)
	}
	// Queued from 10 ms behind it until its follower's fetch at 98 ms
	// (the first request's response left 2 ms later), then its own
	// 101.2..102.
	if math.Abs(f.Shares[CauseReplication]-88.8) > 0.001 {
		t.Errorf("replication %.3f ms, want 88.8", f.Shares[CauseReplication])
	}
	qb := f.QueuedBehind
	if qb == nil || qb.CorrelationID != 7 || len(qb.Replication) != 1 || qb.Replication[0].Replica != 2 || math.Abs(qb.Replication[0].LateMs-96.8) > 0.001 {
		t.Fatalf("queued behind %+v", qb)
	}
	if len(f.Replication) != 1 || math.Abs(f.Replication[0].LateMs-0.8) > 0.001 {
		t.Errorf("own evidence %+v, want the prompt fetch at +102", f.Replication)
	}
	if !strings.Contains(f.Detail, "queued behind request 7, whose follower 2 fetched t-0 past offset 40") {
		t.Errorf("detail %q", f.Detail)
	}
}

// TestReplicationQueuedChain: a request inherits, with their fetches, only
// the parts of the waits for followers ahead of it on its connection that
// fell in its own wait there: not a fetch the chain waited for before it
// arrived.
func TestReplicationQueuedChain(t *testing.T) {
	tests := []struct {
		name    string
		arrival float64 // of the third request
		want    []int32 // correlation ids of the fetches it inherits
	}{
		// Arrived while the first still waited for its follower (until
		// 98 ms): that wait, and the second's, were its too.
		{"arrived during the first's wait", 50, []int32{2, 3}},
		// Arrived after the follower's fetch at 98 ms: only the second
		// request's (prompt) fetch at 102 ms held it.
		{"arrived after it", 99, []int32{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			second := req(8, 10, 104, acksAll(41), func(r *event.Request) { r.QueuedMs, r.BrokerMs = 90, 4 })
			third := req(9, tt.arrival, 160, acksAll(42), func(r *event.Request) { r.QueuedMs, r.BrokerMs = 104-tt.arrival, 56 })
			got := runRequests(t, []*event.Request{ffetch(1, 2, 0.5, 40), ffetch(2, 2, 98, 41), ffetch(3, 2, 102, 42), ffetch(4, 2, 158, 43),
				req(7, 0, 100, acksAll(40)), second, third},
				[]*event.Write{wr(11, 1, 1.2, 100), wr(11, 101, 101.2, 100), wr(11, 105, 105.2, 100)})
			f := got[len(got)-1]
			if f.CorrelationID != 9 || f.Cause != CauseReplication || f.QueuedBehind == nil {
				t.Fatalf("third request: %s: %s; queued behind %+v", f.Cause, f.Detail, f.QueuedBehind)
			}
			var corrs []int32
			for _, rf := range f.QueuedBehind.Replication {
				corrs = append(corrs, rf.CorrelationID)
			}
			slices.Sort(corrs)
			if !slices.Equal(corrs, tt.want) {
				t.Errorf("inherited fetches %v, want %v", corrs, tt.want)
			}
		})
	}
}

// TestReplicationSilence: a follower that kept fetching but was slow to
// pass the request's offset was late without being silent; one that
// stopped fetching was silent.
func TestReplicationSilence(t *testing.T) {
	tests := []struct {
		name    string
		fetches []float64 // arrivals of fetches at offset 40 before the passing one at 80 ms
		silent  float64
	}{
		{"kept fetching every 10 ms", []float64{-3, 5, 15, 25, 35, 45, 55, 65, 75}, 10},
		{"stopped after its fetch before the append", []float64{-3}, 83},
		{"stopped, then fetched once before passing", []float64{-3, 78}, 81},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqs []*event.Request
			for i, a := range tt.fetches {
				reqs = append(reqs, ffetch(int32(i+1), 2, a, 40))
			}
			reqs = append(reqs, ffetch(99, 2, 80, 41), req(7, 0, 100, acksAll(40)))
			got := runRequests(t, reqs, []*event.Write{wr(11, 1, 1.2, 100)})
			if len(got) != 1 || len(got[0].Replication) != 1 {
				t.Fatalf("findings %+v", got)
			}
			if s := got[0].Replication[0].SilentMs; math.Abs(s-tt.silent) > 0.001 {
				t.Errorf("silent %.3f ms, want %.3f", s, tt.silent)
			}
		})
	}
}
