package iotrace

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestDecodeRunqEvent(t *testing.T) {
	if n := binary.Size(iorunqIorunqEvent{}); n != runqEventSize {
		t.Fatalf("struct iorunq_event is %d bytes, the decoder reads %d", n, runqEventSize)
	}
	b := make([]byte, runqEventSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], 1_000_000)
	le.PutUint64(b[8:], 3_500_000)
	le.PutUint32(b[16:], 4711)
	le.PutUint32(b[20:], 1)
	le.PutUint32(b[24:], 900)
	le.PutUint32(b[28:], 899)
	copy(b[32:48], "kworker/1:2\x00junk")
	le.PutUint32(b[48:], 1)
	le.PutUint32(b[52:], 1)
	// Holders: the hog for 2 ms, the CPU idle for 0.5 ms, one unused.
	le.PutUint64(b[56:], 500_000)
	le.PutUint64(b[88:], 2_000_000)
	le.PutUint32(b[96:], 899)
	le.PutUint32(b[100:], 900)
	copy(b[104:120], "kworker/1:2\x00")
	le.PutUint32(b[runqWakerOffset:], 77)
	le.PutUint32(b[runqWakerOffset+4:], 70)
	copy(b[runqWakerOffset+8:], "data-plane-kafk")
	le.PutUint32(b[runqWakerOffset+28:], 1)               // timer
	full := append(b[:len(b):len(b)], make([]byte, 8)...) // ring samples are padded to 8 bytes
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"exact", b, true},
		{"longer", full, true},
		{"short by one", b[:runqEventSize-1], false},
		{"odd", b[:13], false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := decodeRunqEvent(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			clock := clockOffset{realMinusMono: int64(time.Hour)}
			rd := runDelay(&ev, clock, func(tid int) string { return "thread-" + strconv.Itoa(tid) })
			want := event.RunDelay{Kind: event.KindRunDelay, Start: time.Unix(3600, 1_000_000).UTC(),
				End: time.Unix(3600, 3_500_000).UTC(), LatencyMs: 2.5, TID: 4711, Thread: "thread-4711", CPU: 1,
				Preempted: true, HolderPID: 899, HolderTID: 900, HolderComm: "kworker/1:2", Throttled: true,
				Holders:  []event.RunHolder{{PID: 899, TID: 900, Comm: "kworker/1:2", Ms: 2}, {Ms: 0.5}},
				WakerPID: 70, WakerTID: 77, WakerComm: "data-plane-kafk"}
			if !reflect.DeepEqual(*rd, want) {
				t.Errorf("got  %+v\nwant %+v", *rd, want)
			}
			if rd.Latency() != 2500*time.Microsecond {
				t.Errorf("latency %v", rd.Latency())
			}
			if !wakeup(&ev, clock, func(int) string { return "" }).Timer {
				t.Error("the timer flag was not decoded")
			}
		})
	}
	var comm [16]int8
	for i := range comm {
		comm[i] = 'a'
	}
	if got := commString(comm[:]); got != strings.Repeat("a", 16) {
		t.Errorf("comm without NUL: %q", got)
	}
}

// runDelaySpinner starts `sh -c 'while :; do :; done'`, pinned to cpu
// with taskset, under the name (comm) name, and returns its pid. It is
// killed at the end of the test.
func runDelaySpinner(t *testing.T, cpu int, name string) int {
	t.Helper()
	taskset := labtest.Tool("taskset")
	if taskset == "" {
		labtest.Unavailable(t, "taskset not found (util-linux)")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		labtest.Unavailable(t, "no sh: %v", err)
	}
	// comm is the name of the file executed: a symlink names the shell.
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(taskset, "-c", strconv.Itoa(cpu), link, "-c", "while :; do :; done")
	exited, err := lab.StartChild(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, cmd.Process.Pid)
		}
	})
	// taskset execs the shell: same pid, once comm is the shell's name.
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) == name {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: comm %q after 5s, want %q", pid, b, name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runDelay is /proc/PID/schedstat's second field: the time the task
// waited on a run queue, in all, as the scheduler counts it.
func schedRunDelay(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		t.Fatalf("schedstat %q", b)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}

// traceRunDelays traces pid's run delays of at least min for d and
// returns them, with the scheduler's own count of pid's run-queue wait
// over the same time.
func traceRunDelays(t *testing.T, pid int, min, d time.Duration) (delays []*event.RunDelay, sched time.Duration, st Stats) {
	t.Helper()
	tr, err := Open(Config{PID: pid, LogDirs: []string{t.TempDir()}, RunQueue: true, RunQueueMin: min})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.Mode().RunQueue || !strings.Contains(tr.Mode().String(), "run-queue delays") {
		t.Errorf("mode %q does not say run-queue delays are traced", tr.Mode())
	}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- tr.RunAll(ctx, Handlers{RunDelay: func(r *event.RunDelay) error {
			mu.Lock()
			delays = append(delays, r)
			mu.Unlock()
			return nil
		}})
	}()
	before := schedRunDelay(t, pid)
	from := time.Now()
	time.Sleep(d)
	after := schedRunDelay(t, pid)
	to := time.Now()
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunAll did not return 10s after its context ended")
	}
	if st, err = tr.Stats(); err != nil {
		t.Fatal(err)
	}
	closeAndCheckPrograms(t, tr, 14+7) // switch, waking, wakeup_new, the entries and exits of timers and softirqs
	// The scheduler adds a wait to schedstat when it ends: compare the
	// delays that ended between the two reads.
	var in []*event.RunDelay
	for _, r := range delays {
		if !r.End.Before(from) && !r.End.After(to) {
			in = append(in, r)
		}
	}
	return in, after - before, st
}

