package recording

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestFastCommitRoundTrip: an ext4 fast commit the recorder writes to
// journal.jsonl reads back as the same commit, thread, blocks and status
// included, next to a jbd2 commit (the reader skips kinds it does not
// know, so a kind missing from the table would be lost without a word).
func TestFastCommitRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	in := []*event.JournalCommit{
		{Kind: event.KindJBD2Commit, Start: now, End: now.Add(5 * time.Millisecond), LatencyMs: 5, Dev: "7:0", FS: "ext4", TID: 9},
		{Kind: event.KindExt4FastCommit, Start: now.Add(time.Millisecond), End: now.Add(3 * time.Millisecond), LatencyMs: 2,
			Dev: "7:0", FS: "ext4", TID: 9, FastCommit: &event.FastCommit{PID: 6, TID: 43, Blocks: 2, Status: event.FastCommitDone}},
		{Kind: event.KindExt4FastCommit, Start: now.Add(4 * time.Millisecond), End: now.Add(90 * time.Millisecond), LatencyMs: 86,
			Dev: "7:0", FS: "ext4", TID: 10, FastCommit: &event.FastCommit{PID: 6, TID: 44, Status: event.FastCommitIneligible}},
	}
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range in {
		if err := w.Commit(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&Meta{Tool: "test", Start: now, End: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	var out []*event.JournalCommit
	err = ReadIO(filepath.Join(dir, JournalFile), IOHandlers{Commit: func(c *event.JournalCommit) error {
		cp := *c
		out = append(out, &cp)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read back %d commits, wrote %d", len(out), len(in))
	}
	for i := range in {
		if !reflect.DeepEqual(out[i], in[i]) {
			t.Errorf("commit %d read back as %+v (%+v), wrote %+v (%+v)", i, *out[i], out[i].FastCommit, *in[i], in[i].FastCommit)
		}
	}
}
