package explain

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func kwait(tid int, a, b float64, stack ...string) *event.KernelWait {
	return &event.KernelWait{Kind: event.KindKernelWait, Start: at(a), End: at(b), LatencyMs: b - a, TID: tid, Thread: "data-plane-kafk", Stack: stack}
}

var sendfileStack = []string{"__schedule", "io_schedule", "folio_wait_bit_common", "filemap_get_pages", "filemap_splice_read", "splice_direct_to_actor", "do_sendfile"}

func TestNetworkThreadBlocked(t *testing.T) {
	const client = "127.0.0.1:40000"
	tests := []struct {
		name   string
		writes []*event.Write
		conns  []*event.ConnThread
		waits  []*event.KernelWait
		req    *event.Request
		cause  string
	}{
		{
			name:   "its network thread blocked in sendfile",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			waits:  []*event.KernelWait{kwait(21, 5, 85, sendfileStack...)},
			req:    req(1, 0, 100),
			cause:  CauseNetworkThreadBlocked,
		},
		{
			name:   "another network thread blocked",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			waits:  []*event.KernelWait{kwait(22, 5, 85, sendfileStack...)},
			req:    req(2, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "connection's thread not known",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			waits:  []*event.KernelWait{kwait(21, 5, 85, sendfileStack...)},
			req:    req(3, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "blocked before the broker could read it",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			conns:  []*event.ConnThread{connThread(21, client, -1000)},
			waits:  []*event.KernelWait{kwait(21, 0, 60, sendfileStack...)},
			req:    req(4, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 60, 40 }),
			cause:  CauseUnexplained,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, tt.writes, tt.conns, tt.waits), nil).Explain(tt.req)
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			if f.Cause == CauseNetworkThreadBlocked && !strings.Contains(f.Detail, "folio_wait_bit_common < filemap_get_pages") {
				t.Errorf("detail %q lacks the stack", f.Detail)
			}
		})
	}
}

// Through Run, the consumer's Fetch served by the same network thread
// during the wait is named; one on another thread is not.
func TestNetworkThreadBlockedFetchEvidence(t *testing.T) {
	fetch := func(corr int32, client string, bytes int) *event.Request {
		written := at(2).Add(-3 * time.Hour).UnixMilli() // data written three hours before
		return &event.Request{Arrival: at(2), End: at(90), LatencyMs: 88, Client: client, Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
			APIVersion: 12, CorrelationID: corr, ClientID: "lagging-consumer", ResponseBytes: bytes, Answered: true,
			Partitions: []event.Partition{{Topic: "history", Partition: 2, Bytes: bytes - 100, FirstTimestamp: &written}}}
	}
	// The consumer's group requests, on its coordinator connection.
	heartbeat := &event.Request{Arrival: at(1), End: at(1.5), Client: "127.0.0.1:41999", Broker: "127.0.0.1:9092", API: "Heartbeat", APIKey: 12,
		ClientID: "lagging-consumer", Answered: true, Group: event.Group{ID: "backfill", MemberID: "m-1", Generation: 3}}
	idx := indexOf(t, []*event.Write{wr(11, 90, 90.1, 100)},
		[]*event.ConnThread{connThread(21, "127.0.0.1:40000", -1000), connThread(21, "127.0.0.1:41000", -1000), connThread(22, "127.0.0.1:42000", -1000)},
		[]*event.KernelWait{kwait(21, 5, 85, sendfileStack...)})
	got, _ := runFile(t, New(Config{Slow: 50 * time.Millisecond}, idx, nil),
		[]*event.Request{heartbeat, fetch(7, "127.0.0.1:41000", 50<<20), fetch(8, "127.0.0.1:42000", 60<<20), req(1, 0, 100)})
	if len(got) != 1 || got[0].Cause != CauseNetworkThreadBlocked {
		t.Fatalf("findings %+v", got)
	}
	bf := got[0].BlockingFetches
	if len(bf) != 1 || bf[0].CorrelationID != 7 || bf[0].ClientID != "lagging-consumer" || len(bf[0].Partitions) != 1 || bf[0].Partitions[0].Topic != "history" {
		t.Errorf("blocking fetches %+v", bf)
	}
	if !strings.Contains(got[0].Detail, "lagging-consumer") || !strings.Contains(got[0].Detail, "history-2") ||
		!strings.Contains(got[0].Detail, "of consumer group backfill") || !strings.Contains(got[0].Detail, "data 3.0 h old") {
		t.Errorf("detail %q", got[0].Detail)
	}
	if bf[0].Group != "backfill" || bf[0].Partitions[0].AgeMs == nil {
		t.Errorf("group %q, age %v", bf[0].Group, bf[0].Partitions[0].AgeMs)
	}
}

