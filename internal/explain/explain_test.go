package explain

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// indexOf is an Index of hand-built events: slices of the event types an
// Index takes (nil ones too).
func indexOf(t *testing.T, evs ...any) *Index {
	t.Helper()
	idx := NewIndex()
	for _, ev := range evs {
		switch ev := ev.(type) {
		case []*event.Write:
			for _, w := range ev {
				idx.AddWrite(w)
			}
		case []*event.LockWait:
			for _, l := range ev {
				idx.AddLockWait(l)
			}
		case []*event.KernelWait:
			for _, k := range ev {
				idx.AddWait(k)
			}
		case []*event.RunDelay:
			for _, d := range ev {
				idx.AddRunDelay(d)
			}
		case []*event.Wakeup:
			for _, u := range ev {
				idx.AddWakeup(u)
			}
		case []*event.ConnThread:
			for _, c := range ev {
				idx.AddConnThread(c)
			}
		case []*event.CPUThrottle:
			for _, th := range ev {
				idx.AddThrottle(th)
			}
		case []*event.JVMPause:
			for _, p := range ev {
				idx.AddJVMPause(p)
			}
		case []*event.BlockIO:
			for _, b := range ev {
				idx.AddBlock(b)
			}
		default:
			t.Fatalf("indexOf: no Index method for %T", ev)
		}
	}
	return idx
}

