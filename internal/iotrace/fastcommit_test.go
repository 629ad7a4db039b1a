package iotrace

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestFastCommitStatus(t *testing.T) {
	tests := []struct {
		reason   uint8
		want     string
		fellBack bool
	}{
		{0, event.FastCommitDone, false},
		{1, event.FastCommitIneligible, true},
		{2, event.FastCommitSkipped, false},
		{3, event.FastCommitFailed, true},
		{4, "status 4", false},
		{255, "status 255", false},
	}
	for _, tt := range tests {
		got := fastCommitStatus(tt.reason)
		fc := event.FastCommit{Status: got}
		if got != tt.want || fc.FellBack() != tt.fellBack {
			t.Errorf("reason %d: %q (fell back %v), want %q (%v)", tt.reason, got, fc.FellBack(), tt.want, tt.fellBack)
		}
	}
}

// TestUnusableUnits: a kernel whose ext4 has no fast-commit tracepoints
// (before 5.10) still gets ext4's fsyncs; only the fast-commit unit is
// skipped, and says why.
func TestUnusableUnits(t *testing.T) {
	const syncEnter = "field:dev_t dev;\toffset:8;\tsize:4;\nfield:ino_t ino;\toffset:16;\tsize:8;\nfield:int datasync;\toffset:32;\tsize:4;\n"
	const syncExit = "field:dev_t dev;\toffset:8;\tsize:4;\nfield:ino_t ino;\toffset:16;\tsize:8;\nfield:int ret;\toffset:24;\tsize:4;\n"
	const fcStart = "field:dev_t dev;\toffset:8;\tsize:4;\nfield:tid_t tid;\toffset:12;\tsize:4;\n"
	const fcStop = "field:dev_t dev;\toffset:8;\tsize:4;\nfield:int nblks;\toffset:12;\tsize:4;\n" +
		"field:int reason;\toffset:16;\tsize:4;\nfield:tid_t tid;\toffset:32;\tsize:4;\n"
	tests := []struct {
		name     string
		formats  map[string]string // ext4 tracepoint -> format
		wantBad  []string          // units skipped
		wantWhy  string            // in the fast-commit unit's reason
		wantGood []string          // units attached
	}{
		{"all there", map[string]string{"ext4_sync_file_enter": syncEnter, "ext4_sync_file_exit": syncExit,
			"ext4_fc_commit_start": fcStart, "ext4_fc_commit_stop": fcStop}, nil, "", []string{"ext4", unitFastCommits}},
		{"no fast-commit tracepoints", map[string]string{"ext4_sync_file_enter": syncEnter, "ext4_sync_file_exit": syncExit},
			[]string{unitFastCommits}, "no tracepoint ext4:ext4_fc_commit_stop", []string{"ext4"}},
		{"fast commit moved", map[string]string{"ext4_sync_file_enter": syncEnter, "ext4_sync_file_exit": syncExit,
			"ext4_fc_commit_start": fcStart, "ext4_fc_commit_stop": strings.Replace(fcStop, "offset:16", "offset:20", 1)},
			[]string{unitFastCommits}, "field reason at offset 20", []string{"ext4"}},
		{"no ext4", nil, []string{"ext4", unitFastCommits}, "no tracepoint", nil},
	}
	var o iojournalObjects
	var ext4 []journalTracepoint
	for _, tp := range o.tracepoints() {
		if tp.group == "ext4" {
			ext4 = append(ext4, tp)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, format := range tt.formats {
				if err := os.MkdirAll(filepath.Join(dir, "ext4", name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "ext4", name, "format"), []byte(format), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bad := unusableUnits(dir, ext4)
			for _, u := range tt.wantBad {
				if _, ok := bad[u]; !ok {
					t.Errorf("unit %s not skipped: %v", u, bad)
				}
			}
			for _, u := range tt.wantGood {
				if why, ok := bad[u]; ok {
					t.Errorf("unit %s skipped: %s", u, why)
				}
			}
			if why := bad[unitFastCommits]; !strings.Contains(why, tt.wantWhy) {
				t.Errorf("fast commits skipped for %q, want %q in it", why, tt.wantWhy)
			}
			if len(bad) != len(tt.wantBad) {
				t.Errorf("skipped %v, want %v", bad, tt.wantBad)
			}
		})
	}
}

// loopExt4 makes an ext4 with mkfs.ext4's extra args on a loop device
// over an image in /dev/shm (no disk under it), mounts it and returns the
// mount point; unmounted (and so detached) at the end of t.
func loopExt4(t *testing.T, mkfsArgs ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "kscope-fc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	img, mnt := filepath.Join(dir, "ext4.img"), filepath.Join(dir, "mnt")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"}, mkfsArgs...), img)
	if out, err := exec.Command(labtest.Tool("mkfs.ext4"), args...).CombinedOutput(); err != nil {
		labtest.Unavailable(t, "mkfs.ext4 %v: %v: %s", mkfsArgs, err, out)
	}
	if out, err := exec.Command(labtest.Tool("mount"), "-t", "ext4", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		labtest.Unavailable(t, "cannot mount ext4 on a loop device: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(labtest.Tool("umount"), mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
		if out, _ := exec.Command(labtest.Tool("losetup"), "-j", img).CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("loop device left attached: %s", out)
		}
	})
	return mnt
}

