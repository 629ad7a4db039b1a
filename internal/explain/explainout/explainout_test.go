package explainout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.Local)

func finding() *explain.Finding {
	own := &explain.WriteEvidence{Write: event.Write{Start: t0.Add(time.Millisecond), End: t0.Add(95 * time.Millisecond), LatencyMs: 94,
		TID: 11, Thread: "data-plane-kafk", Op: "write", Bytes: 100, Offset: 8192, File: "t-0/00000000000000000000.log", Topic: "t", Dev: "7:0"},
		MatchedBy: explain.MatchMessageID}
	return &explain.Finding{Arrival: t0, End: t0.Add(100 * time.Millisecond), LatencyMs: 100, BrokerMs: 100,
		Client: "127.0.0.1:40000", ClientID: "evil\x1b[31m", CorrelationID: 7, Cause: explain.CauseSlowWrite, Root: explain.RootJournal,
		ExplainedMs: 94, Detail: "its append took 94 ms",
		Partitions: []explain.PartitionEvidence{{Topic: "t", Partition: 0, Bytes: 100, MessageIDs: []string{"id\n1", "id2"}, MoreMessageIDs: 3, Write: own}},
		Commits:    []event.JournalCommit{{Kind: event.KindJBD2Commit, Start: t0, End: t0.Add(96 * time.Millisecond), LatencyMs: 96, Dev: "7:0"}}}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, "table", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finding(finding()); err != nil {
		t.Fatal(err)
	}
	sum := &explain.Summary{ProduceRequests: 1000, ThresholdMs: 90, ThresholdFrom: "p99", Slow: 1, SlowLatencyMs: 100,
		Causes: []explain.CauseStat{{Cause: explain.CauseSlowWrite, Requests: 1, Share: 1, LatencyMs: 100, ExplainedMs: 94}}, Journal: 1,
		Stalls:    []explain.Stall{{Dev: "7:0", Start: t0, End: t0.Add(95 * time.Millisecond), DurationMs: 95, Writes: 1, Partitions: []string{"t-0"}, Requests: 1}},
		MatchedBy: map[string]int64{explain.MatchMessageID: 1}}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"START TIME", "12:00:00.000", "100 ms", `id\x0a1 (+4)`, "t-0/00000000000000000000.log", "slow-write/journal",
		"127.0.0.1:40000/7", "8", "100.0%", "root journal", "STALLS", "7:0", "message-id 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b") || strings.Contains(out, "id\n1") {
		t.Errorf("control characters from the wire printed raw:\n%q", out)
	}
}

func TestJSONAndTimeline(t *testing.T) {
	var b bytes.Buffer
	w, _ := NewWriter(&b, "json", true)
	w.Finding(finding())
	w.Summary(&explain.Summary{Slow: 1})
	w.Flush()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], `{"summary":`) {
		t.Fatalf("%d lines: %s", len(lines), b.String())
	}
	var f explain.Finding
	if err := json.Unmarshal([]byte(lines[0]), &f); err != nil || f.Cause != explain.CauseSlowWrite || f.Partitions[0].Write.MatchedBy != explain.MatchMessageID {
		t.Fatalf("%v %+v", err, f)
	}
	b.Reset()
	if err := WriteTimeline(&b, finding()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	order := []string{"request arrives", "jbd2_commit on 7:0 starts", "own append to t-0 starts", "own append to t-0 ends after 94.0 ms",
		"jbd2_commit on 7:0 ends", "response sent", "cause: slow-write (root: journal)"}
	pos := 0
	for _, s := range order {
		i := strings.Index(out[pos:], s)
		if i < 0 {
			t.Fatalf("timeline lacks %q after position %d:\n%s", s, pos, out)
		}
		pos += i
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequence printed raw")
	}
}

// TestTimelineReplication: the follower fetch that ended the wait, and
// the follower's fetch before it, are placed in the timeline.
func TestTimelineReplication(t *testing.T) {
	f := finding()
	f.Cause, f.Root, f.Commits = explain.CauseReplication, "", nil
	f.Partitions[0].Write.End = t0.Add(1200 * time.Microsecond)
	prev := t0.Add(500 * time.Microsecond)
	f.Replication = []explain.ReplicaFetch{{Replica: 2, Topic: "t", Partition: 0, LastOffset: 40, FetchOffset: 41,
		FetchArrival: t0.Add(80 * time.Millisecond), LateMs: 78.8, SilentMs: 79.5, PrevFetchArrival: &prev, Decisive: true}}
	var b bytes.Buffer
	if err := WriteTimeline(&b, f); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	order := []string{"request arrives", "follower 2's previous fetch", "own append to t-0 ends",
		"follower 2 fetches t-0 from offset 41, past the request's last offset 40, 78.8 ms after the append (silent up to 79.5 ms), the last needed", "response sent", "cause: replication"}
	pos := 0
	for _, s := range order {
		i := strings.Index(out[pos:], s)
		if i < 0 {
			t.Fatalf("timeline lacks %q after position %d:\n%s", s, pos, out)
		}
		pos += i
	}
}

// TestFetchTimelineAndSummary: a fetch's timeline shows its purgatory,
// its reads from disk and its split; the summary counts fetches.
func TestFetchTimelineAndSummary(t *testing.T) {
	f := &explain.Finding{Arrival: t0, End: t0.Add(302 * time.Millisecond), LatencyMs: 302, BrokerMs: 302, ResponseMs: 300, API: "Fetch",
		Client: "127.0.0.1:41000", ClientID: "backfill\x1b", CorrelationID: 7, Cause: explain.CauseDiskRead, ExplainedMs: 250,
		FetchSplit: &fetchsplit.Split{TotalMs: 302, PurgatoryMs: 0, OtherMs: 2, ReadingMs: 250, DiskMs: 250, SendingMs: 50, AbnormalMs: 300,
			Basis: fetchsplit.BasisDataThere},
		DiskReads: []event.KernelWait{{Start: t0.Add(20 * time.Millisecond), End: t0.Add(270 * time.Millisecond), LatencyMs: 250, TID: 21,
			Stack: []string{"__schedule", "io_schedule", "folio_wait_bit_common", "filemap_get_pages"}}},
		PagesFromDisk: 256, PageCacheAdds: []event.PageCacheAdds{{Start: t0.Add(19 * time.Millisecond), TID: 21, Dev: "8:0", Inode: 77, Pages: 256}}}
	var b bytes.Buffer
	if err := WriteTimeline(&b, f); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"request arrives: Fetch v0 from 127.0.0.1:41000 (backfill\\x1b)", "network thread tid 21 sleeps reading from disk", "tid 21 adds 256 pages of inode 77 on 8:0 to the page cache",
		"split: purgatory 0.0 ms, other wait 2.0 ms, reading 250.0 ms (disk 250.0), sending 50.0 ms; slow: 300.0 ms", "cause: disk-read"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteSummaryTable(&b, &explain.Summary{API: explain.APIFetch, FetchRequests: 40, ThresholdMs: 100, ThresholdFrom: "--slow", Slow: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "40 answered consumer fetches; slow beyond their purgatory: >= 100.0 ms (--slow): 1 fetches") {
		t.Errorf("summary:\n%s", b.String())
	}
}