// A request pipelined behind one whose network thread was blocked (the
// broker reads it only once the thread is back and has answered the one
// ahead) has no wait in its own span: the thread's waits while it was
// queued, and the fetch behind them with the offset it read from, are its
// evidence. One queued behind a request of another connection inherits
// nothing.
func TestNetworkThreadBlockedQueued(t *testing.T) {
	off := int64(106)
	fetch := &event.Request{Arrival: at(2), End: at(98), LatencyMs: 96, Client: "127.0.0.1:41000", Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
		APIVersion: 12, CorrelationID: 7, ClientID: "lagging-consumer", ResponseBytes: 8 << 20, Answered: true,
		Partitions: []event.Partition{{Topic: "history", Partition: 2, Bytes: 8<<20 - 100, FetchOffset: &off}}}
	// Request 1 read at 0 and answered at 100; request 2 arrived at 1 on
	// the same connection, read at 100; request 3 likewise, on another
	// connection whose request ahead was not slow.
	first := req(1, 0, 100)
	second := req(2, 1, 102, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 99, 2 })
	other := req(3, 1, 102, func(r *event.Request) { r.Client = "127.0.0.1:40001"; r.QueuedMs, r.BrokerMs = 99, 2 })
	var conns []*event.ConnThread
	for _, c := range []string{"127.0.0.1:40000", "127.0.0.1:40001", "127.0.0.1:41000"} {
		conns = append(conns, connThread(21, c, -1000))
	}
	idx := indexOf(t, []*event.Write{wr(11, 99, 99.1, 100), wr(11, 101, 101.1, 100), wr(12, 101, 101.1, 100, func(w *event.Write) { w.TID = 12 })},
		conns, []*event.KernelWait{kwait(21, 5, 95, sendfileStack...)})
	findings, _ := runFile(t, New(Config{Slow: 50 * time.Millisecond}, idx, nil), []*event.Request{fetch, first, second, other})
	got := map[int32]*Finding{}
	for _, f := range findings {
		got[f.CorrelationID] = f
	}
	tests := []struct {
		corr   int32
		cause  string
		fetch  bool
		detail []string
	}{
		{corr: 1, cause: CauseNetworkThreadBlocked, fetch: true, detail: []string{"history-2 at offset 106"}},
		{corr: 2, cause: CauseNetworkThreadBlocked, fetch: true, detail: []string{"queued behind request 1, blocked too", "lagging-consumer"}},
		// The other connection's request was not read before 100 either,
		// but nothing says why: its own span (100-102) has no wait.
		{corr: 3, cause: CauseUnexplained},
	}
	for _, tt := range tests {
		f := got[tt.corr]
		if f == nil {
			t.Errorf("request %d: no finding", tt.corr)
			continue
		}
		if f.Cause != tt.cause {
			t.Errorf("request %d: cause %q, want %q: %s", tt.corr, f.Cause, tt.cause, f.Detail)
		}
		hasFetch := len(f.BlockingFetches) == 1 && f.BlockingFetches[0].CorrelationID == 7 && len(f.NetworkThreadWaits) == 1
		if hasFetch != tt.fetch {
			t.Errorf("request %d: waits %+v, fetches %+v, want the fetch: %v", tt.corr, f.NetworkThreadWaits, f.BlockingFetches, tt.fetch)
		}
		if hasFetch && tt.fetch {
			if p := f.BlockingFetches[0].Partitions; len(p) != 1 || p[0].FetchOffset == nil || *p[0].FetchOffset != off {
				t.Errorf("request %d: fetch partitions %+v, want history-2 from offset %d", tt.corr, p, off)
			}
		}
		for _, d := range tt.detail {
			if !strings.Contains(f.Detail, d) {
				t.Errorf("request %d: detail %q lacks %q", tt.corr, f.Detail, d)
			}
		}
	}
}