// fsyncLoop appends and fsyncs f n times on one thread, and returns the
// thread and the calls' intervals on the monotonic clock.
func fsyncLoop(t *testing.T, f *os.File, n int) (tid int, calls [][2]int64) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid = unix.Gettid()
	block := bytes.Repeat([]byte{'k'}, 4096)
	for range n {
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
		before := monoNow(t)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, [2]int64{before, monoNow(t)})
	}
	return tid, calls
}

// TestJournalFastCommits traces an fsync loop on ext4 made with
// -O fast_commit: its fsyncs run fast commits in the fsyncing thread, which
// must come out as ext4_fast_commit events of that thread, each inside one
// of its fsync calls, mostly done with blocks written, and counted in the
// device summary. On ext4 without fast_commit (the control) the same loop
// gives ext4 fsyncs and jbd2 commits but no fast commit.
func TestJournalFastCommits(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name      string
		mkfs      []string
		wantFast  bool
		minFsyncs int
	}{
		{"fast_commit", []string{"-O", "fast_commit"}, true, 20},
		{"no fast_commit", nil, false, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mnt := loopExt4(t, tt.mkfs...)
			tr := traceFsyncLoop(t, mnt, tt.minFsyncs)
			fast := tr.fastCommits()
			if !tt.wantFast {
				if len(fast) > 0 || tr.summed[KindExt4FastCommit] > 0 {
					t.Fatalf("%d fast commits (%d counted) on ext4 without fast_commit: %+v", len(fast), tr.summed[KindExt4FastCommit], fast[0])
				}
				if tr.syncs < tt.minFsyncs {
					t.Fatalf("control traced %d ext4 fsyncs, want %d: the tracer saw nothing", tr.syncs, tt.minFsyncs)
				}
				return
			}
			if !slices.Contains(tr.attached, unitFastCommits) {
				t.Fatalf("fast-commit tracepoints not attached: %v; skipped %v", tr.attached, tr.skipped)
			}
			tr.checkFastCommits(t, fast)
		})
	}
}

// fsyncTrace is what TestJournalFastCommits traced of its fsync loop.
type fsyncTrace struct {
	dev               string
	tid               int
	calls             [][2]int64 // the fsync calls, monotonic ns
	wallOffset        int64      // wall - monotonic, ns
	commits           []*event.JournalCommit
	syncs             int
	summed            map[Kind]uint64
	attached, skipped []string
}

// traceFsyncLoop traces n appends and fsyncs on a partition's segment in
// log dir mnt, every interval sent (MinLatency 0).
func traceFsyncLoop(t *testing.T, mnt string, n int) *fsyncTrace {
	t.Helper()
	f := newSegment(t, mnt, "fast-commit-0")
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	ft := &fsyncTrace{dev: devString(statID(&st).dev), summed: map[Kind]uint64{}}
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{mnt}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ft.attached, ft.skipped = tr.JournalGroups()
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tr.RunAll(ctx, Handlers{
			Commit: func(c *event.JournalCommit) error {
				mu.Lock()
				ft.commits = append(ft.commits, c)
				mu.Unlock()
				return nil
			},
			Sync: func(*event.FileSync) error { mu.Lock(); ft.syncs++; mu.Unlock(); return nil },
		})
	}()
	ft.wallOffset = time.Now().UnixNano() - monoNow(t)
	ft.tid, ft.calls = fsyncLoop(t, f, n)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sums, err := tr.DeviceSummaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.Dev == ft.dev {
			ft.summed[s.Kind] += s.Count
		}
	}
	return ft
}

