package iotrace

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestParseFormat(t *testing.T) {
	const format = `name: block_rq_issue
ID: 1234
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:dev_t dev;	offset:8;	size:4;	signed:0;
	field:sector_t sector;	offset:16;	size:8;	signed:0;
	field:char rwbs[10];	offset:34;	size:10;	signed:0;
	field:__data_loc char[] cmd;	offset:60;	size:4;	signed:0;

print fmt: "%d,%d", REC->dev
`
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "block", "block_rq_issue"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "block", "block_rq_issue", "format"), []byte(format), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tp      string
		fields  []tpField
		wantErr string // substring; "" for no error
	}{
		{"matches", "block_rq_issue", []tpField{{"dev", 8, 4}, {"sector", 16, 8}, {"rwbs", 34, 8}}, ""},
		{"array bounds and data_loc", "block_rq_issue", []tpField{{"cmd", 60, 4}}, ""},
		{"moved field", "block_rq_issue", []tpField{{"rwbs", 30, 8}}, "field rwbs at offset 34 size 10, built for offset 30 size 8"},
		{"smaller field", "block_rq_issue", []tpField{{"dev", 8, 8}}, "field dev at offset 8 size 4"},
		{"missing field", "block_rq_issue", []tpField{{"bytes", 28, 4}}, "has no field bytes"},
		{"missing tracepoint", "block_rq_merge", nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFormat(dir, "block", tt.tp, tt.fields)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("checkFormat: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("checkFormat: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

// TestRunningKernelFormats checks this kernel's tracepoint records against
// the layouts bpf/iojournal.bpf.c was built for, where tracefs shows them.
func TestRunningKernelFormats(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tracefsEvents, "block")); err != nil {
		requireRoot(t)
		if err := ensureTracefs(); err != nil {
			t.Fatal(err)
		}
	}
	var o iojournalObjects
	for _, tp := range o.tracepoints() {
		// jbd2, ext4 and xfs may be modules not loaded; the block layer
		// is always there.
		err := checkFormat(tracefsEvents, tp.group, tp.name, tp.fields)
		if err != nil && (tp.group == "block" || !errors.Is(err, os.ErrNotExist)) {
			t.Errorf("%v", err)
		}
	}
}

func TestHZFrom(t *testing.T) {
	tests := []struct {
		config string
		want   int
		ok     bool
	}{
		{"CONFIG_HZ_250=y\nCONFIG_HZ=250\n", 250, true},
		{"# CONFIG_HZ_1000 is not set\nCONFIG_HZ=1000", 1000, true},
		{"CONFIG_HZ_PERIODIC=y\n", 0, false},
		{"CONFIG_HZ=fast\n", 0, false},
	}
	for _, tt := range tests {
		hz, err := hzFrom(strings.NewReader(tt.config))
		if hz != tt.want || (err == nil) != tt.ok {
			t.Errorf("hzFrom(%q) = %d, %v; want %d, ok %v", tt.config, hz, err, tt.want, tt.ok)
		}
	}
}

// TestDecodeJournalEvent checks the hand decoder against the layout
// bpf2go generated from the C struct.
func TestDecodeJournalEvent(t *testing.T) {
	in := iojournalIojournalEvent{StartNs: 1, EndNs: 2, Id: 3, Wait: 4, RequestDelay: 5, Running: 6, Locked: 7,
		Flushing: 8, Logging: 9, HandleCount: 10, Blocks: 11, BlocksLogged: 12, Dev: 7<<20 | 3, Kind: uint32(KindBlockWrite),
		Bytes: 4096, Err: -5, Tid: 13, Pid: 14, HasStats: 1, Sync: 1, FcStatus: 2}
	copy(in.Rwbs[:], []int8{'F', 'W', 'F', 'S'})
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, &in); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != journalEventSize {
		t.Fatalf("struct iojournal_event is %d bytes, the decoder reads %d", buf.Len(), journalEventSize)
	}
	out, ok := decodeJournalEvent(buf.Bytes())
	if !ok || out != in {
		t.Fatalf("decoded %+v, want %+v", out, in)
	}
	if got := rwbsString(out.Rwbs); got != "FWFS" {
		t.Errorf("rwbs %q", got)
	}
	if _, ok := decodeJournalEvent(buf.Bytes()[:journalEventSize-1]); ok {
		t.Error("decoded a short sample")
	}
}

func TestKinds(t *testing.T) {
	tests := []struct {
		k       Kind
		name    string
		op      string
		latency bool
	}{
		{KindJBD2Commit, "jbd2-commit", "other", true},
		{KindXFSLogForce, "xfs-log-force", "other", false},
		{KindBlockRead, "blk-read", "read", true},
		{KindBlockWrite, "blk-write", "write", true},
		{KindBlockFlush, "blk-flush", "flush", true},
		{KindExt4FastCommit, "ext4-fast-commit", "other", true},
		{numKinds, "kind(9)", "other", true},
	}
	for _, tt := range tests {
		if tt.k.String() != tt.name || tt.k.blockOp() != tt.op || tt.k.HasLatency() != tt.latency {
			t.Errorf("kind %d: %s %s %v", tt.k, tt.k, tt.k.blockOp(), tt.k.HasLatency())
		}
	}
}