// scanOf scans reqs written as a requests.jsonl.
func scanOf(t *testing.T, reqs []*event.Request) *Scan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := ScanRequests(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runFile has e explain reqs written as a requests.jsonl, as kscope
// explain runs: the findings in file order, and the summary.
func runFile(t *testing.T, e *Explainer, reqs []*event.Request) ([]*Finding, *Summary) {
	t.Helper()
	scan := scanOf(t, reqs)
	var got []*Finding
	sum, err := e.Run(scan, RunOptions{}, func(f *Finding) error { got = append(got, f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return got, sum
}

func at(msec float64) time.Time { return t0.Add(time.Duration(msec * float64(time.Millisecond))) }

func i16(v int16) *int16 { return &v }

// req builds an answered produce request to t-0 from arrival a to end b
// (milliseconds after t0).
func req(corr int32, a, b float64, mod ...func(*event.Request)) *event.Request {
	r := &event.Request{
		Arrival: at(a), End: at(b), LatencyMs: b - a, BrokerMs: b - a, Client: "127.0.0.1:40000", Broker: "127.0.0.1:9092",
		API: "Produce", APIKey: 0, APIVersion: 11, CorrelationID: corr, Answered: true, Acks: i16(1),
		Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100, MessageIDs: []string{"id-" + itoa(corr)}}},
	}
	for _, m := range mod {
		m(r)
	}
	return r
}

func itoa(i int32) string { return string(rune('a'+i%26)) + string(rune('0'+i/26%10)) }

func wr(tid int, a, b float64, bytes int64, mod ...func(*event.Write)) *event.Write {
	w := &event.Write{Start: at(a), End: at(b), LatencyMs: b - a, TID: tid, Thread: "data-plane-kafk", Op: "write",
		Bytes: bytes, Offset: 4096, File: "t-0/00000000000000000000.log", Topic: "t", Partition: 0, Dev: "7:0"}
	for _, m := range mod {
		m(w)
	}
	return w
}

func commit(a, b float64) *event.JournalCommit {
	return &event.JournalCommit{Kind: event.KindJBD2Commit, Start: at(a), End: at(b), LatencyMs: b - a, Dev: "7:0", FS: "ext4"}
}

func TestExplainCauses(t *testing.T) {
	tests := []struct {
		name      string
		writes    []*event.Write
		commits   []*event.JournalCommit
		locks     []*event.LockWait
		req       *event.Request
		lookup    IDLookup
		followers bool
		cause     string
		root      string
		via       string
		matched   string
	}{
		{
			name:    "slow write of its own",
			writes:  []*event.Write{wr(11, 1, 95, 100)},
			req:     req(1, 0, 100),
			cause:   CauseSlowWrite,
			matched: MatchBytes,
		},
		{
			name:    "slow write under a journal commit",
			writes:  []*event.Write{wr(11, 1, 95, 100)},
			commits: []*event.JournalCommit{commit(0.5, 96), commit(200, 210)},
			req:     req(1, 0, 100),
			cause:   CauseSlowWrite,
			root:    RootJournal,
			matched: MatchBytes,
		},
		{
			name:    "commit on another device is no root",
			writes:  []*event.Write{wr(11, 1, 95, 100)},
			commits: []*event.JournalCommit{{Kind: event.KindJBD2Commit, Start: at(0), End: at(96), Dev: "8:0"}},
			req:     req(1, 0, 100),
			cause:   CauseSlowWrite,
			matched: MatchBytes,
		},
		{
			name:    "brief commit overlap is no root",
			writes:  []*event.Write{wr(11, 1, 95, 100)},
			commits: []*event.JournalCommit{commit(90, 120)},
			req:     req(1, 0, 100),
			cause:   CauseSlowWrite,
			matched: MatchBytes,
		},
		{
			name: "lock wait behind another thread's slow write",
			// thread 12's write started before the request, ended at 95;
			// the request's own append by thread 11 followed, fast.
			writes:  []*event.Write{wr(12, -10, 95, 500), wr(11, 95.1, 95.2, 100)},
			req:     req(2, 0, 100),
			cause:   CauseLockWait,
			via:     ViaPartitionLock,
			matched: MatchBytes,
		},
		{
			name:    "lock wait, root journal",
			writes:  []*event.Write{wr(12, -10, 95, 500), wr(11, 95.1, 95.2, 100)},
			commits: []*event.JournalCommit{commit(-12, 96)},
			req:     req(2, 0, 100),
			cause:   CauseLockWait,
			root:    RootJournal,
			via:     ViaPartitionLock,
			matched: MatchBytes,
		},
		{
			name:   "queued behind the previous request on the connection",
			writes: []*event.Write{wr(12, -10, 95, 500), wr(12, 95.1, 95.2, 100)},
			req: req(3, 0, 100, func(r *event.Request) {
				r.QueuedMs, r.BrokerMs = 95, 5
			}),
			cause:   CauseLockWait,
			via:     ViaConnection,
			matched: MatchBytes,
		},
		{
			name: "lock wait seen by JFR only",
			// the blocking write is on another partition (not joined),
			// but JFR saw the handler wait on the monitor.
			writes: []*event.Write{wr(11, 90, 90.5, 100)},
			locks:  []*event.LockWait{{Start: at(2), End: at(89), TID: 11, Monitor: "java.lang.Object"}},
			req:    req(4, 0, 100), cause: CauseLockWait, via: ViaPartitionLock, matched: MatchBytes,
		},
		{
			name:   "message id beats byte count",
			writes: []*event.Write{wr(13, 1, 2, 100, func(w *event.Write) { w.Offset = 0 }), wr(11, 3, 95, 100, func(w *event.Write) { w.Offset = 100 })},
			req:    req(5, 0, 100),
			lookup: func(file string, off, n int64) ([]string, error) {
				return map[int64][]string{0: {"other"}, 100: {"id-" + itoa(5)}}[off], nil
			},
			cause:   CauseSlowWrite,
			matched: MatchMessageID,
		},
		{
			name:    "segment unreadable: falls back to bytes",
			writes:  []*event.Write{wr(11, 3, 95, 100)},
			req:     req(5, 0, 100),
			lookup:  func(string, int64, int64) ([]string, error) { return nil, errors.New("gone") },
			cause:   CauseSlowWrite,
			matched: MatchBytes,
		},
		{
			name:    "own write found by time when sizes differ",
			writes:  []*event.Write{wr(11, 3, 95, 123)},
			req:     req(6, 0, 100),
			cause:   CauseSlowWrite,
			matched: MatchTime,
		},
		{
			name:      "replication: acks=all, append early, answer late",
			writes:    []*event.Write{wr(11, 1, 1.2, 100)},
			req:       req(7, 0, 100, func(r *event.Request) { r.Acks = i16(-1) }),
			followers: true,
			cause:     CauseReplication, matched: MatchBytes,
		},
		{
			name:   "acks=all on a cluster without followers fetching is no replication",
			writes: []*event.Write{wr(11, 1, 1.2, 100)},
			req:    req(7, 0, 100, func(r *event.Request) { r.Acks = i16(-1) }),
			cause:  CauseUnexplained, matched: MatchBytes,
		},
		{
			name: "an equal-sized append before the broker took the request is not its own",
			// the previous request on the connection appended 100 bytes
			// from 10 to 79 ms; this one was taken at 80 ms and appended
			// at 81.
			writes: []*event.Write{wr(12, 10, 79, 100), wr(11, 81, 81.1, 100)},
			req:    req(17, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 80, 20 }),
			cause:  CauseLockWait, via: ViaConnection, matched: MatchBytes,
		},
		{
			name:   "acks=1 with the same timeline is unexplained",
			writes: []*event.Write{wr(11, 1, 1.2, 100)},
			req:    req(8, 0, 100),
			cause:  CauseUnexplained, matched: MatchBytes,
		},
		{
			name:   "throttle",
			writes: []*event.Write{wr(11, 1, 1.2, 100)},
			req:    req(9, 0, 100, func(r *event.Request) { r.ThrottleMs = 90 }),
			cause:  CauseThrottle, matched: MatchBytes,
		},
		{
			name:   "response send",
			writes: []*event.Write{wr(11, 1, 1.2, 100)},
			req:    req(10, 0, 100, func(r *event.Request) { r.ResponseMs = 80 }),
			cause:  CauseResponseSend, matched: MatchBytes,
		},
		{
			name:  "no writes traced at all",
			req:   req(11, 0, 100),
			cause: CauseUnexplained,
		},
		{
			name: "tie between slow write and throttle goes to the write",
			// own write 1..61 = 60 ms, throttle 60 ms
			writes: []*event.Write{wr(11, 1, 61, 100)},
			req:    req(12, 0, 100, func(r *event.Request) { r.ThrottleMs = 60 }),
			cause:  CauseSlowWrite, matched: MatchBytes,
		},
		{
			name: "wait then own slow write: together most, the larger names it",
			// blocked 0..30 by thread 12, own write 30..60: 30+30 of 100
			writes: []*event.Write{wr(12, -5, 30, 500), wr(11, 30, 62, 100)},
			req:    req(13, 0, 100),
			cause:  CauseSlowWrite, matched: MatchBytes,
		},
		{
			name:   "write on another partition does not count",
			writes: []*event.Write{wr(11, 1, 95, 100, func(w *event.Write) { w.Partition = 1 })},
			req:    req(14, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "a slow write that ended before the request is no cause",
			writes: []*event.Write{wr(12, -200, -1, 500), wr(11, 1, 2, 100)},
			req:    req(15, 0, 100),
			cause:  CauseUnexplained, matched: MatchBytes,
		},
		{
			name:   "fsync on the partition is not an append",
			writes: []*event.Write{wr(11, 1, 95, 0, func(w *event.Write) { w.Op = "fsync" })},
			req:    req(16, 0, 100),
			cause:  CauseUnexplained,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := NewIndex()
			for _, w := range tt.writes {
				idx.AddWrite(w)
			}
			for _, c := range tt.commits {
				idx.AddCommit(c)
			}
			for _, l := range tt.locks {
				l.LatencyMs = float64(l.Latency()) / 1e6
				idx.AddLockWait(l)
			}
			e := New(Config{}, idx, tt.lookup)
			e.followers = tt.followers
			f := e.Explain(tt.req)
			if f.Cause != tt.cause || f.Root != tt.root || f.Via != tt.via {
				t.Errorf("cause %q root %q via %q, want %q %q %q; %s; shares %+v", f.Cause, f.Root, f.Via, tt.cause, tt.root, tt.via, f.Detail, f.Shares)
			}
			var matched string
			if w := f.Partitions[0].Write; w != nil {
				matched = w.MatchedBy
			}
			if matched != tt.matched {
				t.Errorf("own write matched by %q, want %q", matched, tt.matched)
			}
			if f.Cause == CauseUnexplained && f.ExplainedMs != 0 {
				t.Errorf("unexplained with explained_ms %v", f.ExplainedMs)
			}
			if f.Cause != CauseUnexplained && f.ExplainedMs < 50 {
				t.Errorf("%s explains only %.1f of %.1f ms", f.Cause, f.ExplainedMs, f.LatencyMs)
			}
			if tt.root == RootJournal && len(f.Commits) == 0 {
				t.Error("journal root without commit evidence")
			}
		})
	}
}

func TestStallsAndSummary(t *testing.T) {
	idx := NewIndex()
	// Two stalls on 7:0 (two partitions each), one on 8:0, and fast writes.
	idx.AddWrite(wr(11, 0, 300, 100))
	idx.AddWrite(wr(12, 5, 300, 100, func(w *event.Write) { w.Partition = 1 }))
	idx.AddWrite(wr(13, 280, 301, 100)) // short: inside, not a stall write
	idx.AddWrite(wr(11, 1000, 1200, 100))
	idx.AddWrite(wr(14, 1100, 1250, 100, func(w *event.Write) { w.Dev = "8:0"; w.Topic = "u" }))
	idx.AddWrite(wr(11, 2000, 2000.1, 100))
	e := New(Config{StallMin: 50 * time.Millisecond}, idx, nil)
	s := e.sum.Stalls
	if len(s) != 3 {
		t.Fatalf("stalls %+v, want 3", s)
	}
	want := []struct {
		dev        string
		start, end float64
		writes     int
		parts      int
	}{{"7:0", 0, 300, 2, 2}, {"7:0", 1000, 1200, 1, 1}, {"8:0", 1100, 1250, 1, 1}}
	for i, w := range want {
		if s[i].Dev != w.dev || !s[i].Start.Equal(at(w.start)) || !s[i].End.Equal(at(w.end)) || s[i].Writes != w.writes || len(s[i].Partitions) != w.parts {
			t.Errorf("stall %d = %+v, want %+v", i, s[i], w)
		}
	}
	f := e.Explain(req(1, -1, 301))
	if f.Cause != CauseSlowWrite || f.Stall == nil || *f.Stall != 0 {
		t.Fatalf("finding %s stall %v", f.Cause, f.Stall)
	}
	e.Explain(req(2, 1990, 2100))
	sum := e.Summary(1000, 100*time.Millisecond, "p99", 10)
	if sum.Slow != 2 || sum.Stalls[0].Requests != 1 {
		t.Errorf("summary slow %d, stall requests %d", sum.Slow, sum.Stalls[0].Requests)
	}
	for _, c := range sum.Causes {
		switch c.Cause {
		case CauseSlowWrite, CauseUnexplained:
			if c.Requests != 1 || c.Share != 0.5 {
				t.Errorf("%s: %+v", c.Cause, c)
			}
		default:
			if c.Requests != 0 {
				t.Errorf("%s: %+v", c.Cause, c)
			}
		}
	}
	if len(sum.Partitions) != 1 || sum.Partitions[0].Partition != "t-0" || sum.Partitions[0].Requests != 2 {
		t.Errorf("partitions %+v", sum.Partitions)
	}
	if len(sum.Devices) != 1 || sum.Devices[0].Dev != "7:0" || sum.Devices[0].MaxWriteMs != 300 {
		t.Errorf("devices %+v", sum.Devices)
	}
}

func TestThreshold(t *testing.T) {
	lats := make([]float64, 0, 1000)
	for i := 1; i <= 1000; i++ {
		lats = append(lats, float64(i))
	}
	tests := []struct {
		cfg  Config
		want time.Duration
		from string
	}{
		{Config{}, 990 * time.Millisecond, "p99"},
		{Config{Percentile: 99.9}, 999 * time.Millisecond, "p99.9"},
		{Config{Percentile: 50}, 500 * time.Millisecond, "p50"},
		{Config{Slow: 42 * time.Millisecond}, 42 * time.Millisecond, "--slow"},
	}
	for _, tt := range tests {
		got, from := Threshold(tt.cfg, lats)
		if got != tt.want || from != tt.from {
			t.Errorf("%+v: %v %s, want %v %s", tt.cfg, got, from, tt.want, tt.from)
		}
	}
	if got, _ := Threshold(Config{}, nil); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestParseRequestID(t *testing.T) {
	tests := []struct {
		in     string
		client string
		corr   int32
		bad    bool
	}{
		{"127.0.0.1:40000/17", "127.0.0.1:40000", 17, false},
		{"[::1]:40000/3", "[::1]:40000", 3, false},
		{"40000/3", "40000", 3, false},
		{"40000", "", 0, true},
		{"/3", "", 0, true},
		{"x/y", "", 0, true},
	}
	for _, tt := range tests {
		id, err := ParseRequestID(tt.in)
		if (err != nil) != tt.bad || !tt.bad && (id.Client != tt.client || id.CorrelationID != tt.corr) {
			t.Errorf("%q: %+v %v", tt.in, id, err)
		}
	}
	id, _ := ParseRequestID("40000/3")
	if !id.matches("127.0.0.1:40000", 3) || id.matches("127.0.0.1:40001", 3) || id.matches("127.0.0.1:40000", 4) {
		t.Error("port-only id matching")
	}
}

func TestScanFields(t *testing.T) {
	tests := []struct {
		line     string
		key      int
		answered bool
		lat      float64
		client   string
		ok       bool
	}{
		{`{"arrival":"2026-11-21T12:00:00Z","latency_ms":12.5,"client":"127.0.0.1:40000","api":"Produce","api_key":0,"client_id":"p","answered":true}`, 0, true, 12.5, "127.0.0.1:40000", true},
		{`{"latency_ms":0,"client":"[::1]:5","api_key":1,"answered":false}`, 1, false, 0, "[::1]:5", true},
		// a client id that spells the keys: their quotes are escaped
		{`{"latency_ms":3,"client":"c:1","api_key":0,"client_id":"\"api_key\":7,\"latency_ms\":9,\"client\":\"x","answered":true}`, 0, true, 3, "c:1", true},
		{`{"latency_ms":"x","client":"c:1","api_key":0,"answered":true}`, 0, false, 0, "", false},
		{`{"api_key":0,"client":"c:1","answered":true}`, 0, false, 0, "", false},
		{`{"latency_ms":1,"client":"c:1","api_key":0,"answered":maybe}`, 0, false, 0, "", false},
		{`{"latency_ms":1,"api_key":0,"answered":true}`, 0, false, 0, "", false},
		{`{"latency_ms":1,"client":"a\"b","api_key":0,"answered":true}`, 0, false, 0, "", false},
		{`{"latency_ms":1e3,"client":"c:1","api_key":0,"answered":true}`, 0, true, 1000, "c:1", true},
	}
	for _, tt := range tests {
		key, answered, lat, client, ok := scanFields([]byte(tt.line))
		if ok != tt.ok || ok && (key != tt.key || answered != tt.answered || lat != tt.lat || string(client) != tt.client) {
			t.Errorf("%s: %d %v %v %q %v", tt.line, key, answered, lat, client, ok)
		}
	}
}

// FuzzScanFields: whenever the fast path answers, it agrees with
// encoding/json on a valid line.
func FuzzScanFields(f *testing.F) {
	f.Add(`{"latency_ms":12.5,"client":"c:1","api_key":0,"answered":true}`)
	f.Add(`{"latency_ms":3,"client":"c:1","api_key":0,"client_id":"\"api_key\":7","answered":true}`)
	f.Fuzz(func(t *testing.T, line string) {
		key, answered, lat, client, ok := scanFields([]byte(line))
		var v struct {
			APIKey    *int     `json:"api_key"`
			Answered  *bool    `json:"answered"`
			LatencyMs *float64 `json:"latency_ms"`
			Client    *string  `json:"client"`
		}
		if !ok || json.Unmarshal([]byte(line), &v) != nil || v.APIKey == nil || v.Answered == nil || v.LatencyMs == nil || v.Client == nil {
			return
		}
		if *v.APIKey != key || *v.Answered != answered || *v.LatencyMs != lat || *v.Client != string(client) {
			t.Errorf("%s: fast %d %v %v, json %d %v %v", line, key, answered, lat, *v.APIKey, *v.Answered, *v.LatencyMs)
		}
	})
}

// TestQueuedBehindConnection: a request that waited on its connection
// behind a request whose append hung is put on that append, whatever
// partition it was on; the same timeline from another connection is not.
func TestQueuedBehindConnection(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(11, 1, 300, 100))                                                              // R1's own, partition 0
	idx.AddWrite(wr(12, 300.2, 300.3, 100, func(w *event.Write) { w.Partition = 1 }))              // R2's own
	idx.AddWrite(wr(13, 300.5, 300.6, 100, func(w *event.Write) { w.Partition = 2 }))              // R3's own
	idx.AddWrite(wr(14, 300.7, 300.8, 100, func(w *event.Write) { w.Partition = 3; w.Bytes = 7 })) // other
	e := New(Config{}, idx, nil)
	r1 := req(1, 0, 301)
	f1 := e.Explain(r1)
	if f1.Cause != CauseSlowWrite {
		t.Fatalf("R1: %s", f1.Detail)
	}
	onPart := func(p int32) func(*event.Request) {
		return func(r *event.Request) { r.Partitions[0].Partition = p }
	}
	// R2 arrived at 5 ms, taken by the broker when R1's response left.
	r2 := req(2, 5, 301.5, onPart(1), func(r *event.Request) { r.QueuedMs, r.BrokerMs = 296, 0.5 })
	f2 := e.Explain(r2)
	if f2.Cause != CauseLockWait || f2.Via != ViaConnection || f2.QueuedBehind == nil || f2.QueuedBehind.CorrelationID != 1 {
		t.Fatalf("R2: %s %s %+v: %s", f2.Cause, f2.Via, f2.QueuedBehind, f2.Detail)
	}
	// R3 behind R2: the chain leads to the same write.
	r3 := req(3, 6, 302, onPart(2), func(r *event.Request) { r.QueuedMs, r.BrokerMs = 295.5, 0.5 })
	f3 := e.Explain(r3)
	if f3.Cause != CauseLockWait || f3.QueuedBehind == nil || len(f3.QueuedBehind.Writes) == 0 || f3.QueuedBehind.Writes[0].TID != 11 {
		t.Fatalf("R3: %s %+v: %s", f3.Cause, f3.QueuedBehind, f3.Detail)
	}
	// The same timeline on another connection has nothing to queue behind.
	r4 := req(4, 5, 301.5, onPart(3), func(r *event.Request) { r.Client = "127.0.0.1:40001"; r.QueuedMs, r.BrokerMs = 296, 0.5 })
	if f4 := e.Explain(r4); f4.Cause != CauseUnexplained || f4.QueuedBehind != nil {
		t.Fatalf("R4 from another connection: %s: %s", f4.Cause, f4.Detail)
	}
}

// TestJournalRootNeedsTheSlowWrite: a short commit under a fast append
// that happened to overlap the wait is no root.
func TestJournalRootNeedsTheSlowWrite(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(12, -10, 95, 500))  // the slow append waited on
	idx.AddWrite(wr(13, 95.1, 95.2, 7)) // another fast append in the wait
	idx.AddWrite(wr(11, 96, 96.1, 100)) // its own
	idx.AddCommit(commit(95.05, 95.3))  // short commit over the fast one
	f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
	if f.Cause != CauseLockWait || f.Root != "" || len(f.Commits) != 0 {
		t.Fatalf("%s root %q commits %d: %s", f.Cause, f.Root, len(f.Commits), f.Detail)
	}
}