// An unanswered fetch may have been in progress until the next fetch of
// its fetcher, on its connection or another, or, without one, to the end.
func TestOpenFetches(t *testing.T) {
	ms := func(v float64) int64 { return at(v).UnixNano() }
	tests := []struct {
		name     string
		fetches  []fetchRef
		fetchers []string
		want     []int64 // ends
	}{
		{
			name: "the next fetch on its connection",
			fetches: []fetchRef{{client: "a:1", arrival: ms(0), end: ms(10)}, {client: "a:1", arrival: ms(20)},
				{client: "a:1", arrival: ms(40), end: ms(50)}},
			fetchers: []string{"a c", "a c", "a c"},
			want:     []int64{ms(10), ms(40), ms(50)},
		},
		{
			name:     "the fetcher's next connection",
			fetches:  []fetchRef{{client: "a:1", arrival: ms(20)}, {client: "a:2", arrival: ms(30), end: ms(35)}},
			fetchers: []string{"a c", "a c"},
			want:     []int64{ms(30), ms(35)},
		},
		{
			name:     "another fetcher's fetch does not end it",
			fetches:  []fetchRef{{client: "a:1", arrival: ms(20)}, {client: "a:2", arrival: ms(30), end: ms(35)}, {client: "b:1", arrival: ms(25)}},
			fetchers: []string{"a c", "a d", "b c"},
			want:     []int64{math.MaxInt64, ms(35), math.MaxInt64},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			openFetches(tt.fetches, tt.fetchers)
			for i, fr := range tt.fetches {
				if fr.end != tt.want[i] {
					t.Errorf("fetch %d (%s at %d): end %d, want %d", i, fr.client, fr.arrival, fr.end, tt.want[i])
				}
			}
		})
	}
	if k := string(fetcherKey(nil, []byte("127.0.0.1:41000"), []byte(`{"client":"127.0.0.1:41000","client_id":"kgo","api":"Fetch"}`))); k != "127.0.0.1 kgo" {
		t.Errorf("fetcherKey %q", k)
	}
}

