package iotrace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// want is one expected call, as reported.
type want struct {
	op     string
	bytes  int64
	offset int64
	file   string
	errno  string
}

// TestTraceOwnCalls traces this test process making every traced system
// call on a segment file, an index file, a file outside the log directory
// and, from another process, on the same segment: exactly the calls of
// this process on the reported files must come out, with their bytes and
// offsets, and the programs must be gone after Close. Also with the rings
// polled (Config.RingPoll, as the agent reads them): events submitted
// without a wake-up, read every 50 ms; and with the fd table walked as
// on kernels without bpf_get_current_task_btf.
func TestTraceOwnCalls(t *testing.T) {
	requireRoot(t)
	if !haveTaskBTF() {
		t.Fatal("this kernel has no bpf_get_current_task_btf for tracepoints (5.11): the typed walk is not tested")
	}
	for _, tc := range []struct {
		allFiles, untypedTask bool
		poll                  time.Duration
	}{{false, false, 0}, {true, false, 0}, {false, false, 50 * time.Millisecond}, {false, true, 0}} {
		name := "allFiles=" + strconv.FormatBool(tc.allFiles) + ",poll=" + tc.poll.String() + ",untypedTask=" + strconv.FormatBool(tc.untypedTask)
		t.Run(name, func(t *testing.T) { traceOwnCalls(t, tc.allFiles, tc.untypedTask, tc.poll) })
	}
}