// TestSlowWritesAndCommitSpans: slow appends are listed with the commits
// on their device that overlapped them, a commit counting from when it was
// requested.
func TestSlowWritesAndCommitSpans(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(11, 0, 30, 100))  // overlaps the running commit
	idx.AddWrite(wr(12, 40, 55, 100)) // waits while the next one is requested
	idx.AddWrite(wr(13, 70, 85, 100)) // no commit
	idx.AddWrite(wr(14, 90, 91, 100)) // fast
	c1 := commit(10, 45)
	c2 := commit(60, 65)
	c2.Phases = &event.JournalPhases{RequestDelayMs: 15} // requested at 45
	other := commit(70, 85)
	other.Dev = "8:0"
	for _, c := range []*event.JournalCommit{c1, c2, other} {
		idx.AddCommit(c)
	}
	s := New(Config{SlowWrite: 10 * time.Millisecond}, idx, nil).Summary(0, 0, "p99", 10)
	if s.SlowWritesTotal != 3 || s.SlowWritesUnderCommit != 2 || len(s.SlowWrites) != 3 {
		t.Fatalf("total %d under commit %d listed %d", s.SlowWritesTotal, s.SlowWritesUnderCommit, len(s.SlowWrites))
	}
	want := map[int][]float64{11: {10}, 12: {10, 60}, 13: nil}
	for _, sw := range s.SlowWrites {
		var got []float64
		for _, c := range sw.Commits {
			got = append(got, float64(c.Start.Sub(t0))/1e6)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[sw.TID]) {
			t.Errorf("tid %d: commits starting at %v ms, want %v", sw.TID, got, want[sw.TID])
		}
	}
}