// Through Run: a consumer's fetch whose connection closed while the
// network thread was still reading its data (no response in the capture)
// is the blocking fetch; an unanswered fetch followed by another one on
// its connection before the wait is not.
func TestNetworkThreadBlockedUnansweredFetch(t *testing.T) {
	off := int64(56)
	unanswered := func(corr int32, client string, a float64) *event.Request {
		return &event.Request{Arrival: at(a), Client: client, Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1, APIVersion: 12,
			CorrelationID: corr, ClientID: "gave-up-consumer", Partitions: []event.Partition{{Topic: "history", Partition: 1, FetchOffset: &off}}}
	}
	tests := []struct {
		name     string
		requests []*event.Request
		fetch    int32 // the blocking fetch's correlation id, 0: none
	}{
		{
			name:     "cut off while served",
			requests: []*event.Request{unanswered(7, "127.0.0.1:41000", 2)},
			fetch:    7,
		},
		{
			name: "the consumer fetched again on a new connection before the wait",
			requests: []*event.Request{unanswered(7, "127.0.0.1:41000", -20),
				{Arrival: at(-10), End: at(-9), LatencyMs: 1, Client: "127.0.0.1:41001", Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
					APIVersion: 12, CorrelationID: 1, ClientID: "gave-up-consumer", ResponseBytes: 100, Answered: true}},
		},
		{
			name: "followed by another fetch before the wait",
			requests: []*event.Request{unanswered(7, "127.0.0.1:41000", -20),
				{Arrival: at(-10), End: at(-9), LatencyMs: 1, Client: "127.0.0.1:41000", Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
					APIVersion: 12, CorrelationID: 8, ClientID: "gave-up-consumer", ResponseBytes: 100, Answered: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := indexOf(t, []*event.Write{wr(11, 90, 90.1, 100)},
				[]*event.ConnThread{connThread(21, "127.0.0.1:40000", -1000), connThread(21, "127.0.0.1:41000", -1000)},
				[]*event.KernelWait{kwait(21, 5, 85, sendfileStack...)})
			got, _ := runFile(t, New(Config{Slow: 50 * time.Millisecond}, idx, nil), append(tt.requests, req(1, 0, 100)))
			if len(got) != 1 || got[0].Cause != CauseNetworkThreadBlocked {
				t.Fatalf("findings %+v", got)
			}
			bf := got[0].BlockingFetches
			if tt.fetch == 0 {
				if len(bf) != 0 {
					t.Errorf("blocking fetches %+v, want none", bf)
				}
				return
			}
			if len(bf) != 1 || bf[0].CorrelationID != tt.fetch || !bf[0].Unanswered || len(bf[0].Partitions) != 1 || *bf[0].Partitions[0].FetchOffset != off {
				t.Errorf("blocking fetches %+v, want unanswered %d from history-1 at %d", bf, tt.fetch, off)
			}
			if d := got[0].Detail; !strings.Contains(d, "unanswered") || !strings.Contains(d, "gave-up-consumer") || !strings.Contains(d, "history-1 at offset 56") {
				t.Errorf("detail %q", d)
			}
		})
	}
}

// The fetch that blocked the network thread carries what the log device
// read while it was served: the block reads issued between its arrival
// and its response (page-cache misses the thread waited for), not those
// before or after it, nor writes.
func TestNetworkThreadBlockedFetchDiskReads(t *testing.T) {
	blk := func(op string, a, b float64, bytes int64) *event.BlockIO {
		return &event.BlockIO{Kind: event.KindBlockIO, Start: at(a), End: at(b), LatencyMs: b - a, Dev: "7:0", Op: op, Bytes: bytes}
	}
	fetch := &event.Request{Arrival: at(2), End: at(90), LatencyMs: 88, Client: "127.0.0.1:41000", Broker: "127.0.0.1:9092", API: "Fetch", APIKey: 1,
		APIVersion: 12, CorrelationID: 7, ClientID: "lagging-consumer", ResponseBytes: 8 << 20, Answered: true,
		Partitions: []event.Partition{{Topic: "history", Partition: 2, Bytes: 8<<20 - 100}}}
	idx := indexOf(t, []*event.Write{wr(11, 90, 90.1, 100)},
		[]*event.ConnThread{connThread(21, "127.0.0.1:40000", -1000), connThread(21, "127.0.0.1:41000", -1000)},
		[]*event.KernelWait{kwait(21, 5, 85, sendfileStack...)},
		[]*event.BlockIO{
			blk("read", 1, 1.5, 1<<20),  // before the fetch
			blk("read", 10, 20, 2<<20),  // during it
			blk("read", 30, 45, 2<<20),  // during it
			blk("write", 40, 41, 4<<20), // a write: not what it read
			blk("read", 95, 96, 1<<20),  // after its response
		})
	got, _ := runFile(t, New(Config{Slow: 50 * time.Millisecond}, idx, nil), []*event.Request{fetch, req(1, 0, 100)})
	if len(got) != 1 || got[0].Cause != CauseNetworkThreadBlocked || len(got[0].BlockingFetches) != 1 {
		t.Fatalf("findings %+v", got)
	}
	bf := got[0].BlockingFetches[0]
	if bf.DiskReads != 2 || bf.DiskReadBytes != 4<<20 {
		t.Errorf("disk reads %d, %d bytes; want 2, %d", bf.DiskReads, bf.DiskReadBytes, 4<<20)
	}
	if !strings.Contains(got[0].Detail, "4.0 MB read from disk while it was served (2 block reads)") {
		t.Errorf("detail %q", got[0].Detail)
	}
}
