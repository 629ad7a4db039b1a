package explain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// fastCommitLine is an ext4 fast commit as iotrace records it in
// journal.jsonl, by thread tid from a to b ms after t0.
func fastCommitLine(dev string, tid int, a, b float64, status string, blocks int) string {
	return fmt.Sprintf(`{"kind":"ext4_fast_commit","start":%q,"end":%q,"latency_ms":%g,"dev":%q,"fs":"ext4","tid":7,`+
		`"fast_commit":{"pid":100,"thread_tid":%d,"blocks":%d,"status":%q}}`,
		at(a).Format(time.RFC3339Nano), at(b).Format(time.RFC3339Nano), b-a, dev, tid, blocks, status)
}

// TestFastCommitRoot: on ext4 with fast commits a slow append (its own,
// or the one it waited behind) that a fast commit on its device
// overlapped for most of its time has the journal at its root, with the
// fast commit as evidence (its thread, duration, blocks, and whether it
// fell back to a full commit); the same append without one does not. The
// fast commits come through a journal.jsonl, as explain reads a
// recording.
func TestFastCommitRoot(t *testing.T) {
	tests := []struct {
		name       string
		writes     []*event.Write
		journal    []string
		cause      string
		root       string
		wantDetail []string
		notDetail  []string
	}{
		{
			name:       "another thread's fast commit under the slow append",
			writes:     []*event.Write{wr(11, 1, 95, 100)},
			journal:    []string{fastCommitLine("7:0", 40, 0.5, 96, "done", 3)},
			cause:      CauseSlowWrite,
			root:       RootJournal,
			wantDetail: []string{"root: ext4 fast commit on 7:0 by tid 40 took 95.5 ms (done, 3 blocks)"},
			notDetail:  []string{"fell back"},
		},
		{
			name:       "the appending thread's own fast commit (O_SYNC)",
			writes:     []*event.Write{wr(11, 1, 95, 100)},
			journal:    []string{fastCommitLine("7:0", 11, 2, 94, "done", 1)},
			cause:      CauseSlowWrite,
			root:       RootJournal,
			wantDetail: []string{"fast commit on 7:0 by tid 11 took 92.0 ms"},
		},
		{
			name:       "ineligible fast commit that fell back to a full commit",
			writes:     []*event.Write{wr(11, 1, 95, 100)},
			journal:    []string{fastCommitLine("7:0", 40, 0, 97, "ineligible", 0)},
			cause:      CauseSlowWrite,
			root:       RootJournal,
			wantDetail: []string{"ext4 fast commit", "(ineligible, 0 blocks, fell back to a full jbd2 commit)"},
		},
		{
			name:       "lock wait behind a write under a fast commit",
			writes:     []*event.Write{wr(12, -10, 95, 500), wr(11, 95.1, 95.2, 100)},
			journal:    []string{fastCommitLine("7:0", 40, -12, 96, "skipped", 0)},
			cause:      CauseLockWait,
			root:       RootJournal,
			wantDetail: []string{"fast commit on 7:0 by tid 40", "skipped"},
		},
		{
			name:      "the same append without a fast commit",
			writes:    []*event.Write{wr(11, 1, 95, 100)},
			cause:     CauseSlowWrite,
			notDetail: []string{"root", "fast commit"},
		},
		{
			name:      "fast commit on another device",
			writes:    []*event.Write{wr(11, 1, 95, 100)},
			journal:   []string{fastCommitLine("8:0", 40, 0.5, 96, "done", 3)},
			cause:     CauseSlowWrite,
			notDetail: []string{"root", "fast commit"},
		},
		{
			name:      "brief fast commit overlap",
			writes:    []*event.Write{wr(11, 1, 95, 100)},
			journal:   []string{fastCommitLine("7:0", 40, 90, 120, "done", 3)},
			cause:     CauseSlowWrite,
			notDetail: []string{"root", "fast commit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := NewIndex()
			for _, w := range tt.writes {
				idx.AddWrite(w)
			}
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(tt.journal, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := LoadIO(idx, path); err != nil {
				t.Fatal(err)
			}
			f := New(Config{}, idx, nil).Explain(req(1, 0, 100))
			if f.Cause != tt.cause || f.Root != tt.root {
				t.Errorf("cause %q root %q, want %q %q; %s", f.Cause, f.Root, tt.cause, tt.root, f.Detail)
			}
			if tt.root == RootJournal && (len(f.Commits) == 0 || f.Commits[0].Kind != "ext4_fast_commit") {
				t.Errorf("journal root without the fast commit as evidence: %+v", f.Commits)
			}
			for _, want := range tt.wantDetail {
				if !strings.Contains(f.Detail, want) {
					t.Errorf("detail %q, want %q in it", f.Detail, want)
				}
			}
			for _, not := range tt.notDetail {
				if strings.Contains(f.Detail, not) {
					t.Errorf("detail %q has %q", f.Detail, not)
				}
			}
		})
	}
}