// TestLockOwnerFromJFR: JFR names the thread holding the monitor; its
// write in that time is the blocking write, marked as such.
func TestLockOwnerFromJFR(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(12, -5, 90, 500))     // the owner's slow append
	idx.AddWrite(wr(13, 2, 2.1, 300))     // someone else's fast append
	idx.AddWrite(wr(11, 90.1, 90.2, 100)) // its own
	l := &event.LockWait{Start: at(1), End: at(90), TID: 11, Monitor: "java.lang.Object", OwnerTID: 12, Owner: "data-plane-kafka-request-handler-1"}
	l.LatencyMs = 89
	idx.AddLockWait(l)
	f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
	if f.Cause != CauseLockWait || f.Via != ViaPartitionLock || len(f.LockWaits) != 1 {
		t.Fatalf("%s %s %d lock waits: %s", f.Cause, f.Via, len(f.LockWaits), f.Detail)
	}
	var owner *WriteEvidence
	for i, b := range f.Partitions[0].Blocking {
		if b.MatchedBy == MatchLockOwner {
			owner = &f.Partitions[0].Blocking[i]
		}
	}
	if owner == nil || owner.TID != 12 {
		t.Fatalf("owner's write not marked: %+v", f.Partitions[0].Blocking)
	}
}

// TestRunQueuedBehindFastEnough: the request a slow one queued behind on
// its connection is explained for context even when it is itself below
// the threshold, and is not counted.
func TestRunQueuedBehindFastEnough(t *testing.T) {
	r1 := req(1, 0, 290)                                                                                             // 290 ms: not slow
	r2 := req(2, 5, 300, func(r *event.Request) { r.Partitions[0].Partition = 1; r.QueuedMs, r.BrokerMs = 285, 10 }) // 295 ms
	other := req(9, 1, 2, func(r *event.Request) { r.Client = "127.0.0.1:40001" })
	idx := indexOf(t, []*event.Write{wr(11, 1, 289, 100), wr(12, 291, 291.1, 100, func(w *event.Write) { w.Partition = 1 })})
	got, sum := runFile(t, New(Config{Slow: 292 * time.Millisecond}, idx, nil), []*event.Request{other, r1, r2})
	if len(got) != 1 || got[0].CorrelationID != 2 || got[0].Cause != CauseLockWait || got[0].Via != ViaConnection {
		t.Fatalf("findings %+v", got)
	}
	if sum.Slow != 1 || sum.ProduceRequests != 3 {
		t.Errorf("summary slow %d of %d", sum.Slow, sum.ProduceRequests)
	}
}