func TestPhases(t *testing.T) {
	ev := iojournalIojournalEvent{Wait: 1, RequestDelay: 2, Running: 250, Locked: 3, Flushing: 4, Logging: 5,
		HandleCount: 6, Blocks: 7, BlocksLogged: 9}
	p := phases(&ev, 250)
	want := event.JournalPhases{WaitMs: 4, RequestDelayMs: 8, RunningMs: 1000, LockedMs: 12, FlushingMs: 16,
		LoggingMs: 20, HandleCount: 6, Blocks: 7, BlocksLogged: 9}
	if *p != want {
		t.Errorf("phases %+v, want %+v", *p, want)
	}
}

// TestJournalOwnFsync traces this process fsyncing a segment file in a
// log directory on an ext4 file system (the test's temporary directory)
// with Config.Journal: its ext4 fsync must come out with this thread, the
// file's name and a latency no longer than the call's, and be counted in
// the histogram; every event must be on that device; the journal
// programs must be gone after Close.
func TestJournalOwnFsync(t *testing.T) {
	requireRoot(t)
	logDir := t.TempDir()
	var sfs unix.Statfs_t
	if err := unix.Statfs(logDir, &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Type != unix.EXT4_SUPER_MAGIC {
		labtest.Unavailable(t, "%s is not on ext4 (the e2e tests make one on a loop device)", logDir)
	}
	f := newSegment(t, logDir, "own-fsync-3")
	var st unix.Stat_t
	if err := unix.Stat(logDir, &st); err != nil {
		t.Fatal(err)
	}
	dev := devString(statID(&st).dev)

	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{logDir}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ids, err := tr.ProgramIDs()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var syncs []*event.FileSync
	var others []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tr.RunAll(ctx, Handlers{
			Sync: func(s *event.FileSync) error { mu.Lock(); syncs = append(syncs, s); mu.Unlock(); return nil },
			Commit: func(c *event.JournalCommit) error {
				mu.Lock()
				others = append(others, c.Dev)
				mu.Unlock()
				return nil
			},
			Block: func(b *event.BlockIO) error { mu.Lock(); others = append(others, b.Dev); mu.Unlock(); return nil },
		})
	}()

	// Same thread for the write and the fsync, so the event's tid is known.
	runtime.LockOSThread()
	tid := unix.Gettid()
	if _, err := f.Write(bytes.Repeat([]byte{'k'}, 8192)); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(before)
	runtime.UnlockOSThread()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sums, err := tr.DeviceSummaries()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, ids)

	var ours []*event.FileSync
	for _, s := range syncs {
		if s.Dev != dev {
			t.Errorf("ext4 fsync on %s, the log dir is on %s", s.Dev, dev)
		}
		if s.TID == tid {
			ours = append(ours, s)
		}
	}
	// A partition's block requests are on its disk.
	allowed := map[string]bool{}
	for _, d := range withDisks([]uint32{statID(&st).dev}) {
		allowed[devString(d)] = true
	}
	for _, d := range others {
		if !allowed[d] {
			t.Errorf("journal or block event on %s, the log dir is on %s (devices traced: %v)", d, dev, allowed)
		}
	}
	if len(ours) != 1 {
		t.Fatalf("%d ext4 fsyncs by thread %d, want 1: %+v", len(ours), tid, ours)
	}
	s := ours[0]
	if s.File != "own-fsync-3/00000000000000000000.log" || s.Topic != "own-fsync" || s.Partition != 3 ||
		s.PID != os.Getpid() || s.Datasync || s.Error != "" {
		t.Errorf("ext4 fsync %+v", s)
	}
	if lat := s.End.Sub(s.Start); lat <= 0 || lat > took {
		t.Errorf("ext4 fsync took %v in the kernel, %v in Go", lat, took)
	}
	var counted uint64
	for _, sum := range sums {
		if sum.Kind == KindExt4Fsync && sum.Dev == dev {
			counted = sum.Count
		}
	}
	if counted != uint64(len(syncs)) {
		t.Errorf("histogram counts %d ext4 fsyncs on %s, %d events", counted, dev, len(syncs))
	}
	t.Logf("fsync of 8 KiB: %.3f ms in ext4_sync_file (%v in Go); %d fsyncs on %s", s.LatencyMs, took, len(syncs), dev)
}

// assertGone fails if any of ids is still loaded; programs are freed after
// an RCU grace period, so it waits a little.
func assertGone(t *testing.T, ids []ebpf.ProgramID) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		progs, err := KernelPrograms()
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, id := range ids {
			if name, ok := progs[id]; ok {
				left = append(left, name)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("programs still loaded after Close: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunAllHandlerError: a handler's error ends RunAll, which returns it
// as it is, while the journal's reader is stopped too.
func TestRunAllHandlerError(t *testing.T) {
	requireRoot(t)
	logDir := t.TempDir()
	f := newSegment(t, logDir, "run-all-0")
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{logDir}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	errStop := errors.New("stop here")
	done := make(chan error, 1)
	go func() {
		done <- tr.RunAll(context.Background(), Handlers{Write: func(*event.Write) error { return errStop }})
	}()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != errStop {
			t.Fatalf("RunAll returned %v, want the handler's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunAll did not return after its handler failed")
	}
}

// newSegment creates the first segment of partition (its directory's
// name) in logDir, as a broker would, closed at the end of t.
func newSegment(t *testing.T, logDir, partition string) *os.File {
	t.Helper()
	partDir := filepath.Join(logDir, partition)
	if err := os.Mkdir(partDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(partDir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