// TestRunDelays: a busy process pinned to one CPU with another busy
// process waits for that CPU about half the time, in slices; every wait
// the tracer reports is at least the threshold, on that CPU, behind the
// other process, and adds up to the scheduler's own count (schedstat).
// Alone on the CPU, it hardly waits.
func TestRunDelays(t *testing.T) {
	requireRoot(t)
	cpu := runtime.NumCPU() - 1
	target := runDelaySpinner(t, cpu, "ks-runq-target")

	t.Run("alone", func(t *testing.T) {
		delays, sched, st := traceRunDelays(t, target, time.Millisecond, 2*time.Second)
		var long []string
		for _, r := range delays {
			if r.Latency() >= 5*time.Millisecond {
				long = append(long, fmt.Sprintf("%+v", *r))
			}
		}
		t.Logf("alone on cpu%d: %d delays >= 1ms, %d >= 5ms; schedstat wait %v; stats %+v", cpu, len(delays), len(long), sched, st)
		if len(long) > 1 {
			t.Errorf("alone on its CPU, %d waits of 5 ms or more:\n%s", len(long), strings.Join(long, "\n"))
		}
	})

	t.Run("contended", func(t *testing.T) {
		hog := runDelaySpinner(t, cpu, "ks-runq-hog")
		const min = time.Millisecond
		delays, sched, st := traceRunDelays(t, target, min, 2*time.Second)
		var total time.Duration
		behindHog, holdersHog := 0, 0
		for _, r := range delays {
			total += r.Latency()
			if r.TID != target || r.Thread != "ks-runq-target" {
				t.Errorf("delay of tid %d (%q), want the target %d: %+v", r.TID, r.Thread, target, *r)
			}
			if r.Latency() < min || r.LatencyMs < 1 || !r.End.After(r.Start) {
				t.Errorf("delay under the threshold or backward: %+v", *r)
			}
			if r.CPU != cpu {
				t.Errorf("delay on cpu%d, the target is pinned to cpu%d: %+v", r.CPU, cpu, *r)
			}
			// A busy loop never sleeps: it only waits after preemption.
			if !r.Preempted {
				t.Errorf("a busy loop's wait not after a preemption: %+v", *r)
			}
			var holderMs float64
			for _, h := range r.Holders {
				holderMs += h.Ms
			}
			if holderMs > r.LatencyMs*1.001+0.01 {
				t.Errorf("holders ran %.3f ms of a %.3f ms wait: %+v", holderMs, r.LatencyMs, *r)
			}
			if len(r.Holders) > 0 && r.Holders[0].PID == hog && r.Holders[0].Comm == "ks-runq-hog" && r.Holders[0].Ms >= r.LatencyMs*0.8 {
				holdersHog++
			}
			if r.HolderPID == hog && r.HolderTID == hog && r.HolderComm == "ks-runq-hog" {
				behindHog++
			} else {
				t.Logf("behind another task: %+v", *r)
			}
		}
		t.Logf("contended on cpu%d: %d delays >= %v, %d behind the hog (pid %d), %v in all; schedstat %v; stats %+v",
			cpu, len(delays), min, behindHog, hog, total, sched, st)
		if len(delays) < 50 {
			t.Fatalf("%d run delays in 2 s of two busy loops on one CPU, want many", len(delays))
		}
		// Between two busy loops on one CPU, whoever ran before the
		// target got the CPU back is the other loop, but for a
		// kernel thread now and then.
		if behindHog < len(delays)*9/10 {
			t.Errorf("%d of %d delays behind the hog, want at least 90%%", behindHog, len(delays))
		}
		// And the CPU's run slices during each wait are the hog's.
		if holdersHog < len(delays)*9/10 {
			t.Errorf("%d of %d delays with the hog first among the holders for 80%% of the wait, want at least 90%%", holdersHog, len(delays))
		}
		// Half of 2 s waiting; the scheduler counts every wait, the
		// tracer those of 1 ms or more: nearly all of them here.
		if sched < 600*time.Millisecond {
			t.Errorf("schedstat: the target waited only %v of 2 s", sched)
		}
		if total > sched+10*time.Millisecond || total < sched*8/10 {
			t.Errorf("traced waits add up to %v, schedstat counted %v", total, sched)
		}
		if st.RunDelayRingbufDrops != 0 || st.RunDelayStartFull != 0 {
			t.Errorf("losses: %+v", st)
		}
		if st.RunDelayEvents < uint64(len(delays)) {
			t.Errorf("stats count %d events, %d delivered", st.RunDelayEvents, len(delays))
		}
		for _, r := range delays {
			if r.Throttled {
				t.Errorf("no quota, yet a wait marked throttled: %+v", *r)
				break
			}
		}
	})

	// In a cgroup v1 cpu cgroup limited to a tenth of a CPU, the target
	// waits most of the time, for quota: the waits say so.
	t.Run("throttled", func(t *testing.T) {
		root := "/sys/fs/cgroup/cpu"
		if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
			labtest.Unavailable(t, "no cgroup v1 cpu controller at %s: %v", root, err)
		}
		cg := filepath.Join(root, fmt.Sprintf("kscope-runq-%d", os.Getpid()))
		if err := os.Mkdir(cg, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(target)), 0o644)
			if err := os.Remove(cg); err != nil {
				t.Errorf("cgroup %s left behind: %v", cg, err)
			}
		})
		for file, v := range map[string]string{"cpu.cfs_quota_us": "10000", "cgroup.procs": strconv.Itoa(target)} {
			if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		}
		delays, sched, st := traceRunDelays(t, target, time.Millisecond, 2*time.Second)
		var total, throttled time.Duration
		for _, r := range delays {
			total += r.Latency()
			if r.Throttled {
				throttled += r.Latency()
			}
		}
		t.Logf("a tenth of a CPU: %d delays, %v in all, %v of it throttled; schedstat %v; stats %+v", len(delays), total, throttled, sched, st)
		if total < time.Second || throttled < total*9/10 {
			t.Errorf("waited %v of 2 s, %v of it marked throttled; want over 1 s, 90%% throttled", total, throttled)
		}
	})
}