func traceOwnCalls(t *testing.T, allFiles, untypedTask bool, poll time.Duration) {
	logDir := t.TempDir()
	partDir := filepath.Join(logDir, "own-calls-7")
	if err := os.Mkdir(partDir, 0o755); err != nil {
		t.Fatal(err)
	}
	segPath := filepath.Join(partDir, "00000000000000000042.log")
	idxPath := filepath.Join(partDir, "00000000000000000042.index")
	outside := filepath.Join(t.TempDir(), "00000000000000000000.log")
	open := func(p string) int {
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	seg, idx, out := open(segPath), open(idxPath), open(outside)
	ro, err := unix.Open(segPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(ro) })

	// Polled, the journal's ring joins the writes' in one poller.
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{logDir}, AllFiles: allFiles, RingPoll: poll, Journal: poll > 0, untypedTask: untypedTask})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ids, err := tr.ProgramIDs()
	if err != nil {
		t.Fatal(err)
	}
	programs := 14 // the system calls'
	if poll > 0 {
		programs += 12 // the journal's (jbd2, ext4 with its fast commits, XFS log, block tracepoints)
	}
	if len(ids) != programs {
		t.Fatalf("%d programs loaded, want %d", len(ids), programs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu     sync.Mutex
		events []*event.Write
	)
	runErr := make(chan error, 1)
	go func() {
		runErr <- tr.Run(ctx, func(w *event.Write) error {
			mu.Lock()
			events = append(events, w)
			mu.Unlock()
			return nil
		})
	}()

	before := time.Now()
	buf := func(n int, c byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = c
		}
		return b
	}
	must := func(n int, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.Write(seg, buf(100, 'a')))                         // at 0, position 100
	must(unix.Pwrite(seg, buf(50, 'b'), 1000))                   // at 1000, position stays
	must(unix.Writev(seg, [][]byte{buf(30, 'c'), buf(20, 'd')})) // at 100, position 150
	must(unix.Pwritev(seg, [][]byte{buf(40, 'e')}, 2000))        // at 2000
	must(unix.Pwritev2(seg, [][]byte{buf(25, 'f')}, -1, 0))      // at the position, 150
	must(unix.Pwritev2(seg, [][]byte{buf(10, 'g')}, 3000, 0))    // at 3000
	must(0, unix.Fsync(seg))
	must(0, unix.Fdatasync(seg))
	must(unix.Write(idx, buf(12, 'i'))) // index file: only with allFiles
	must(unix.Write(out, buf(7, 'o')))  // outside the log dir: never
	_, err = unix.Write(seg, nil)       // 0 bytes at 175
	must(0, err)
	if _, err := unix.Write(ro, buf(5, 'r')); err != unix.EBADF {
		t.Fatalf("write to a read-only fd: %v, want EBADF", err)
	}
	// Writes to what is not a regular file, as most of a broker's are
	// (sockets, eventfds), and to fds that are not open: skipped in the
	// kernel, neither timed nor counted.
	var pipe [2]int
	must(0, unix.Pipe2(pipe[:], unix.O_CLOEXEC))
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(0, err)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	must(0, err)
	for _, fd := range []int{pipe[0], pipe[1], sock[0], sock[1], efd} {
		t.Cleanup(func() { unix.Close(fd) })
	}
	must(unix.Write(pipe[1], buf(3, 'p')))
	must(unix.Write(sock[0], buf(4, 's')))
	must(unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}))
	for _, fd := range []int{-1, 1 << 20} {
		if _, err := unix.Write(fd, buf(1, 'x')); err != unix.EBADF {
			t.Fatalf("write to fd %d: %v, want EBADF", fd, err)
		}
	}
	// Another process appending to the same segment: not traced.
	if outp, err := exec.Command("sh", "-c", `printf xyz >> "$1"`, "sh", segPath).CombinedOutput(); err != nil {
		t.Fatalf("child write: %v: %s", err, outp)
	}
	after := time.Now()

	wants := []want{
		{"write", 100, 0, "own-calls-7/00000000000000000042.log", ""},
		{"pwrite64", 50, 1000, "own-calls-7/00000000000000000042.log", ""},
		{"writev", 50, 100, "own-calls-7/00000000000000000042.log", ""},
		{"pwritev", 40, 2000, "own-calls-7/00000000000000000042.log", ""},
		{"pwritev2", 25, 150, "own-calls-7/00000000000000000042.log", ""},
		{"pwritev2", 10, 3000, "own-calls-7/00000000000000000042.log", ""},
		{"fsync", 0, -1, "own-calls-7/00000000000000000042.log", ""},
		{"fdatasync", 0, -1, "own-calls-7/00000000000000000042.log", ""},
	}
	if allFiles {
		wants = append(wants, want{"write", 12, 0, "own-calls-7/00000000000000000042.index", ""})
	}
	wants = append(wants, want{"write", 0, 175, "own-calls-7/00000000000000000042.log", ""},
		want{"write", 0, 0, "own-calls-7/00000000000000000042.log", "EBADF"})

	// Events cross the ring buffer asynchronously: wait for them, bounded.
	deadline := time.Now().Add(5 * time.Second)
	seen := 0 // the events came while running, not only at the flush
	for {
		mu.Lock()
		seen = len(events)
		mu.Unlock()
		if seen >= len(wants) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if seen < len(wants) {
		t.Errorf("%d of %d events read within 5 s while tracing", seen, len(wants))
	}
	var st unix.Stat_t
	if err := unix.Fstat(seg, &st); err != nil {
		t.Fatal(err)
	}
	dev := strconv.Itoa(int(unix.Major(st.Dev))) + ":" + strconv.Itoa(int(unix.Minor(st.Dev)))

	if len(events) != len(wants) {
		for _, e := range events {
			t.Logf("event: %+v", *e)
		}
		t.Fatalf("%d events, want %d", len(events), len(wants))
	}
	for i, e := range events {
		w := wants[i]
		got := want{e.Op, e.Bytes, e.Offset, e.File, e.Error}
		if got != w {
			t.Errorf("event %d: %+v, want %+v", i, got, w)
		}
		if e.Topic != "own-calls" || e.Partition != 7 || e.Dev != dev {
			t.Errorf("event %d: topic %q partition %d dev %q, want own-calls 7 %s", i, e.Topic, e.Partition, e.Dev, dev)
		}
		if e.Start.Before(before.Add(-time.Millisecond)) || e.End.After(after.Add(time.Millisecond)) || e.End.Before(e.Start) {
			t.Errorf("event %d: %v..%v outside the calls' window %v..%v", i, e.Start, e.End, before, after)
		}
		if _, err := os.Stat(filepath.Join("/proc/self/task", strconv.Itoa(e.TID))); err != nil || e.Thread == "" || e.Thread == "?" {
			t.Errorf("event %d: tid %d thread %q is not a thread of this process", i, e.TID, e.Thread)
		}
	}

	// Every timed call's start was taken out again: the count that lets
	// the exits of untraced writes skip the lookup is back to zero.
	var pending int64
	if err := tr.objs.KsioPending.Lookup(uint32(0), &pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Errorf("ksio_pending = %d after the calls returned, want 0", pending)
	}

	sums, unnamed, err := tr.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	perOp := map[string]Summary{}
	for _, s := range sums {
		perOp[s.Op] = s
		if s.Topic != "own-calls" || s.Partition != 7 {
			t.Errorf("summary for %s-%d, want only own-calls-7", s.Topic, s.Partition)
		}
	}
	wantCount := map[string]uint64{}
	wantBytes := map[string]uint64{}
	wantErrors := map[string]uint64{}
	for _, w := range wants {
		wantCount[w.op]++
		wantBytes[w.op] += uint64(w.bytes)
		if w.errno != "" {
			wantErrors[w.op]++
		}
	}
	for op, n := range wantCount {
		if s := perOp[op]; s.Count != n || s.Bytes != wantBytes[op] || s.Errors != wantErrors[op] {
			t.Errorf("summary %s: %d calls, %d bytes, %d errors; want %d, %d, %d", op, s.Count, s.Bytes, s.Errors, n, wantBytes[op], wantErrors[op])
		}
	}
	if len(perOp) != len(wantCount) {
		t.Errorf("summary ops %v, want %v", perOp, wantCount)
	}
	if unnamed != 0 {
		t.Errorf("%d calls on unnamed files", unnamed)
	}
	stats, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.RingbufDrops != 0 || stats.HistFull != 0 || stats.StartFull != 0 || stats.Unnamed != 0 {
		t.Errorf("losses: %+v", stats)
	}
	t.Logf("stats: %+v", stats)

	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	progs, err := KernelPrograms()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if name, ok := progs[id]; ok {
			t.Errorf("program %d (%s) still loaded after Close", id, name)
		}
	}
}
