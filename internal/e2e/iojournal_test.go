package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// TestIojournal runs a real broker with its log directory on ext4, then on
// XFS, each on its own loop device, with flush.messages=1 (the broker
// fsyncs every append), and traces it with iotrace's journal and block
// tracepoints at --min-latency 0. On ext4 the jbd2 commits (with their
// phases), the ext4 fsyncs of the partitions' segments and the block
// requests of that loop device must be seen; on XFS the iclog writes and
// log forces. Every event must be on the log directory's device, the
// events of each kind must equal the in-kernel histogram's count, and the
// programs must be gone after Close.
func TestIojournal(t *testing.T) {
	iotRequire(t)
	if labtest.Tool("mkfs.xfs") == "" {
		labtest.Unavailable(t, "iotrace e2e: mkfs.xfs not found (xfsprogs)")
	}
	libs := labtest.RequireKafka(t)
	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) { testIojournal(t, libs, fs) })
	}
}

// iotLoopFS mounts a fresh 512 MiB file system of type fs on a loop
// device and returns its mount point and device ("major:minor"); cleanup
// unmounts it (which detaches the loop device: mount -o loop sets
// autoclear) and checks that the loop device is gone.
func iotLoopFS(t *testing.T, fs string, mkfsArgs ...string) (mnt, dev string) {
	t.Helper()
	return iotLoopFSIn(t, t.TempDir(), fs, mkfsArgs...)
}