// TestKernelWaits: a handler that blocked in the file system outside its
// write call (a page fault on the index) is a slow write; a wait outside
// the file system is not; a request queued behind it on the connection is
// a lock-wait.
func TestKernelWaits(t *testing.T) {
	fault := []string{"__schedule", "schedule", "percpu_rwsem_wait", "__percpu_down_read", "ext4_page_mkwrite", "do_page_mkwrite", "handle_mm_fault"}
	other := []string{"__schedule", "schedule", "futex_wait_queue", "futex_wait"}
	idx := NewIndex()
	idx.AddWrite(wr(11, 1, 1.1, 100)) // its own append: fast
	idx.AddWait(&event.KernelWait{Kind: event.KindKernelWait, Start: at(2), End: at(95), LatencyMs: 93, TID: 11, Stack: fault})
	idx.AddWrite(wr(12, 200, 200.1, 100, func(w *event.Write) { w.Partition = 1 }))
	idx.AddWait(&event.KernelWait{Kind: event.KindKernelWait, Start: at(201), End: at(290), LatencyMs: 89, TID: 12, Stack: other})
	idx.AddWrite(wr(13, 96, 96.1, 100, func(w *event.Write) { w.Partition = 2 }))
	e := New(Config{}, idx, nil)
	f := e.Explain(req(1, 0, 96))
	if f.Cause != CauseSlowWrite || len(f.KernelWaits) != 1 || !strings.Contains(f.Detail, "ext4_page_mkwrite") {
		t.Fatalf("page fault: %s, %d waits: %s", f.Cause, len(f.KernelWaits), f.Detail)
	}
	// Queued on the same connection behind it.
	f2 := e.Explain(req(2, 5, 97, func(r *event.Request) { r.Partitions[0].Partition = 2; r.QueuedMs, r.BrokerMs = 91, 1 }))
	if f2.Cause != CauseLockWait || f2.Via != ViaConnection || f2.QueuedBehind == nil {
		t.Fatalf("queued behind a kernel wait: %s %s: %s", f2.Cause, f2.Via, f2.Detail)
	}
	f3 := e.Explain(req(3, 199, 291, func(r *event.Request) { r.Client = "127.0.0.1:40001"; r.Partitions[0].Partition = 1 }))
	if f3.Cause != CauseUnexplained || len(f3.KernelWaits) != 0 {
		t.Fatalf("futex wait counted: %s: %s", f3.Cause, f3.Detail)
	}
}

