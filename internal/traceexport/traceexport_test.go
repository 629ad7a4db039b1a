package traceexport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func at(msec float64) time.Time { return t0.Add(time.Duration(msec * float64(time.Millisecond))) }

// replicationFinding is a leader's request that waited 88.8 ms for
// follower 2, whose append (on its clock, 250 ms ahead) hung 85 ms.
func replicationFinding() *explain.Finding {
	id := int32(2)
	acks := int16(-1)
	own := &explain.WriteEvidence{Write: event.Write{Start: at(1), End: at(1.2), TID: 11, Thread: "data-plane-kafk", Op: "write", Bytes: 100, Topic: "orders", Partition: 3}}
	return &explain.Finding{
		Arrival: at(0), End: at(100), LatencyMs: 100, QueuedMs: 0.5, ResponseMs: 0.2, Client: "10.0.0.1:5000", Broker: "10.0.0.11:9092",
		ClientID: "app", CorrelationID: 7, Acks: &acks, Cause: explain.CauseReplication, ExplainedMs: 88.8, Detail: "acks=all: ...",
		Follower: &id, FollowerCause: explain.CauseSlowWrite,
		Partitions: []explain.PartitionEvidence{{Topic: "orders", Partition: 3, Records: 1, Bytes: 100, Write: own}},
		Replication: []explain.ReplicaFetch{{Replica: 2, Topic: "orders", Partition: 3, LastOffset: 40, FetchOffset: 41, FetchArrival: at(90), LateMs: 88.8, Decisive: true,
			Follower: &explain.FollowerWait{Broker: 2, Cause: explain.CauseSlowWrite, WaitMs: 88.8, AppendMs: 85, ClockOffsetMs: 250,
				Appends: []event.Write{{Start: at(253), End: at(338), TID: 900, Thread: "ReplicaFetcherT", Topic: "orders", Partition: 3}}}}},
	}
}

func TestSpans(t *testing.T) {
	got := Spans(replicationFinding())
	want := []struct {
		name       string
		start, end float64
	}{
		{"queued behind the previous request", 0, 0.5},
		{"append orders-3", 1, 1.2},
		{"replication wait: follower 2 orders-3", 1.2, 90},
		// The follower's append on the leader's clock: 250 ms earlier.
		{"follower 2 append orders-3", 3, 88},
		{"response send", 99.8, 100},
	}
	if len(got) != len(want) {
		t.Fatalf("%d spans, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || !g.Start.Equal(at(w.start)) || !g.End.Equal(at(w.end)) {
			t.Errorf("span %d: %q %s..%s, want %q at %.1f..%.1f ms", i, g.Name, g.Start.Sub(t0), g.End.Sub(t0), w.name, w.start, w.end)
		}
	}
}

// TestExporter posts a finding to an OTLP/HTTP endpoint and reads back
// the protobuf the SDK's exporter sent: one trace, the root span and its
// children with the finding's own times.
func TestExporter(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	var resource map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("unmarshal: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			resource = map[string]string{}
			for _, kv := range rs.Resource.Attributes {
				resource[kv.Key] = kv.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	defer srv.Close()
	ctx := context.Background()
	x, err := New(ctx, Config{Endpoint: srv.URL, Attributes: map[string]string{"kafka.broker.id": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	x.Finding(replicationFinding())
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(spans) != 6 {
		t.Fatalf("%d spans, want the root and 5 children", len(spans))
	}
	if resource["service.name"] != "kscope" || resource["kafka.broker.id"] != "1" {
		t.Errorf("resource %v", resource)
	}
	var root *tracepb.Span
	for _, s := range spans {
		if len(s.ParentSpanId) == 0 {
			root = s
		}
	}
	if root == nil || root.Name != "produce orders" || root.StartTimeUnixNano != uint64(at(0).UnixNano()) || root.EndTimeUnixNano != uint64(at(100).UnixNano()) {
		t.Fatalf("root %v", root)
	}
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["kscope.cause"] != "replication" || attrs["kscope.follower_cause"] != "slow-write" {
		t.Errorf("root attributes %v", attrs)
	}
	for _, s := range spans {
		if s != root && (string(s.TraceId) != string(root.TraceId) || string(s.ParentSpanId) != string(root.SpanId)) {
			t.Errorf("span %q is not a child of the root", s.Name)
		}
	}
}