// ramDir is a fresh directory on tmpfs (/dev/shm), removed at the end of
// t: a loop device backed by a file there never waits for a disk.
func ramDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "kscope-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// iotLoopFSIn is iotLoopFS with the image file in dir.
func iotLoopFSIn(t *testing.T, dir, fs string, mkfsArgs ...string) (mnt, dev string) {
	t.Helper()
	img := filepath.Join(dir, fs+".img")
	mnt = filepath.Join(dir, "mnt")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	switch fs {
	case "ext4":
		iotRun(t, "mkfs.ext4", append(append([]string{"-q", "-F"}, mkfsArgs...), img)...)
	case "xfs":
		iotRun(t, "mkfs.xfs", append(append([]string{"-q", "-f"}, mkfsArgs...), img)...)
	default:
		t.Fatalf("no mkfs for %s", fs)
	}
	if out, err := exec.Command(labtest.Tool("mount"), "-t", fs, "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		labtest.Unavailable(t, "iotrace e2e: cannot mount %s on a loop device: %v: %s", fs, err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command(labtest.Tool("fsfreeze"), "-u", mnt).Run()
		if out, err := exec.Command(labtest.Tool("umount"), mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
		out, _ := exec.Command(labtest.Tool("losetup"), "-j", img).CombinedOutput()
		if len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("loop device left attached: %s", out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return mnt, fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

// iojEvents collects what RunAll delivers.
type iojEvents struct {
	mu      sync.Mutex
	writes  []*event.Write
	commits []*event.JournalCommit
	syncs   []*event.FileSync
	blocks  []*event.BlockIO
}

func (e *iojEvents) handlers() iotrace.Handlers {
	add := func(f func()) error { e.mu.Lock(); f(); e.mu.Unlock(); return nil }
	return iotrace.Handlers{
		Write:  func(w *event.Write) error { return add(func() { e.writes = append(e.writes, w) }) },
		Commit: func(c *event.JournalCommit) error { return add(func() { e.commits = append(e.commits, c) }) },
		Sync:   func(s *event.FileSync) error { return add(func() { e.syncs = append(e.syncs, s) }) },
		Block:  func(b *event.BlockIO) error { return add(func() { e.blocks = append(e.blocks, b) }) },
	}
}

func testIojournal(t *testing.T, libs, fs string) {
	mnt, dev := iotLoopFS(t, fs)
	logDir := filepath.Join(mnt, "data")
	b := labtest.Broker(t, lab.BrokerConfig{
		Dir:     filepath.Join(t.TempDir(), "broker"),
		LibsDir: libs,
		LogDirs: []string{logDir},
		// An fsync per append: journal commits and log forces on demand.
		ExtraProps: map[string]string{"num.partitions": "2", "flush.messages": "1"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tr, err := iotrace.Open(iotrace.Config{PID: b.PID(), LogDirs: []string{logDir}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	attached, skipped := tr.JournalGroups()
	t.Logf("journal tracepoints: %v; not traced: %v", attached, skipped)
	ids, err := tr.ProgramIDs()
	if err != nil {
		t.Fatal(err)
	}
	want, err := iotrace.ProgramCount(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != want {
		t.Errorf("tracer holds %d programs, want %d", len(ids), want)
	}
	var ev iojEvents
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	traceStart := time.Now()
	go func() { done <- tr.RunAll(runCtx, ev.handlers()) }()

	topic := "iojournal-" + fs
	if err := traffic.ProduceFranz(ctx, b.Addr(), topic, 500, "none", false); err != nil {
		stop()
		<-done
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	traceEnd := time.Now()
	sums, err := tr.DeviceSummaries()
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Error(err)
	}
	iotNoneLoaded(t, ids)
	t.Logf("stats: %+v", st)
	if st.JournalRingbufDrops != 0 || st.JournalHistFull != 0 || st.JournalStartFull != 0 {
		t.Errorf("journal losses: %+v", st)
	}

	// Events per kind on the log directory's device; none on any other.
	counts := map[string]uint64{}
	inWindow := func(what string, start, end time.Time) {
		if end.Before(start) || start.Before(traceStart.Add(-time.Second)) || end.After(traceEnd.Add(time.Second)) {
			t.Errorf("%s: %v..%v outside the trace %v..%v", what, start, end, traceStart, traceEnd)
		}
	}
	for _, c := range ev.commits {
		if c.Dev != dev {
			t.Errorf("%s on device %s, the log dir is on %s", c.Kind, c.Dev, dev)
		}
		inWindow(c.Kind, c.Start, c.End)
		switch c.Kind {
		case event.KindJBD2Commit:
			counts[iotrace.KindJBD2Commit.String()]++
		case event.KindExt4FastCommit: // none here: the ext4 is made without fast_commit
			counts[iotrace.KindExt4FastCommit.String()]++
		default:
			counts[iotrace.KindXlogWrite.String()]++
		}
	}
	for _, s := range ev.syncs {
		if s.Dev != dev {
			t.Errorf("ext4 fsync on device %s, the log dir is on %s", s.Dev, dev)
		}
		inWindow("ext4 fsync", s.Start, s.End)
		counts[iotrace.KindExt4Fsync.String()]++
	}
	for _, bio := range ev.blocks {
		if bio.Dev != dev {
			t.Errorf("block request on device %s, the log dir is on %s", bio.Dev, dev)
		}
		inWindow("block "+bio.Op, bio.Start, bio.End)
		counts["blk-"+bio.Op]++
	}
	hist := map[string]*iotrace.DeviceSummary{}
	for i := range sums {
		s := &sums[i]
		if s.Dev != dev {
			t.Errorf("histogram %s on device %s, the log dir is on %s", s.Kind, s.Dev, dev)
			continue
		}
		hist[s.Kind.String()] = s
		t.Logf("%s %s: %d, %d bytes, mean %v, p50<=%v p99<=%v max<=%v", s.Dev, s.Kind, s.Count, s.Bytes,
			s.Mean(), s.Quantile(0.5), s.Quantile(0.99), s.Quantile(1))
	}
	// At --min-latency 0 every counted interval is also an event.
	for kind, n := range counts {
		h := hist[kind]
		if h == nil || h.Count != n {
			t.Errorf("%d %s events, histogram %+v", n, kind, h)
		}
	}
	for kind, h := range hist {
		if _, ok := counts[kind]; !ok && h.Kind.HasLatency() {
			t.Errorf("histogram counts %d %s, no event", h.Count, kind)
		}
	}

	// Every write of the produced topic is fsynced by the broker.
	var topicWrites int
	for _, w := range ev.writes {
		if w.Topic == topic && w.Op == "write" {
			topicWrites++
		}
	}
	if topicWrites == 0 {
		t.Errorf("no write to %s traced", topic)
	}
	var blockWrites int64
	for _, bio := range ev.blocks {
		if bio.Op == "write" {
			blockWrites += bio.Bytes
		}
	}
	if blockWrites == 0 {
		t.Errorf("no block write on %s", dev)
	}
	switch fs {
	case "ext4":
		// fsync on ext4 ends with a cache flush (or a preflush+FUA commit).
		if hist["blk-flush"] == nil && !hasPreflush(ev.blocks) {
			t.Error("no block-layer flush on ext4 after fsyncs")
		}
		checkExt4Journal(t, &ev, topic, hist)
	case "xfs":
		checkXFSLog(t, &ev, hist)
	}
	t.Logf("%s on %s: %d writes to %s, %v journal/block events, %d bytes of block writes",
		fs, dev, topicWrites, topic, counts, blockWrites)
	testIojournalCLISummary(ctx, t, b, logDir, dev, fs)
}

func hasPreflush(blocks []*event.BlockIO) bool {
	for _, b := range blocks {
		if strings.HasPrefix(b.RWBS, "F") {
			return true
		}
	}
	return false
}

// testIojournalCLISummary: `kscope iotrace --summary --format json` (the
// journal is on by default) prints the device's journal percentiles.
func testIojournalCLISummary(ctx context.Context, t *testing.T, b *lab.Broker, logDir, dev, fs string) {
	c := iotStartCLI(ctx, t, "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir, "--summary", "--format", "json")
	if err := traffic.ProduceFranz(ctx, b.Addr(), "iojournal-cli-"+fs, 200, "none", false); err != nil {
		t.Fatal(err)
	}
	if err := c.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("kscope iotrace --summary: %v: %s", err, c.errOut())
	}
	want := map[string]string{"ext4": "jbd2-commit", "xfs": "xlog-write"}[fs]
	var found bool
	sc := bufio.NewScanner(&c.stdout)
	for sc.Scan() {
		var s struct {
			Dev   string   `json:"dev"`
			Kind  string   `json:"kind"`
			Count uint64   `json:"count"`
			P99   *float64 `json:"p99_le_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("summary line %q: %v", sc.Text(), err)
		}
		if s.Kind == want && s.Dev == dev && s.Count > 0 && s.P99 != nil && *s.P99 > 0 {
			found = true
			t.Logf("kscope iotrace --summary: %s", sc.Text())
		}
	}
	if !found {
		t.Errorf("kscope iotrace --summary printed no %s on %s:\n%s\n%s", want, dev, c.stdout.String(), c.errOut())
	}
}

func checkExt4Journal(t *testing.T, ev *iojEvents, topic string, hist map[string]*iotrace.DeviceSummary) {
	var withPhases, maxBlocks int
	var maxLat float64
	for _, c := range ev.commits {
		if c.Kind != event.KindJBD2Commit || c.FS != "ext4" || c.TID == 0 {
			t.Errorf("ext4 journal commit %+v", c)
			continue
		}
		if c.Phases != nil {
			withPhases++
			maxBlocks = max(maxBlocks, int(c.Phases.BlocksLogged))
		}
		maxLat = max(maxLat, c.LatencyMs)
	}
	if len(ev.commits) == 0 {
		t.Fatal("no jbd2 commit seen on ext4 with flush.messages=1")
	}
	// A commit is sent once both jbd2_end_commit and jbd2_run_stats were seen.
	if withPhases != len(ev.commits) {
		t.Errorf("%d of %d jbd2 commits have their run_stats phases", withPhases, len(ev.commits))
	}
	if maxBlocks == 0 {
		t.Error("no jbd2 commit logged a block")
	}
	// The broker's fsyncs of the topic's segments, named by partition.
	parts := map[int32]int{}
	for _, s := range ev.syncs {
		if s.Topic == topic {
			parts[s.Partition]++
		}
	}
	if len(parts) != 2 {
		t.Errorf("ext4 fsyncs of %s by partition: %v, want both partitions", topic, parts)
	}
	if hist["ext4-fsync"] == nil || hist["jbd2-commit"] == nil {
		t.Errorf("histograms: %v", hist)
	}
	t.Logf("ext4: %d jbd2 commits (max %.3f ms, up to %d blocks logged), fsyncs of %s by partition %v",
		len(ev.commits), maxLat, maxBlocks, topic, parts)
}

func checkXFSLog(t *testing.T, ev *iojEvents, hist map[string]*iotrace.DeviceSummary) {
	var xlog int
	var maxLat float64
	for _, c := range ev.commits {
		if c.Kind != event.KindXlogWrite || c.FS != "xfs" || c.LSN == 0 {
			t.Errorf("XFS log event %+v", c)
			continue
		}
		xlog++
		maxLat = max(maxLat, c.LatencyMs)
	}
	if xlog == 0 {
		t.Error("no XFS iclog write seen with flush.messages=1")
	}
	if len(ev.syncs) != 0 {
		t.Errorf("%d ext4 fsyncs on XFS", len(ev.syncs))
	}
	forces := hist["xfs-log-force"]
	if forces == nil || forces.Count == 0 {
		t.Error("no XFS log force counted")
	} else {
		t.Logf("xfs: %d iclog writes (max %.3f ms), %d log forces", xlog, maxLat, forces.Count)
	}
}