func (ft *fsyncTrace) fastCommits() []*event.JournalCommit {
	var out []*event.JournalCommit
	for _, c := range ft.commits {
		if c.Kind == event.KindExt4FastCommit {
			out = append(out, c)
		}
	}
	return out
}

// checkFastCommits: each fast commit is this thread's, on the file
// system's device, within one of its fsync calls (the wall clock's
// conversion allows a millisecond), and most wrote blocks.
func (ft *fsyncTrace) checkFastCommits(t *testing.T, fast []*event.JournalCommit) {
	t.Helper()
	if len(fast) < len(ft.calls)/2 {
		t.Fatalf("%d fast commits for %d fsyncs on fast_commit ext4", len(fast), len(ft.calls))
	}
	if got := ft.summed[KindExt4FastCommit]; got != uint64(len(fast)) {
		t.Errorf("device summary counts %d fast commits on %s, %d events", got, ft.dev, len(fast))
	}
	const slack = int64(time.Millisecond)
	done := 0
	for _, c := range fast {
		fc := c.FastCommit
		if fc == nil || fc.TID != ft.tid || fc.PID != os.Getpid() || c.Dev != ft.dev || c.FS != "ext4" {
			t.Errorf("fast commit %+v (%+v): want thread %d of pid %d on %s", *c, fc, ft.tid, os.Getpid(), ft.dev)
			continue
		}
		a, b := c.Start.UnixNano()-ft.wallOffset, c.End.UnixNano()-ft.wallOffset
		if lat := c.End.Sub(c.Start); lat <= 0 || lat > time.Second {
			t.Errorf("fast commit took %v", lat)
		}
		if !slices.ContainsFunc(ft.calls, func(call [2]int64) bool { return a >= call[0]-slack && b <= call[1]+slack }) {
			t.Errorf("fast commit %v..%v is in none of the fsync calls", c.Start, c.End)
		}
		if fc.Status == event.FastCommitDone && fc.Blocks > 0 {
			done++
		}
	}
	if done < len(fast)/2 {
		t.Errorf("%d of %d fast commits done with blocks written", done, len(fast))
	}
	t.Logf("%d fsyncs: %d fast commits (%d done), %d jbd2 commits or other; p50 fast commit %.3f ms",
		len(ft.calls), len(fast), done, len(ft.commits)-len(fast), fast[len(fast)/2].LatencyMs)
}

// FuzzDecodeJournalEvent: any ring-buffer sample decodes without panic;
// short ones are refused; a full one decodes to the fields bpf2go's
// layout puts at those bytes (encoded back, the same bytes but the
// padding), and a fast commit's status is always named.
func FuzzDecodeJournalEvent(f *testing.F) {
	for _, ev := range []iojournalIojournalEvent{
		{StartNs: 1_000_000, EndNs: 1_120_000, Id: 3, Blocks: 1, Dev: 7 << 20, Kind: uint32(KindExt4FastCommit), Tid: 43, Pid: 6},
		{StartNs: 2_000_000, EndNs: 2_002_000, Id: 2, Dev: 7 << 20, Kind: uint32(KindExt4FastCommit), Tid: 43, Pid: 6, FcStatus: 3},
		{StartNs: 1, EndNs: 5_000_000, Id: 9, Running: 250, Blocks: 7, BlocksLogged: 9, Dev: 7 << 20, Kind: uint32(KindJBD2Commit), HasStats: 1, Sync: 1},
	} {
		var buf bytes.Buffer
		if err := binary.Write(&buf, binary.LittleEndian, &ev); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, ok := decodeJournalEvent(b)
		if ok != (len(b) >= journalEventSize) {
			t.Fatalf("%d bytes decoded: %v", len(b), ok)
		}
		if !ok {
			return
		}
		if fastCommitStatus(ev.FcStatus) == "" {
			t.Fatalf("status %d has no name", ev.FcStatus)
		}
		ev.Pad = [9]uint8{}
		var buf bytes.Buffer
		if err := binary.Write(&buf, binary.LittleEndian, &ev); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(b[:journalEventSize])
		clear(want[119:])
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("decoded %+v, encodes back to %x, not %x", ev, buf.Bytes(), want)
		}
	})
}
