package explain

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

const consumerConn = "127.0.0.1:41000"

// consumerFetch is a consumer's Fetch (max_wait 500 ms, min_bytes 1) of
// history-2 from offset off, arriving at a and answered at b (ms after
// t0), its response leaving from send before b; bytes of records came
// back, and the partition's high watermark was hwm.
func consumerFetch(corr int32, a, send, b float64, off, hwm int64, bytes int) *event.Request {
	replica := int32(-1)
	return &event.Request{Arrival: at(a), End: at(b), LatencyMs: b - a, BrokerMs: b - a, ResponseMs: send, Client: consumerConn,
		Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1, APIVersion: 12, CorrelationID: corr, ClientID: "backfill-1",
		ReplicaID: &replica, ResponseBytes: bytes + 100, Answered: true, Fetch: event.FetchParams{MaxWaitMs: 500, MinBytes: 1},
		Partitions: []event.Partition{{Topic: "history", Partition: 2, Bytes: bytes, FetchOffset: &off, HighWatermark: &hwm}}}
}

// runFetchFile explains the consumer fetches of reqs, written as a
// requests.jsonl, against idx, as kscope explain --api fetch does.
func runFetchFile(t *testing.T, idx *Index, slow time.Duration, only *RequestID, reqs ...*event.Request) ([]*Finding, *Summary, error) {
	t.Helper()
	return runRequestsFile(t, idx, Options{Config: Config{Slow: slow}, API: APIFetch, Request: only}, reqs...)
}

// runRequestsFile writes reqs as a requests.jsonl and explains it against
// idx with opts.
func runRequestsFile(t *testing.T, idx *Index, opts Options, reqs ...*event.Request) ([]*Finding, *Summary, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	var b strings.Builder
	for _, r := range reqs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []*Finding
	var sum *Summary
	out := OutputFuncs{OnFinding: func(f *Finding) error { got = append(got, f); return nil },
		OnSummary: func(s *Summary) error { sum = s; return nil }}
	err := Run(context.Background(), []Input{{Requests: path, Index: idx}}, opts, out)
	return got, sum, err
}

