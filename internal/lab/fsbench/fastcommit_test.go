package fsbench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestFastCommitFigures: the tracer's ext4 fast commits are counted apart
// from the jbd2 commits (the journal columns keep meaning jbd2 commits or
// iclog writes), with those that fell back to a full commit, and only
// when they start in the measured window.
func TestFastCommitFigures(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	win := &window{}
	win.set(start, 10*time.Second)
	tr := &tracing{win: win, writes: newSeries(), commits: newSeries(), kinds: map[string]int64{}, fastCommits: newSeries()}
	commit := func(kind string, atMs, latMs float64, fc *event.FastCommit) *event.JournalCommit {
		s := start.Add(time.Duration(atMs * float64(time.Millisecond)))
		return &event.JournalCommit{Kind: kind, Start: s, End: s.Add(time.Duration(latMs * float64(time.Millisecond))),
			LatencyMs: latMs, Dev: "7:0", FS: "ext4", FastCommit: fc}
	}
	for _, c := range []*event.JournalCommit{
		commit(event.KindJBD2Commit, 100, 6, nil),
		commit(event.KindExt4FastCommit, 200, 2, &event.FastCommit{TID: 5, Blocks: 1, Status: event.FastCommitDone}),
		commit(event.KindExt4FastCommit, 300, 2.5, &event.FastCommit{TID: 5, Blocks: 2, Status: event.FastCommitDone}),
		commit(event.KindExt4FastCommit, 400, 300, &event.FastCommit{TID: 6, Status: event.FastCommitIneligible}),
		commit(event.KindExt4FastCommit, -50, 1, &event.FastCommit{TID: 6, Status: event.FastCommitDone}), // before the window
	} {
		if err := tr.onCommit(c); err != nil {
			t.Fatal(err)
		}
	}
	r := &runner{res: &Result{BucketEdgesMs: bucketEdgesMs(65)}}
	var rr RunResult
	r.journalFigures(&rr, tr)
	if rr.Journal != 1 || rr.JournalKind != event.KindJBD2Commit {
		t.Errorf("journal: %d commits of kind %q, want the one jbd2 commit", rr.Journal, rr.JournalKind)
	}
	if rr.FastCommits != 3 || rr.FastCommitsFellBack != 1 {
		t.Errorf("%d fast commits, %d fell back; want 3, 1", rr.FastCommits, rr.FastCommitsFellBack)
	}
	if rr.FastCommitMaxMs < 299 || rr.FastCommitMaxMs > 301 {
		t.Errorf("fast commit max %.3f ms, want 300", rr.FastCommitMaxMs)
	}
	var counted int64
	for _, c := range rr.FastCommitBuckets {
		counted += c
	}
	if counted != 3 || len(rr.FastCommitBuckets) != len(rr.JournalBuckets) {
		t.Errorf("fast commit buckets %v (journal's %v)", rr.FastCommitBuckets, rr.JournalBuckets)
	}
}

// TestJournalDistFastCommits: the variant with fast commits has a second
// row in the journal distribution, of kind ext4_fast_commit, in the table
// and the HTML; the others have one.
func TestJournalDistFastCommits(t *testing.T) {
	vs, err := ParseVariants("ext4,ext4-fastcommit")
	if err != nil {
		t.Fatal(err)
	}
	edges := bucketEdgesMs(65)
	res := &Result{Variants: vs, Trials: 1, Workload: DefaultWorkload(), SLOMs: 65, Threshold: 0.05, Alpha: 0.05, BucketEdgesMs: edges}
	buckets := func(at, n int64) []int64 {
		b := make([]int64, len(edges)+1)
		b[at] = n
		return b
	}
	ext4 := fakeRuns("ext4", 1, 40)[0]
	ext4.JournalKind, ext4.JournalBuckets = event.KindJBD2Commit, buckets(4, 10)
	fc := fakeRuns("ext4-fastcommit", 1, 40)[0]
	fc.JournalKind, fc.JournalBuckets = event.KindJBD2Commit, buckets(4, 2)
	fc.FastCommits, fc.FastCommitBuckets = 50, buckets(1, 50)
	res.Runs = []*RunResult{ext4, fc}

	jd := journalDist(res)
	if jd == nil {
		t.Fatal("no journal distribution")
	}
	want := []struct {
		variant, kind string
		total         int64
	}{{"ext4", event.KindJBD2Commit, 10}, {"ext4-fastcommit", event.KindJBD2Commit, 2}, {"ext4-fastcommit", event.KindExt4FastCommit, 50}}
	if len(jd.Variants) != len(want) {
		t.Fatalf("rows %v %v, want %+v", jd.Variants, jd.Kinds, want)
	}
	for i, w := range want {
		var total int64
		for _, c := range jd.Counts[i] {
			total += c
		}
		if jd.Variants[i] != w.variant || jd.Kinds[i] != w.kind || total != w.total {
			t.Errorf("row %d: %s %s %d, want %+v", i, jd.Variants[i], jd.Kinds[i], total, w)
		}
	}
	var tab bytes.Buffer
	writeJournalDist(&tab, res)
	if !strings.Contains(tab.String(), "ext4-fastcommit  ext4_fast_commit") {
		t.Errorf("table has no fast commit row:\n%s", tab.String())
	}
	if svg := string(jd.svg("j")); !strings.Contains(svg, "ext4-fastcommit (ext4_fast_commit, 50)") {
		t.Errorf("HTML has no fast commit row: %s", svg)
	}
}
