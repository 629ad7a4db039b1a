package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// TestIotrace runs a real broker with its log directory on an ext4 file
// system on a loop device and traces it with real eBPF: the bytes traced
// per partition must equal the growth of its segment files, every write
// must land on record batch boundaries of the file it is attributed to,
// a 300 ms fsfreeze must show up as writes blocked for about 300 ms on the
// partition being produced to, and no program may outlive a tracer, even
// a `kscope iotrace` process ended with SIGTERM or SIGKILL.
func TestIotrace(t *testing.T) {
	iotRequire(t)
	libs := labtest.RequireKafka(t)
	// The image on tmpfs: any slow call outside the injected freeze is
	// then the tracer's error, not the host disk's (a 124 ms fsync of the
	// raft log on a disk-backed image failed one full-suite run).
	mnt, _ := iotLoopFSIn(t, ramDir(t), "ext4")
	cfg := lab.BrokerConfig{
		Dir:        filepath.Join(t.TempDir(), "broker"),
		LibsDir:    libs,
		LogDirs:    []string{filepath.Join(mnt, "data")},
		ExtraProps: map[string]string{"num.partitions": "3"},
	}
	b := labtest.Broker(t, cfg)
	logDir := filepath.Join(mnt, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("volume", func(t *testing.T) { testIotraceVolume(ctx, t, b, logDir) })
	t.Run("stall", func(t *testing.T) { testIotraceStall(ctx, t, b, mnt, logDir) })
	t.Run("cli-summary", func(t *testing.T) { testIotraceCLISummary(ctx, t, b, logDir) })
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run("leak-"+sig.String(), func(t *testing.T) { testIotraceProcessLeak(ctx, t, b, logDir, sig) })
	}
	// Last: it restarts the broker.
	t.Run("follow-restart", func(t *testing.T) { testIotraceFollow(ctx, t, b, cfg) })
}

// testIotraceFollow: `kscope iotrace --auto` follows the broker across a
// restart: writes of both processes are reported, each by its own
// threads, and no program of ours is left afterwards.
func testIotraceFollow(ctx context.Context, t *testing.T, b *lab.Broker, cfg lab.BrokerConfig) {
	c := iotStartCLI(ctx, t, "--auto", "--min-latency", "0", "--format", "json", "--journal=false")
	first := b.PID()
	if err := traffic.ProduceFranz(ctx, b.Addr(), "iotrace-follow-1", 200, "none", false); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	nb, err := lab.StartBroker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Stop() })
	want := fmt.Sprintf("iotrace: tracing pid %d,", nb.PID())
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.errOut(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("kscope iotrace did not attach to the new broker (pid %d): %s", nb.PID(), c.errOut())
		}
		time.Sleep(100 * time.Millisecond)
	}
	ours := iotProgramsOf(t, c.cmd.Process.Pid)
	if err := traffic.ProduceFranz(ctx, nb.Addr(), "iotrace-follow-2", 200, "none", false); err != nil {
		t.Fatal(err)
	}
	secondTIDs := threadsOf(t, nb.PID())
	if err := c.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("kscope iotrace on SIGINT: %v: %s", err, c.errOut())
	}
	iotNoneLoaded(t, ours)
	errOut := c.errOut()
	if !strings.Contains(errOut, fmt.Sprintf("broker pid %d exited; waiting", first)) {
		t.Errorf("no word of the broker exiting: %s", errOut)
	}
	writes := map[string]int{}
	sc := bufio.NewScanner(&c.stdout)
	for sc.Scan() {
		var w event.Write
		if json.Unmarshal(sc.Bytes(), &w) != nil || w.Op == "" {
			continue
		}
		switch w.Topic {
		case "iotrace-follow-1":
			// Threads of the first broker (some are born during its
			// shutdown, so they are not listed ahead).
			if secondTIDs[w.TID] {
				t.Errorf("write to %s by tid %d, a thread of the second broker", w.Topic, w.TID)
			}
		case "iotrace-follow-2":
			if !secondTIDs[w.TID] {
				t.Errorf("write to %s by tid %d, not a thread of the second broker", w.Topic, w.TID)
			}
		}
		writes[w.Topic]++
	}
	if writes["iotrace-follow-1"] == 0 || writes["iotrace-follow-2"] == 0 {
		t.Errorf("writes per topic: %v, want both brokers' writes", writes)
	}
	t.Logf("followed pid %d then %d: %v; stderr: %s", first, nb.PID(), writes, strings.TrimSpace(errOut))
}