// TestCPUSteal: steal taken from the broker's threads that covers most of
// a request names cpu-steal, even over the slow write it stretched; steal
// from another process or an idle CPU is not joined; too little steal
// leaves the other causes be; steal on two CPUs is not added up.
func TestCPUSteal(t *testing.T) {
	steal := func(cpu int, a, b, stolen float64, thread string) *event.CPUSteal {
		s := &event.CPUSteal{Kind: event.KindCPUSteal, Start: at(a), End: at(b), CPU: cpu, StolenMs: stolen, TID: 11, PID: 10, Thread: thread}
		if thread == "" {
			s.TID, s.PID = 0, 0
		}
		return s
	}
	const handler = "data-plane-kafka-request-handler-0"
	tests := []struct {
		name     string
		writes   []*event.Write
		steals   []*event.CPUSteal
		cause    string
		stealMs  float64
		evidence int
	}{
		{"steal over its own slow write", []*event.Write{wr(11, 1, 95, 100)},
			[]*event.CPUSteal{steal(1, 2, 90, 80, handler)}, CauseCPUSteal, 80, 1},
		{"several intervals on one CPU add up", []*event.Write{wr(11, 1, 1.1, 100)},
			[]*event.CPUSteal{steal(1, 2, 30, 25, handler), steal(1, 31, 60, 28, handler)}, CauseCPUSteal, 53, 2},
		{"two CPUs are not added up", []*event.Write{wr(11, 1, 1.1, 100)},
			[]*event.CPUSteal{steal(0, 2, 40, 35, handler), steal(1, 2, 40, 35, handler)}, CauseUnexplained, 35, 2},
		{"idle CPU's steal is not the broker's", []*event.Write{wr(11, 1, 1.1, 100)},
			[]*event.CPUSteal{steal(1, 2, 90, 80, "")}, CauseUnexplained, 0, 0},
		{"a little steal leaves the slow write", []*event.Write{wr(11, 1, 95, 100)},
			[]*event.CPUSteal{steal(1, 2, 10, 5, handler)}, CauseSlowWrite, 5, 1},
		{"steal long before the request", []*event.Write{wr(11, 1, 95, 100)},
			[]*event.CPUSteal{steal(1, -300, -200, 80, handler)}, CauseSlowWrite, 0, 0},
		// Accounted at a switch 5 ms into the request, taken before it:
		// the vCPU may have been back a tick before the switch.
		{"accounted late", []*event.Write{wr(11, 1, 1.1, 100)},
			[]*event.CPUSteal{steal(1, 4, 5, 60, handler)}, CauseCPUSteal, 60, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := NewIndex()
			for _, w := range tt.writes {
				idx.AddWrite(w)
			}
			for _, s := range tt.steals {
				idx.AddSteal(s)
			}
			f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
			if f.Cause != tt.cause || f.Shares[CauseCPUSteal] != tt.stealMs || len(f.Steals) != tt.evidence {
				t.Fatalf("cause %s, steal %.1f ms, %d intervals; want %s, %.1f, %d: %s", f.Cause, f.Shares[CauseCPUSteal], len(f.Steals),
					tt.cause, tt.stealMs, tt.evidence, f.Detail)
			}
			if f.Cause == CauseCPUSteal && !strings.Contains(f.Detail, handler) {
				t.Errorf("detail does not name the thread: %s", f.Detail)
			}
		})
	}
}