// closeAndCheckPrograms checks that tr loaded want programs, closes it
// and checks that none of them is left in the kernel soon after.
func closeAndCheckPrograms(t *testing.T, tr *Tracer, want int) {
	t.Helper()
	ids, err := tr.ProgramIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != want {
		t.Errorf("%d programs loaded, want %d", len(ids), want)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	// A BTF tracepoint's link gives its program back after an RCU grace
	// period (kernels since 6.9 defer it), so the program may outlive
	// Close by a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		progs, err := KernelPrograms()
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, id := range ids {
			if name, ok := progs[id]; ok {
				left = append(left, fmt.Sprintf("%d (%s)", id, name))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("programs still loaded 5 s after Close: %s", strings.Join(left, ", "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wakeScript runs two threads: the sleeper waits on an event the waker
// sets every 20 ms of busy work, 40 times, once a line comes on stdin;
// each prints its native thread id first.
const wakeScript = `
import threading, time, sys
ev = threading.Event()
done = threading.Event()
def sleeper():
    sys.stdout.write("sleeper %d\n" % threading.get_native_id()); sys.stdout.flush()
    while not done.is_set():
        ev.wait(1)
        ev.clear()
def waker():
    sys.stdout.write("waker %d\n" % threading.get_native_id()); sys.stdout.flush()
    sys.stdin.readline()
    for _ in range(40):
        t = time.monotonic()
        while time.monotonic() - t < 0.02:
            pass
        ev.set()
    done.set()
    ev.set()
a = threading.Thread(target=sleeper); b = threading.Thread(target=waker)
a.start(); b.start(); a.join(); b.join()
`

// traceWakeups runs script (python3) after it printed its two threads'
// ids ("NAME TID" lines), sends it a line on stdin to start, and returns
// the ids and the wake-ups the tracer reported over 3 s.
func traceWakeups(t *testing.T, script string) (map[string]int, []*event.Wakeup, *Tracer) {
	t.Helper()
	requireRoot(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		labtest.Unavailable(t, "python3 for the two-thread target: %v", err)
	}
	// Bounded: the target dies after 30 s whatever happens.
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(pcancel)
	cmd := exec.CommandContext(pctx, py, "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	tids := map[string]int{}
	sc := bufio.NewScanner(out)
	for len(tids) < 2 && sc.Scan() {
		var name string
		var tid int
		if _, err := fmt.Sscan(sc.Text(), &name, &tid); err == nil {
			tids[name] = tid
		}
	}
	if len(tids) < 2 {
		t.Fatalf("the target printed thread ids %v (%v)", tids, sc.Err())
	}
	tr, err := Open(Config{PID: cmd.Process.Pid, LogDirs: []string{t.TempDir()}, RunQueue: true, RunQueueMin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	var mu sync.Mutex
	var wakes []*event.Wakeup
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if err := tr.RunAll(ctx, Handlers{Wakeup: func(u *event.Wakeup) error {
		mu.Lock()
		wakes = append(wakes, u)
		mu.Unlock()
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	return tids, wakes, tr
}

// sockScript runs two threads: the reader blocks in recv on a loopback
// TCP connection that the writer sends a byte on every 20 ms, 40 times,
// once a line comes on stdin. The byte reaches the reader through the
// network's receive softirq, run in the writer's context as its send
// leaves the loopback device.
const sockScript = `
import socket, threading, time, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
w = socket.create_connection(srv.getsockname()); r, _ = srv.accept()
def reader():
    sys.stdout.write("reader %d\n" % threading.get_native_id()); sys.stdout.flush()
    n = 0
    while n < 40:
        n += len(r.recv(1))
def writer():
    sys.stdout.write("writer %d\n" % threading.get_native_id()); sys.stdout.flush()
    sys.stdin.readline()
    for _ in range(40):
        time.sleep(0.02)
        w.send(b"x")
a = threading.Thread(target=reader); b = threading.Thread(target=writer)
a.start(); b.start(); a.join(); b.join()
`

// TestWakeupsFromSoftirq: a thread woken by data arriving on its socket
// is woken in the network's receive softirq, whatever task that ran in
// (here the sending thread of the same process; on a NIC, any task the
// interrupt found): not reported as woken by that thread, nor is the run
// delay that follows given a waker.
func TestWakeupsFromSoftirq(t *testing.T) {
	tids, wakes, tr := traceWakeups(t, sockScript)
	for _, u := range wakes {
		if u.TID == tids["reader"] && !u.Timer {
			t.Errorf("the reader reported woken by tid %d (%s): %+v", u.WakerTID, u.WakerThread, *u)
		}
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("threads %v: %d wake-ups; stats %+v", tids, len(wakes), st)
}

// TestWakeups: a thread that sleeps until another thread of its process
// wakes it, every 20 ms, is reported woken by that thread each time; a
// wake-up by a timer is reported as the sleep's timeout (no thread), and
// no wake-up names a thread outside the process.
func TestWakeups(t *testing.T) {
	tids, wakes, tr := traceWakeups(t, wakeScript)
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Python hands its interpreter lock over in 5 ms turns: in each 20 ms
	// cycle the sleeper's wait for the lock times out after 5 ms (its
	// timer woke it: reported with Timer and no waker) and then sleeps
	// until the waker sets the event or drops the lock (reported). So at
	// least one wake-up by the waker per cycle, ~15 ms of each cycle's
	// sleep, and timeouts of ~5 ms.
	good, timeouts := 0, 0
	var slept float64
	for _, u := range wakes {
		switch {
		case u.Timer:
			if u.WakerTID != 0 || u.WakerThread != "" {
				t.Errorf("a timeout with a waker: %+v", *u)
			}
			if u.TID == tids["sleeper"] && u.SleptMs >= 4 && u.SleptMs < 8 {
				timeouts++
			}
		case u.TID == tids["sleeper"] && u.WakerTID == tids["waker"] && u.SleptMs >= 1:
			good++
			slept += u.SleptMs
		case u.WakerTID != tids["waker"] && u.WakerTID != tids["sleeper"]:
			t.Errorf("woken by tid %d, not a thread of the target (%v): %+v", u.WakerTID, tids, *u)
		default:
			if testing.Verbose() {
				t.Logf("other: %+v", *u)
			}
		}
	}
	t.Logf("threads %v: %d wake-ups, %d of the sleeper by the waker, %.0f ms slept, %d timeouts of ~5 ms; stats %+v", tids, len(wakes), good, slept, timeouts, st)
	if good < 36 || slept < 40*10 || slept > 40*20+100 {
		t.Errorf("%d wake-ups of the sleeper by the waker, %.0f ms slept; want >= 36 over 400-900 ms (40 cycles of 20 ms)", good, slept)
	}
	if timeouts < 30 {
		t.Errorf("%d of the sleeper's ~5 ms timeouts reported as timer wake-ups, want >= 30 of 40", timeouts)
	}
}