// threadsOf lists the thread ids of process pid.
func threadsOf(t *testing.T, pid int) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	tids := map[int]bool{}
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids[tid] = true
		}
	}
	return tids
}

// iotRequire checks root, BPF ring buffers and the loop-device tools.
func iotRequire(t *testing.T) {
	t.Helper()
	labtest.RequireRoot(t)
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "fsfreeze", "losetup"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "iotrace e2e: %s not found", tool)
		}
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		labtest.Unavailable(t, "iotrace e2e: no kernel BTF (CO-RE): %v", err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		labtest.Unavailable(t, "iotrace e2e: BPF ring buffers not available: %v", err)
	}
	m.Close()
}

func iotRun(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(labtest.Tool(name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// iotTracer traces a broker and collects its events until stop is called:
// its writes, and with Config.Steal the hypervisor's steal.
type iotTracer struct {
	tr     *iotrace.Tracer
	ids    []ebpf.ProgramID
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	events []*event.Write
	steals []*event.CPUSteal
}

func iotStart(t *testing.T, b *lab.Broker, logDir string, minLatency time.Duration) *iotTracer {
	t.Helper()
	return iotStartWith(t, iotrace.Config{PID: b.PID(), LogDirs: []string{logDir}, MinLatency: minLatency})
}

func iotStartWith(t *testing.T, cfg iotrace.Config) *iotTracer {
	t.Helper()
	tr, err := iotrace.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tr.ProgramIDs()
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	it := &iotTracer{tr: tr, ids: ids, cancel: cancel, done: make(chan error, 1)}
	go func() {
		it.done <- tr.RunAll(ctx, iotrace.Handlers{
			Write: func(w *event.Write) error {
				it.mu.Lock()
				it.events = append(it.events, w)
				it.mu.Unlock()
				return nil
			},
			Steal: func(s *event.CPUSteal) error {
				it.mu.Lock()
				it.steals = append(it.steals, s)
				it.mu.Unlock()
				return nil
			},
		})
	}()
	t.Cleanup(func() { it.stop(t) })
	return it
}

// stop detaches, drains the ring buffer and returns every event; the
// programs must be gone from the kernel after Close.
func (it *iotTracer) stop(t *testing.T) []*event.Write {
	t.Helper()
	if it.cancel == nil {
		return it.events
	}
	it.cancel()
	it.cancel = nil
	if err := <-it.done; err != nil {
		t.Errorf("iotrace Run: %v", err)
	}
	st, err := it.tr.Stats()
	if err != nil {
		t.Error(err)
	}
	t.Logf("iotrace stats: %+v", st)
	// Nothing is deleted in these tests, so every file must be named.
	if st.RingbufDrops != 0 || st.HistFull != 0 || st.StartFull != 0 || st.Unnamed != 0 || st.StealRingbufDrops != 0 {
		t.Errorf("iotrace lost calls: %+v", st)
	}
	if err := it.tr.Close(); err != nil {
		t.Error(err)
	}
	iotNoneLoaded(t, it.ids)
	return it.events
}

// iotNoneLoaded fails if any of ids is still a loaded program. Programs
// are freed after an RCU grace period, so it waits a little.
func iotNoneLoaded(t *testing.T, ids []ebpf.ProgramID) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		progs, err := iotrace.KernelPrograms()
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, id := range ids {
			if name, ok := progs[id]; ok {
				left = append(left, fmt.Sprintf("%d:%s", id, name))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("BPF programs still loaded: %v", left)
	}
}

// iotProgramsOf returns the ids of the iotrace programs process pid holds
// open, from /proc/PID/fdinfo (prog_id of its bpf-prog fds): precise even
// when other tracers run at the same time.
func iotProgramsOf(t *testing.T, pid int) []ebpf.ProgramID {
	t.Helper()
	progs, err := iotrace.KernelPrograms()
	if err != nil {
		t.Fatal(err)
	}
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []ebpf.ProgramID
	for _, e := range ents {
		if target, _ := os.Readlink(filepath.Join(fdDir, e.Name())); target != "anon_inode:bpf-prog" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "fdinfo", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
				if err != nil {
					t.Fatalf("fdinfo %q: %v", line, err)
				}
				if _, named := progs[ebpf.ProgramID(n)]; named {
					ids = append(ids, ebpf.ProgramID(n))
				}
			}
		}
	}
	return ids
}

// iotLogSizes returns the size of every .log file under logDir, by path.
func iotLogSizes(t *testing.T, logDir string) map[string]int64 {
	t.Helper()
	sizes := map[string]int64{}
	files, err := filepath.Glob(filepath.Join(logDir, "*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		sizes[f] = st.Size()
	}
	return sizes
}

// iotBatchBounds returns the offsets where record batches start in a
// segment file, and its end: a v2 batch is baseOffset (8 bytes), then its
// length (4 bytes, big-endian) counting the bytes after it.
func iotBatchBounds(t *testing.T, path string) map[int64]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[int64]bool{0: true}
	for p := 0; p < len(data); {
		if len(data)-p < 12 {
			t.Fatalf("%s: %d stray bytes at %d", path, len(data)-p, p)
		}
		p += 12 + int(binary.BigEndian.Uint32(data[p+8:]))
		bounds[int64(p)] = true
	}
	return bounds
}

func testIotraceVolume(ctx context.Context, t *testing.T, b *lab.Broker, logDir string) {
	topics := []struct {
		name  string
		n     int
		codec string
	}{
		{"iotrace-a", 3000, "none"},
		{"iotrace-b", 2000, "none"},
		{"iotrace-c", 1500, "lz4"},
	}
	before := iotLogSizes(t, logDir)
	it := iotStart(t, b, logDir, 0)
	for _, tp := range topics {
		if err := traffic.ProduceFranz(ctx, b.Addr(), tp.name, tp.n, tp.codec, true); err != nil {
			t.Fatal(err)
		}
	}
	// Every produce was acknowledged (acks=all) after its write returned,
	// so the ring buffer holds them all: stop drains it.
	sums, unnamed, err := it.tr.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	events := it.stop(t)
	after := iotLogSizes(t, logDir)
	if unnamed != 0 {
		t.Errorf("%d calls on files that could not be named", unnamed)
	}

	ours := map[string]string{} // topic -> codec
	for _, tp := range topics {
		ours[tp.name] = tp.codec
	}
	// Growth per partition directory, from the segment files.
	growth := map[string]int64{}
	for f, size := range after {
		if loc, err := logdir.ParsePath(f); err == nil && ours[loc.Topic] != "" {
			growth[filepath.Base(loc.Dir)] += size - before[f]
		}
	}
	traced := map[string]int64{}
	perFile := map[string][]*event.Write{}
	for _, e := range events {
		if ours[e.Topic] == "" {
			continue // the cluster metadata log, also on this file system
		}
		if e.Error != "" {
			t.Errorf("failed call: %+v", *e)
		}
		dir := e.Topic + "-" + strconv.Itoa(int(e.Partition))
		if !strings.HasPrefix(e.File, dir+"/") || !strings.HasSuffix(e.File, ".log") {
			t.Errorf("event attributed to %s-%d but on file %s", e.Topic, e.Partition, e.File)
		}
		if e.Op == "fsync" || e.Op == "fdatasync" {
			continue
		}
		traced[dir] += e.Bytes
		perFile[e.File] = append(perFile[e.File], e)
	}
	summed := map[string]int64{}
	for _, s := range sums {
		if ours[s.Topic] != "" {
			summed[s.Topic+"-"+strconv.Itoa(int(s.Partition))] += int64(s.Bytes)
		}
	}
	withData := 0
	dirs := make([]string, 0, len(growth))
	for d := range growth {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		t.Logf("%-12s segment growth %7d bytes, traced %7d bytes in events, %7d in the in-kernel histograms", d, growth[d], traced[d], summed[d])
		if traced[d] != growth[d] || summed[d] != growth[d] {
			t.Errorf("%s: traced %d bytes (events) and %d (histograms), segment files grew by %d", d, traced[d], summed[d], growth[d])
		}
		if growth[d] > 0 {
			withData++
		}
	}
	for d := range traced {
		if _, ok := growth[d]; !ok {
			t.Errorf("bytes traced for %s, which has no segment file", d)
		}
	}
	if withData < 3 {
		t.Errorf("only %d partitions received data; want several", withData)
	}

	// Every write must be whole record batches of the file it is
	// attributed to, and the uncompressed ones must hold that topic's
	// values and no other topic's.
	for file, ws := range perFile {
		path := filepath.Join(logDir, file)
		bounds := iotBatchBounds(t, path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(ws, func(a, b *event.Write) int { return int(a.Offset - b.Offset) })
		next := before[path]
		for _, w := range ws {
			if w.Offset != next {
				t.Errorf("%s: write at %d, want %d (previous write's end)", file, w.Offset, next)
			}
			next = w.Offset + w.Bytes
			if !bounds[w.Offset] || !bounds[w.Offset+w.Bytes] || w.Offset+w.Bytes > int64(len(data)) {
				t.Errorf("%s: write [%d, %d) is not whole record batches", file, w.Offset, w.Offset+w.Bytes)
				continue
			}
			if ours[w.Topic] != "none" {
				continue
			}
			chunk := data[w.Offset : w.Offset+w.Bytes]
			for topic := range ours {
				has := bytes.Contains(chunk, []byte(topic+" value "))
				if has != (topic == w.Topic) {
					t.Errorf("%s: write [%d, %d) attributed to %s holds values of %s: %v", file, w.Offset, w.Offset+w.Bytes, w.Topic, topic, has)
				}
			}
		}
		if next != after[path] {
			t.Errorf("%s: writes end at %d, file is %d bytes", file, next, after[path])
		}
	}
}

func testIotraceStall(ctx context.Context, t *testing.T, b *lab.Broker, mnt, logDir string) {
	const topic = "iotrace-stall"
	const freeze = 300 * time.Millisecond
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The topic exists and is writable before tracing starts.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(topic + " value warm-up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	it := iotStart(t, b, logDir, 100*time.Millisecond)

	// Produce one record at a time, back to back, so that a write is
	// always about to happen while the file system is frozen.
	pctx, stopProducing := context.WithCancel(ctx)
	produced := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte(topic + " value " + strconv.Itoa(i))}).FirstErr()
			if pctx.Err() != nil {
				produced <- nil
				return
			}
			if err != nil {
				produced <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	iotRun(t, "fsfreeze", "-f", mnt)
	t1 := time.Now()
	time.Sleep(freeze)
	t2 := time.Now()
	iotRun(t, "fsfreeze", "-u", mnt)
	t3 := time.Now()
	time.Sleep(500 * time.Millisecond)
	stopProducing()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	events := it.stop(t)
	t.Logf("frozen from %s (fsfreeze -f returned %s) to %s (fsfreeze -u returned %s): %v to %v",
		t0.Format("15:04:05.000000"), t1.Format("15:04:05.000000"), t2.Format("15:04:05.000000"), t3.Format("15:04:05.000000"), t2.Sub(t1), t3.Sub(t0))

	// Wall-clock tolerance: the monotonic-to-wall conversion is good to
	// a microsecond; the rest is scheduling between this test and fsfreeze.
	const slack = 20 * time.Millisecond
	var stalled []*event.Write
	for _, e := range events {
		t.Logf("slow call: %s %s-%d %s %d bytes at %d, %.3f ms, %s..%s, thread %s", e.Op, e.Topic, e.Partition, e.File,
			e.Bytes, e.Offset, e.LatencyMs, e.Start.Format("15:04:05.000000"), e.End.Format("15:04:05.000000"), e.Thread)
		if e.Start.Before(t0.Add(-slack)) || e.End.After(t3.Add(slack)) {
			t.Errorf("slow call outside the freeze: %+v", *e)
		}
		if e.Topic == topic && e.Bytes > 0 {
			stalled = append(stalled, e)
		}
	}
	if len(stalled) == 0 {
		t.Fatalf("no write to %s blocked by the freeze", topic)
	}
	longest := slices.MaxFunc(stalled, func(a, b *event.Write) int { return cmp.Compare(a.Latency(), b.Latency()) })
	if lat := longest.Latency(); lat < t2.Sub(t1)-50*time.Millisecond || lat > t3.Sub(t0)+slack {
		t.Errorf("longest stalled write took %v, want about %v (between %v and %v)", lat, freeze, t2.Sub(t1), t3.Sub(t0))
	}
	if longest.End.Before(t2) {
		t.Errorf("stalled write ended at %v, before the thaw began at %v", longest.End, t2)
	}
	data, err := os.ReadFile(filepath.Join(logDir, longest.File))
	if err != nil {
		t.Fatal(err)
	}
	if end := longest.Offset + longest.Bytes; end > int64(len(data)) ||
		!bytes.Contains(data[longest.Offset:end], []byte(topic+" value ")) {
		t.Errorf("the stalled write [%d, %d) of %s does not hold %s's records", longest.Offset, end, longest.File, topic)
	}
}

// The helper process of the tests that signal or kill a command
// (iotrace, record, agent, lab fs): `kscope ARGS` itself, run by
// re-executing the test binary (as os/exec's tests do), so that it can be
// interrupted and killed like the real command. helperCommand makes one.
const kscopeHelperEnv = "KSCOPE_E2E_ARGS"

func TestKscopeHelperProcess(t *testing.T) {
	args := os.Getenv(kscopeHelperEnv)
	if args == "" {
		return // not the helper: nothing to test here
	}
	os.Exit(cli.Main(strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// helperCommand is `kscope ARGS` as a helper process of this test binary.
func helperCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKscopeHelperProcess$")
	cmd.Env = append(os.Environ(), kscopeHelperEnv+"="+strings.Join(args, "\n"))
	return cmd
}

// iotCLI runs `kscope iotrace ARGS` as a process and waits until it has
// attached; wait returns its exit error once it exits (bounded).
type iotCLI struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
	exited chan error
}

// iotStartCLI runs `kscope iotrace ARGS --functions off`: system calls
// only, so that bytes and program counts are exact on any kernel (function
// timing, where the kernel allows it, is tested in a VM:
// internal/iotrace TestFunctionsInVM).
func iotStartCLI(ctx context.Context, t *testing.T, args ...string) *iotCLI {
	t.Helper()
	return startCLI(ctx, t, "iotrace: tracing pid", append(append([]string{"iotrace"}, args...), "--functions", "off")...)
}

// startCLI runs `kscope ARGS` as a process and waits until a line of its
// stderr starts with ready.
func startCLI(ctx context.Context, t *testing.T, ready string, args ...string) *iotCLI {
	t.Helper()
	c := &iotCLI{exited: make(chan error, 1)}
	c.cmd = helperCommand(ctx, args...)
	c.cmd.Stdout = &c.stdout
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	attached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			if !seen && strings.HasPrefix(sc.Text(), ready) {
				seen = true
				close(attached)
			}
		}
		c.exited <- c.cmd.Wait()
	}()
	select {
	case <-attached:
	case err := <-c.exited:
		t.Fatalf("kscope %s exited before it was ready: %v: %s", args[0], err, c.errOut())
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		t.Fatalf("kscope %s was not ready in 30s: %s", args[0], c.errOut())
	}
	return c
}

func (c *iotCLI) errOut() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// stop sends sig and returns the exit error.
func (c *iotCLI) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.exited:
		return err
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		t.Fatalf("kscope iotrace did not exit on %v", sig)
	}
	return nil
}

