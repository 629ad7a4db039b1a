package fsbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/recording"
)

// TestCheckRecordDir: --record takes a new or empty directory outside the
// work dir and the inputs, and nothing else.
func TestCheckRecordDir(t *testing.T) {
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	libs := filepath.Join(tmp, "libs")
	full := filepath.Join(tmp, "full")
	file := filepath.Join(tmp, "file")
	empty := filepath.Join(tmp, "empty")
	for _, d := range []string{work, libs, full, empty} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	os.WriteFile(file, nil, 0o644)
	os.Symlink(empty, filepath.Join(tmp, "link"))
	cases := []struct {
		dir  string
		says string // "" : taken
	}{
		{filepath.Join(tmp, "new"), ""},
		{empty, ""},
		{full, "not empty"},
		{file, "not a directory"},
		{filepath.Join(tmp, "link"), "not a directory"},
		{work, "inside"},
		{filepath.Join(work, "rec"), "inside"},
		{filepath.Join(libs, "rec"), "inside"},
	}
	for _, c := range cases {
		err := CheckRecordDir(c.dir, work, libs)
		if c.says == "" && err != nil || c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.says)
		}
	}
}

// TestRecordsTrial: the first trial by default, every one with all,
// none without --record.
func TestRecordsTrial(t *testing.T) {
	cases := []struct {
		record, trials string
		want           []bool // trials 1, 2, 3
	}{
		{"", "", []bool{false, false, false}},
		{"/r", RecordFirst, []bool{true, false, false}},
		{"/r", RecordAll, []bool{true, true, true}},
	}
	for _, c := range cases {
		cfg := Config{Record: c.record, RecordTrials: c.trials}
		for i, want := range c.want {
			if got := cfg.recordsTrial(i + 1); got != want {
				t.Errorf("%q %q trial %d: %v", c.record, c.trials, i+1, got)
			}
		}
	}
}

// writeJournalRecording writes a recording of 100 produce requests of
// 2 ms and 4 of 300 ms, each slow one on an append that a jbd2 commit
// overlapped, as on ext4 under fsync noise.
func writeJournalRecording(t *testing.T, dir string) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range 104 {
		a, lat := float64(i*50), 2.0
		slow := i%26 == 25
		if slow {
			lat = 300
		}
		if err := w.Request(&event.Request{Arrival: at(a), End: at(a + lat), LatencyMs: lat, BrokerMs: lat, Client: "127.0.0.1:40000",
			Broker: "127.0.0.1:19700", API: "Produce", APIVersion: 11, CorrelationID: int32(i), Answered: true,
			Partitions: []event.Partition{{Topic: "kscope-labfs", Partition: 0, Records: 1, Bytes: 1000 + i}}}); err != nil {
			t.Fatal(err)
		}
		wlat := 0.05
		if slow {
			wlat = lat - 2
			if err := w.Commit(&event.JournalCommit{Kind: event.KindJBD2Commit, Start: at(a), End: at(a + lat - 1), LatencyMs: lat - 1, Dev: "7:3", FS: "ext4", TID: uint32(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Write(&event.Write{Start: at(a + 0.5), End: at(a + 0.5 + wlat), LatencyMs: wlat, TID: 7, Thread: "data-plane-kafk",
			Op: "write", Bytes: int64(1000 + i), Offset: int64(i * 1100), File: "kscope-labfs-0/00000000000000000000.log", Topic: "kscope-labfs", Dev: "7:3"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&recording.Meta{Tool: "test", Host: "lab", Start: t0, End: at(6000)}); err != nil {
		t.Fatal(err)
	}
}

// TestExplainRecording: explain's summary of a recording comes back as
// the report's line: the slow requests, their causes most first, and the
// journal at their root; a missing recording is an error in the line,
// not a failure of the run.
func TestExplainRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ext4-1")
	writeJournalRecording(t, dir)
	es := explainRecording(context.Background(), dir)
	if es.Error != "" {
		t.Fatal(es.Error)
	}
	if es.Produce != 104 || es.Slow == 0 || len(es.Causes) == 0 || es.Causes[0].Cause != explain.CauseSlowWrite || es.JournalRoot == 0 {
		t.Fatalf("%+v", es)
	}
	for _, want := range []string{"produce requests slow", "slow-write", "journal root", "under a journal commit"} {
		if !strings.Contains(es.Line(), want) {
			t.Errorf("line %q lacks %q", es.Line(), want)
		}
	}
	missing := explainRecording(context.Background(), filepath.Join(t.TempDir(), "none"))
	if missing.Error == "" || !strings.HasPrefix(missing.Line(), "explain failed: ") {
		t.Errorf("missing recording: %+v", missing)
	}
}

// TestSummarizeExplain: causes without requests are left out, the rest
// sorted most first, and the line bounds how many it names.
func TestSummarizeExplain(t *testing.T) {
	s := &explain.Summary{ProduceRequests: 1000, Slow: 10, ThresholdMs: 8, ThresholdFrom: "p99", Journal: 5}
	for _, c := range []struct {
		name string
		n    int64
	}{{"lock-wait", 2}, {"none", 0}, {"slow-write", 6}, {"a", 1}, {"b", 1}, {"c", 1}} {
		s.Causes = append(s.Causes, explain.CauseStat{Cause: c.name, Requests: c.n, Share: float64(c.n) / 10})
	}
	es := summarizeExplain(s)
	if len(es.Causes) != 5 || es.Causes[0].Cause != "slow-write" || es.Causes[1].Cause != "lock-wait" {
		t.Fatalf("%+v", es.Causes)
	}
	line := es.Line()
	for _, want := range []string{"10 of 1000", "> 8.00 ms, p99", "slow-write 60.0%, lock-wait 20.0%", "1 more", "journal root 5 (50.0%)"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	none := summarizeExplain(&explain.Summary{ProduceRequests: 5, ThresholdFrom: "p99"})
	if strings.Contains(none.Line(), "journal root") {
		t.Errorf("no slow request: %q", none.Line())
	}
}