func TestExplainFetch(t *testing.T) {
	// The group's heartbeat names the consumer's group; an earlier fetch
	// (of another consumer) shows history-2's data there long before.
	heartbeat := &event.Request{Arrival: at(-100), End: at(-99), Client: "127.0.0.1:41999", Broker: "127.0.0.1:9092", API: "Heartbeat",
		APIKey: 12, ClientID: "backfill-1", Answered: true, Group: event.Group{ID: "backfill", MemberID: "m-1", Generation: 3}}
	dataThere := consumerFetch(1, -50, 1, -40, 0, 900_000, 1000)
	dataThere.Client, dataThere.ClientID = "127.0.0.1:43000", "tail"
	conns := []*event.ConnThread{connThread(21, consumerConn, -1000), connThread(21, "127.0.0.1:42000", -1000)}
	tests := []struct {
		name   string
		reqs   []*event.Request
		waits  []*event.KernelWait
		pauses []event.JVMPause
		pages  []event.PageCacheAdds
		cause  string // "" for no finding
		detail []string
		basis  fetchsplit.Basis
	}{
		{
			name:   "disk read: the network thread slept on page-cache misses while its response left",
			reqs:   []*event.Request{heartbeat, dataThere, consumerFetch(7, 0, 300, 302, 100, 900_000, 1<<20)},
			waits:  []*event.KernelWait{kwait(21, 20, 270, sendfileStack...)},
			cause:  CauseDiskRead,
			detail: []string{"its data came from disk: 250.0 ms of page-cache misses", "tid 21", "consumer group backfill", "history-2"},
			basis:  fetchsplit.BasisDataThere,
		},
		{
			name:   "disk read known from the page cache: the thread added the pages it then slept on (a stack not on the read path)",
			reqs:   []*event.Request{heartbeat, dataThere, consumerFetch(7, 0, 300, 302, 100, 900_000, 1<<20)},
			waits:  []*event.KernelWait{kwait(21, 20, 270, "__schedule", "io_schedule", "bit_wait_io")},
			pages:  []event.PageCacheAdds{{Kind: event.KindPageCacheAdds, Start: at(19.5), End: at(19.9), TID: 21, Dev: "8:0", Inode: 77, Pages: 256}},
			cause:  CauseDiskRead,
			detail: []string{"250.0 ms of page-cache misses", "256 pages read into the page cache meanwhile (the most, 256, of inode 77 on 8:0)"},
			basis:  fetchsplit.BasisDataThere,
		},
		{
			name:  "without the page cache adds, the same wait is the network thread's, not a read",
			reqs:  []*event.Request{heartbeat, dataThere, consumerFetch(7, 0, 300, 302, 100, 900_000, 1<<20)},
			waits: []*event.KernelWait{kwait(21, 20, 270, "__schedule", "io_schedule", "bit_wait_io")},
			cause: CauseNetworkThreadBlocked,
			basis: fetchsplit.BasisDataThere,
		},
		{
			name:   "network thread blocked: before its response, the thread read another connection's cold data",
			reqs:   []*event.Request{heartbeat, dataThere, consumerFetch(7, 0, 1, 302, 100, 900_000, 1000)},
			waits:  []*event.KernelWait{kwait(21, 20, 270, sendfileStack...)},
			cause:  CauseNetworkThreadBlocked,
			detail: []string{"network thread (tid 21) was blocked 250.0 ms"},
			basis:  fetchsplit.BasisDataThere,
		},
		{
			name:   "purgatory is normal: a fetch that waited max_wait_ms for data, through a GC pause, is not slow",
			reqs:   []*event.Request{heartbeat, consumerFetch(7, 0, 1, 502, 100, 100, 0)},
			pauses: []event.JVMPause{{Kind: event.KindJVMPause, Start: at(100), End: at(400), LatencyMs: 300, Type: event.PauseGC, Name: "Pause Full"}},
		},
		{
			name: "purgatory then a GC pause: only the pause after the wait counts",
			reqs: []*event.Request{heartbeat, consumerFetch(7, 0, 1, 801, 100, 100, 0)},
			pauses: []event.JVMPause{{Kind: event.KindJVMPause, Start: at(100), End: at(400), LatencyMs: 300, Type: event.PauseGC, Name: "Pause Full"},
				{Kind: event.KindJVMPause, Start: at(510), End: at(790), LatencyMs: 280, Type: event.PauseGC, Name: "Pause Young"}},
			cause:  CauseGCPause,
			detail: []string{"Pause Young"},
			basis:  fetchsplit.BasisNoData,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := indexOf(t, conns, tt.waits)
			for _, p := range tt.pauses {
				idx.AddJVMPause(&p)
			}
			for _, p := range tt.pages {
				idx.AddPageCacheAdds(&p)
			}
			got, sum, err := runFetchFile(t, idx, 100*time.Millisecond, nil, tt.reqs...)
			if err != nil {
				t.Fatal(err)
			}
			if sum == nil || sum.API != APIFetch || sum.FetchRequests == 0 {
				t.Fatalf("summary %+v", sum)
			}
			if tt.cause == "" {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d findings, want 1: %+v", len(got), got)
			}
			f := got[0]
			if f.Cause != tt.cause || f.API != "Fetch" || f.FetchSplit == nil || f.FetchSplit.Basis != tt.basis {
				t.Errorf("cause %q (api %q, split %+v), want %q; %s; shares %v", f.Cause, f.API, f.FetchSplit, tt.cause, f.Detail, f.Shares)
			}
			for _, d := range tt.detail {
				if !strings.Contains(f.Detail, d) {
					t.Errorf("detail %q lacks %q", f.Detail, d)
				}
			}
		})
	}
}

// TestExplainFetchRequest: --request names a fetch, whatever its time;
// a produce request is not one; several inputs are refused.
func TestExplainFetchRequest(t *testing.T) {
	idx := indexOf(t, []*event.ConnThread{connThread(21, consumerConn, -1000)})
	fetch := consumerFetch(7, 0, 1, 502, 100, 100, 0)
	got, _, err := runFetchFile(t, idx, 0, &RequestID{Client: consumerConn, CorrelationID: 7}, fetch, req(1, 0, 100))
	if err != nil || len(got) != 1 || got[0].CorrelationID != 7 || got[0].FetchSplit.PurgatoryMs != 500 {
		t.Fatalf("findings %+v, %v", got, err)
	}
	if _, _, err := runFetchFile(t, NewIndex(), 0, &RequestID{Client: "127.0.0.1:40000", CorrelationID: 1}, fetch, req(1, 0, 100)); err == nil ||
		!strings.Contains(err.Error(), "not an answered consumer fetch") {
		t.Errorf("a produce request as a fetch: %v", err)
	}
	err = Run(context.Background(), []Input{{Requests: "a"}, {Requests: "b"}}, Options{API: APIFetch}, OutputFuncs{})
	if err == nil || !strings.Contains(err.Error(), "one recording") {
		t.Errorf("two inputs: %v", err)
	}
	err = Run(context.Background(), []Input{{Requests: "a"}}, Options{API: "metadata"}, OutputFuncs{})
	if err == nil || !strings.Contains(err.Error(), `not "metadata"`) {
		t.Errorf("--api metadata: %v", err)
	}
}