// testIotraceCLISummary: `kscope iotrace --summary --format json`, ended
// with SIGINT, counts every byte written to a topic's segment files.
func testIotraceCLISummary(ctx context.Context, t *testing.T, b *lab.Broker, logDir string) {
	const topic = "iotrace-summary"
	before := iotLogSizes(t, logDir)
	c := iotStartCLI(ctx, t, "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir, "--summary", "--format", "json")
	if err := traffic.ProduceFranz(ctx, b.Addr(), topic, 1000, "none", false); err != nil {
		t.Fatal(err)
	}
	if err := c.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("kscope iotrace --summary on SIGINT: %v: %s", err, c.errOut())
	}
	var growth int64
	for f, size := range iotLogSizes(t, logDir) {
		if loc, err := logdir.ParsePath(f); err == nil && loc.Topic == topic {
			growth += size - before[f]
		}
	}
	var summed int64
	var writes uint64
	sc := bufio.NewScanner(&c.stdout)
	for sc.Scan() {
		var s struct {
			Topic string  `json:"topic"`
			Op    string  `json:"op"`
			Count uint64  `json:"count"`
			Bytes int64   `json:"bytes"`
			P99   float64 `json:"p99_le_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("summary line %q: %v", sc.Text(), err)
		}
		if s.Topic == topic {
			summed += s.Bytes
			writes += s.Count
		}
	}
	t.Logf("kscope iotrace --summary: %s: %d calls, %d bytes; segment files grew by %d bytes", topic, writes, summed, growth)
	if growth == 0 || summed != growth {
		t.Errorf("summary counts %d bytes for %s, its segment files grew by %d", summed, topic, growth)
	}
}

func testIotraceProcessLeak(ctx context.Context, t *testing.T, b *lab.Broker, logDir string, sig syscall.Signal) {
	args := []string{"--pid", strconv.Itoa(b.PID()), "--min-latency", "0", "--format", "json"}
	if sig == syscall.SIGKILL {
		args = append(args, "--log-dirs", logDir)
	} // else found from the broker's open files
	c := iotStartCLI(ctx, t, args...)
	ours := iotProgramsOf(t, c.cmd.Process.Pid)
	// --journal is on by default.
	want, err := iotrace.ProgramCount(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != want {
		t.Errorf("kscope iotrace holds %d BPF programs named %s*, want %d", len(ours), iotrace.ProgramPrefix, want)
	}
	topic := "iotrace-leak-" + strings.ToLower(strings.TrimPrefix(sig.String(), "signal "))
	topic = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r == '-' {
			return r
		}
		return '-'
	}, topic)
	if err := traffic.ProduceFranz(ctx, b.Addr(), topic, 200, "none", false); err != nil {
		t.Fatal(err)
	}
	err = c.stop(t, sig)
	var ee *exec.ExitError
	switch {
	case sig == syscall.SIGTERM && err != nil:
		t.Errorf("kscope iotrace on SIGTERM: %v: %s", err, c.errOut())
	case sig == syscall.SIGKILL && !errors.As(err, &ee):
		t.Errorf("kscope iotrace on SIGKILL: %v", err)
	}
	iotNoneLoaded(t, ours)
	if sig == syscall.SIGTERM {
		errOut, stdout := c.errOut(), &c.stdout
		if !strings.Contains(stdout.String(), `"topic":"`+topic+`"`) {
			t.Errorf("kscope iotrace printed no write to %s:\n%s", topic, stdout.String())
		}
		if !strings.Contains(errOut, "log dirs "+logDir+",") {
			t.Errorf("kscope iotrace did not find the log dir %s from the broker's open files: %s", logDir, errOut)
		}
		if !strings.Contains(errOut, "detached") {
			t.Errorf("kscope iotrace footer missing: %s", errOut)
		}
		t.Logf("kscope iotrace stderr: %s", strings.TrimSpace(errOut))
	}
}
