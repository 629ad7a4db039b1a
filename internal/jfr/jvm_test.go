package jfr

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// contendJava runs THREADS threads named contender-N that, for RUN_MS,
// take turns holding one Contend$Lock for HOLD_MS each. It prints its pid,
// starts on the line "go", prints "done" when the threads are through
// (they stay alive), and exits on the next line or at end of input.
const contendJava = `import java.io.*;
import java.util.concurrent.CountDownLatch;

public class Contend {
    static final class Lock {}
    static final Lock LOCK = new Lock();

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        long holdMs = Long.parseLong(args[1]);
        long runMs = Long.parseLong(args[2]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("pid " + ProcessHandle.current().pid());
        System.out.flush();
        if (!"go".equals(in.readLine())) return;
        CountDownLatch done = new CountDownLatch(threads), exit = new CountDownLatch(1);
        long until = System.nanoTime() + runMs * 1_000_000L;
        for (int i = 0; i < threads; i++) {
            new Thread(() -> {
                try {
                    while (System.nanoTime() < until) {
                        synchronized (LOCK) { Thread.sleep(holdMs); }
                    }
                    done.countDown();
                    exit.await();
                } catch (InterruptedException e) {
                }
            }, "contender-" + i).start();
        }
        done.await();
        System.out.println("done");
        System.out.flush();
        in.readLine();
        exit.countDown();
    }
}
`

const contendMonitor = "Contend$Lock"

type jvm struct {
	t      *testing.T
	pid    int
	stdin  *os.File
	lines  chan string
	exited chan struct{} // closed when the JVM has exited
	stderr string
}

// startJVM runs Contend.java in dir with jvmArgs and waits for its pid.
func startJVM(t *testing.T, dir string, jvmArgs []string, threads, holdMs, runMs int) *jvm {
	t.Helper()
	java, err := lab.JavaPath()
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	src := filepath.Join(dir, "Contend.java")
	if err := os.WriteFile(src, []byte(contendJava), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append(lab.ToolJVMArgs(), jvmArgs...), src, strconv.Itoa(threads), strconv.Itoa(holdMs), strconv.Itoa(runMs))
	cmd := exec.Command(java, args...)
	cmd.Dir = dir
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	j := &jvm{t: t, stdin: inW, lines: make(chan string, 16), exited: make(chan struct{}), stderr: filepath.Join(dir, "stderr")}
	errF, err := os.Create(j.stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errF
	exited, err := lab.StartChild(cmd)
	inR.Close()
	outW.Close()
	errF.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-exited
		close(j.exited)
	}()
	t.Cleanup(func() {
		inW.Close() // Contend exits at end of input
		select {
		case <-j.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-j.exited
		}
	})
	go func() {
		defer close(j.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		outR.Close()
	}()
	line := j.expect("pid ", 60*time.Second)
	if j.pid, err = strconv.Atoi(strings.TrimPrefix(line, "pid ")); err != nil || j.pid != cmd.Process.Pid {
		t.Fatalf("Contend printed %q; its pid is %d", line, cmd.Process.Pid)
	}
	return j
}

func (j *jvm) expect(prefix string, timeout time.Duration) string {
	j.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				j.t.Fatalf("Contend exited before printing %q; stderr:\n%s", prefix, j.tail())
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			j.t.Fatalf("Contend did not print %q within %v; stderr:\n%s", prefix, timeout, j.tail())
		}
	}
}

func (j *jvm) send(line string) {
	j.t.Helper()
	if _, err := fmt.Fprintln(j.stdin, line); err != nil {
		j.t.Fatal(err)
	}
}

func (j *jvm) wait() {
	j.t.Helper()
	select {
	case <-j.exited:
	case <-time.After(60 * time.Second):
		j.t.Fatalf("Contend did not exit; stderr:\n%s", j.tail())
	}
}

func (j *jvm) tail() string {
	b, _ := os.ReadFile(j.stderr)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// tasks maps the JVM's kernel thread ids to their names (comm: the JVM
// names a Java thread's kernel thread after it, cut to 15 bytes).
func (j *jvm) tasks() map[int]string {
	j.t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", j.pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		j.t.Fatal(err)
	}
	m := map[int]string{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err == nil {
			m[tid] = strings.TrimSpace(string(comm))
		}
	}
	return m
}

func readAll(t *testing.T, path string) ([]event.LockWait, Stats) {
	t.Helper()
	var got []event.LockWait
	st, err := ReadLockWaits(path, func(l *event.LockWait) error {
		got = append(got, *l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

func onMonitor(l []event.LockWait, monitor string) []event.LockWait {
	var out []event.LockWait
	for _, x := range l {
		if x.Monitor == monitor {
			out = append(out, x)
		}
	}
	return out
}

// checkContention checks the lock waits of a Contend run between begin
// and end against the JVM's threads (tasks, taken while they were alive).
func checkContention(t *testing.T, all []event.LockWait, j *jvm, tasks map[int]string, threads int, begin, end time.Time) {
	t.Helper()
	got := onMonitor(all, contendMonitor)
	if len(got) < 5 {
		t.Fatalf("%d lock waits on %s (of %d in all), want several", len(got), contendMonitor, len(all))
	}
	long := 0
	names := map[string]int{}
	for _, l := range got {
		if l.Latency() < time.Millisecond || l.LatencyMs != float64(l.Latency())/1e6 {
			t.Errorf("latency %v (%v ms) under the 1ms threshold or inconsistent: %+v", l.Latency(), l.LatencyMs, l)
		}
		if l.Latency() >= 20*time.Millisecond {
			long++
		}
		if l.Start.Before(begin.Add(-time.Second)) || l.End.After(end.Add(time.Second)) {
			t.Errorf("%+v outside the run %v .. %v", l, begin, end)
		}
		if !strings.HasPrefix(l.Thread, "contender-") || tasks[l.TID] != l.Thread || l.TID <= j.pid {
			t.Errorf("thread %q tid %d: the JVM's thread %d is %q (pid %d)", l.Thread, l.TID, l.TID, tasks[l.TID], j.pid)
		}
		if l.Owner != "" && (tasks[l.OwnerTID] != l.Owner || l.OwnerTID == l.TID) {
			t.Errorf("owner %q tid %d: the JVM's thread %d is %q", l.Owner, l.OwnerTID, l.OwnerTID, tasks[l.OwnerTID])
		}
		if prev, ok := names[l.Thread]; ok && prev != l.TID {
			t.Errorf("thread %s has tids %d and %d", l.Thread, prev, l.TID)
		}
		names[l.Thread] = l.TID
	}
	if long < len(got)/2 {
		t.Errorf("only %d of %d waits took 20ms or more (each holder sleeps 50ms)", long, len(got))
	}
	if len(names) != threads {
		t.Errorf("waits by %d threads, want %d: %v", len(names), threads, names)
	}
}

// TestJVM records a contended JVM twice at once: with
// -XX:StartFlightRecording and the Settings file from the start, and with
// Start/Stop through jcmd around the contention. Both recordings must give
// the same lock waits, of the JVM's real threads, and the same as the
// JDK's own jfr tool prints (when it is installed).
func TestJVM(t *testing.T) {
	if _, err := jcmdPath(); err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	jfc := filepath.Join(dir, "kscope.jfc")
	if err := os.WriteFile(jfc, Settings(time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	xxPath := filepath.Join(dir, "startup.jfr")
	jcmdFile := filepath.Join(dir, "jcmd.jfr")
	const threads = 3
	j := startJVM(t, dir, []string{"-XX:StartFlightRecording=filename=" + xxPath + ",settings=" + jfc}, threads, 50, 2000)

	rec, err := Start(ctx, j.pid, "kscope-test", jcmdFile, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID <= 1 || rec.Path != jcmdFile {
		t.Errorf("recording %+v: want a number after the startup recording's 1", rec)
	}
	begin := time.Now()
	j.send("go")
	j.expect("done", 60*time.Second)
	end := time.Now()
	tasks := j.tasks()
	if err := rec.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(ctx); err == nil || !strings.Contains(err.Error(), "already stopped") {
		t.Errorf("second Stop: %v", err)
	}
	viaJcmd, st := readAll(t, jcmdFile)
	t.Logf("jcmd recording: %+v", st)
	checkContention(t, viaJcmd, j, tasks, threads, begin, end)
	if want, ok := jfrPrint(t, jcmdFile); ok {
		compareLockWaits(t, monitorWaits(viaJcmd), want)
	}

	j.send("exit")
	j.wait()
	atStartup, st := readAll(t, xxPath)
	t.Logf("-XX:StartFlightRecording recording: %+v", st)
	checkContention(t, atStartup, j, tasks, threads, begin, end)
	compareLockWaits(t, onMonitor(atStartup, contendMonitor), onMonitor(viaJcmd, contendMonitor))
}

// jfrPrint returns the jdk.JavaMonitorEnter events of path as the JDK's
// jfr tool reads them, as LockWaits; false if the tool is missing.
func jfrPrint(t *testing.T, path string) ([]event.LockWait, bool) {
	t.Helper()
	bin := ""
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, "bin", "jfr")); err == nil {
			bin = filepath.Join(home, "bin", "jfr")
		}
	}
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("jfr"); err != nil {
			t.Logf("no jfr tool: not comparing with it")
			return nil, false
		}
	}
	out, err := exec.Command(bin, "print", "--json", "--events", "jdk.JavaMonitorEnter", path).Output()
	if err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	type jthread struct {
		OSThreadID int    `json:"osThreadId"`
		JavaName   string `json:"javaName"`
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Values struct {
					StartTime     time.Time `json:"startTime"`
					Duration      string    `json:"duration"`
					EventThread   *jthread  `json:"eventThread"`
					PreviousOwner *jthread  `json:"previousOwner"`
					MonitorClass  struct {
						Name string `json:"name"`
					} `json:"monitorClass"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	var l []event.LockWait
	for _, e := range doc.Recording.Events {
		v := e.Values
		// ISO 8601: PT0.195989402S, PT1M2.5S
		d, err := time.ParseDuration(strings.ToLower(strings.TrimPrefix(v.Duration, "PT")))
		if err != nil || v.EventThread == nil {
			t.Fatalf("jfr print: event %+v: %v", v, err)
		}
		w := event.LockWait{
			Start: v.StartTime.UTC(), End: v.StartTime.Add(d).UTC(), LatencyMs: float64(d) / 1e6,
			TID: v.EventThread.OSThreadID, Thread: v.EventThread.JavaName,
			Monitor: strings.ReplaceAll(v.MonitorClass.Name, "/", "."),
		}
		if o := v.PreviousOwner; o != nil {
			w.OwnerTID, w.Owner = o.OSThreadID, o.JavaName
		}
		l = append(l, w)
	}
	return l, true
}

// TestStartErrors covers what Start and Stop refuse or report without a
// JVM of the test's own.
func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.jfr")
	for _, c := range []struct {
		name      string
		pid       int
		rec, path string
		threshold time.Duration
		want      string
	}{
		{"pid", 0, "r", path, 0, "bad pid"},
		{"numeric name", 1, "123", path, 0, "bad recording name"},
		{"name with space", 1, "a b", path, 0, "bad recording name"},
		{"empty name", 1, "", path, 0, "bad recording name"},
		{"negative threshold", 1, "r", path, -time.Second, "negative threshold"},
		{"path with space", 1, "r", "/tmp/a b.jfr", 0, "space or quote"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Start(ctx, c.pid, c.rec, c.path, c.threshold); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	t.Run("no such process", func(t *testing.T) {
		if _, err := jcmdPath(); err != nil {
			labtest.Unavailable(t, "%v", err)
		}
		// Above the kernel's largest pid_max, so never a process.
		_, err := Start(ctx, 1<<22+1, "r", path, time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "No such process") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q", err)
		}
		r := &Recording{PID: 1<<22 + 1, Name: "r", Path: path, ID: 2}
		if err := r.Stop(ctx); err == nil || !strings.Contains(err.Error(), "has exited") {
			t.Errorf("Stop: %v", err)
		}
	})
}

func TestSettings(t *testing.T) {
	s := string(Settings(1500 * time.Microsecond))
	for _, want := range []string{`<event name="jdk.JavaMonitorEnter">`, `<setting name="threshold">1500000 ns</setting>`, `<setting name="enabled">true</setting>`} {
		if !strings.Contains(s, want) {
			t.Errorf("settings lack %s:\n%s", want, s)
		}
	}
}

// monitorWaits drops the parks (jdk.ThreadPark): jfr print is asked for
// jdk.JavaMonitorEnter only.
func monitorWaits(ws []event.LockWait) []event.LockWait {
	var out []event.LockWait
	for _, w := range ws {
		if !w.Park {
			out = append(out, w)
		}
	}
	return out
}
