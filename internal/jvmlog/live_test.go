package jvmlog

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"golang.org/x/sys/unix"
)

// gcRunCause is the cause HotSpot gives a collection that jcmd GC.run
// asked for (GCCause::_dcmd_gc_run). A System.gc() call from Java reads
// "System.gc()".
const gcRunCause = "Diagnostic Command"

// window is the wall-clock time around one jcmd GC.run.
type window struct{ from, to time.Time }

// gcRuns runs jcmd PID GC.run n times, 300 ms apart, and returns the time
// around each.
func gcRuns(ctx context.Context, t *testing.T, pid, n int) []window {
	t.Helper()
	var ws []window
	for range n {
		from := time.Now()
		out, err := jfr.Jcmd(ctx, pid, "GC.run")
		to := time.Now()
		if err != nil || !strings.Contains(out, "Command executed successfully") {
			t.Fatalf("jcmd GC.run: %v %s", err, out)
		}
		ws = append(ws, window{from, to})
		time.Sleep(300 * time.Millisecond)
	}
	return ws
}

// checkGCRuns checks that each window holds exactly one full GC pause
// caused by GC.run, and that no other such pause was read.
func checkGCRuns(t *testing.T, pauses []event.JVMPause, ws []window) {
	t.Helper()
	var runs []event.JVMPause
	for _, p := range pauses {
		if p.Type == event.PauseGC && p.Cause == gcRunCause {
			runs = append(runs, p)
		}
	}
	if len(runs) != len(ws) {
		t.Fatalf("%d GC pauses with cause %q, want %d: %+v", len(runs), gcRunCause, len(ws), runs)
	}
	for i, p := range runs {
		w := ws[i]
		if p.Start.Before(w.from) || p.End.After(w.to) || p.Name != "Pause Full" || p.LatencyMs <= 0 || p.ReachMs <= 0 {
			t.Errorf("GC.run %d (%s .. %s): pause %+v", i, w.from.Format("15:04:05.000000"), w.to.Format("15:04:05.000000"), p)
		}
		t.Logf("GC.run %d: jcmd took %v; pause %s .. %s (%.3f ms, %.3f ms to reach the safepoint), %v after jcmd started",
			i, w.to.Sub(w.from).Round(time.Microsecond), p.Start.Format("15:04:05.000000"), p.End.Format("15:04:05.000000"),
			p.LatencyMs, p.ReachMs, p.Start.Sub(w.from).Round(time.Microsecond))
	}
}

// liveBroker starts a broker that logs gc* to its own file as Kafka's
// start script has it, and returns it with that file's output name.
func liveBroker(t *testing.T) (*lab.Broker, string) {
	t.Helper()
	if _, err := hostinfo.JDKTool("jcmd"); err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	gcLog := filepath.Join(t.TempDir(), "kafkaServer-gc.log")
	b := labtest.Broker(t, lab.BrokerConfig{JVMArgs: []string{"-XX:+UseG1GC",
		"-Xlog:gc*:file=" + gcLog + ":time,tags:filecount=10,filesize=100M"}})
	return b, "file=" + gcLog
}

// TestLive turns the output on in a real broker, has it collect three
// times with jcmd GC.run, turns it off and reads the pauses back.
func TestLive(t *testing.T) {
	b, operator := liveBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(dir, "kscope-vm.log")
	// A flight recording of the same pauses, to compare with.
	jfrPath := filepath.Join(dir, "pauses.jfr")
	rec, err := jfr.Start(ctx, b.PID(), "kscope-jvmlog-test", jfrPath, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	s, err := Start(ctx, b.PID(), path)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	t.Logf("Start took %v", started.Sub(began).Round(time.Millisecond))
	if _, ok := find(mustList(ctx, t, s), operator); !ok || !contains(s.before, operator) {
		t.Fatalf("the broker's own %s is not listed", operator)
	}
	time.Sleep(2 * time.Second) // some Cleanup safepoints for the clock fit
	ws := gcRuns(ctx, t, b.PID(), 3)
	time.Sleep(time.Second)
	stopping := time.Now()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %v", time.Since(stopping).Round(time.Millisecond))
	fi := checkStopped(ctx, t, s, operator)

	var pauses []event.JVMPause
	st, err := ReadPauses(path, func(p *event.JVMPause) error {
		pauses = append(pauses, *p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	on := stopping.Sub(started)
	t.Logf("%d bytes in %v on (%.0f bytes/s); %+v", fi.Size(), on.Round(time.Millisecond), float64(fi.Size())/on.Seconds(), st)
	if st.Malformed != 0 || st.Untimed != 0 || st.Partial != 0 || st.Merged < 3 || st.ClockSteps != 0 {
		t.Errorf("stats %+v", st)
	}
	if st.Precision > 500*time.Microsecond {
		t.Errorf("precision %v", st.Precision)
	}
	checkGCRuns(t, pauses, ws)

	if err := rec.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var fromJFR []event.JVMPause
	if _, err := jfr.ReadPauses(jfrPath, func(p *event.JVMPause) error {
		fromJFR = append(fromJFR, *p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkClock(t, path, pauses, st.Precision)
	compareSources(t, pauses, fromJFR, st.Precision)
}

// checkStopped checks what Stop left: the operator's output, not the
// session's, and a file that no longer grows, not even on a GC. It
// returns the file's size.
func checkStopped(ctx context.Context, t *testing.T, s *Session, operator string) os.FileInfo {
	t.Helper()
	if err := s.Stop(ctx); err == nil || !strings.Contains(err.Error(), "already stopped") {
		t.Errorf("second Stop: %v", err)
	}
	outs := mustList(ctx, t, s)
	if _, ok := find(outs, operator); !ok {
		t.Errorf("after Stop the broker's own output %s is gone: %+v", operator, outs)
	}
	if _, ok := find(outs, s.output); ok {
		t.Errorf("after Stop %s is still listed", s.output)
	}
	fi, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	gcRuns(ctx, t, s.PID, 1)
	if fi2, err := os.Stat(s.Path); err != nil || fi2.Size() != fi.Size() {
		t.Errorf("%s grew after Stop: %d -> %v (%v)", s.Path, fi.Size(), fi2.Size(), err)
	}
	return fi
}

// compareSources matches each pause of the log with the recording's
// pause of the same name whose end is nearest, and checks that the two
// agree on its start and end within the log's precision and JFR's own.
func compareSources(t *testing.T, log, rec []event.JVMPause, precision time.Duration) {
	t.Helper()
	var worst time.Duration
	matched := 0
	for _, p := range log {
		best := time.Duration(math.MaxInt64)
		var q *event.JVMPause
		for i := range rec {
			r := &rec[i]
			if d := r.End.Sub(p.End).Abs(); r.Name == p.Name && r.Cause == p.Cause && r.Type == p.Type && d < best {
				best, q = d, r
			}
		}
		if q == nil || best > time.Millisecond {
			t.Errorf("log pause %+v is not in the recording", p)
			continue
		}
		matched++
		d := max(p.Start.Sub(q.Start).Abs(), p.End.Sub(q.End).Abs())
		worst = max(worst, d)
		t.Logf("%s %s: log %s .. %s, jfr %s .. %s", p.Name, p.Cause, p.Start.Format("15:04:05.000000"), p.End.Format("15:04:05.000000"),
			q.Start.Format("15:04:05.000000"), q.End.Format("15:04:05.000000"))
	}
	t.Logf("%d of %d log pauses found in the recording (%d pauses); start and end agree to %v (log precision %v)", matched, len(log), len(rec), worst, precision)
	// JFR times its events with its own ticks, measured 50-100 µs off the
	// machine's clock and up to 190 µs apart from the log (a safepoint's
	// end is written a little after it): the log's precision plus 250 µs.
	if worst > precision+250*time.Microsecond {
		t.Errorf("the log and the recording differ by %v", worst)
	}
}

// checkClock compares the log's times with the wall clock that the log's
// nanosecond decoration (CLOCK_MONOTONIC) maps to on this machine, as
// measured now with clock_gettime: how far off ReadPauses's fitted
// offset is.
func checkClock(t *testing.T, path string, pauses []event.JVMPause, precision time.Duration) {
	t.Helper()
	var best int64 = math.MaxInt64
	var off int64
	for range 1000 {
		var a, b, c unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &b)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &c)
		if d := c.Nano() - a.Nano(); d < best {
			best, off = d, b.Nano()-(a.Nano()+c.Nano())/2
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int64]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if d, ok := splitDecorations([]byte(l)); ok && d.hasCounter && d.tags == "safepoint" {
			ends[d.counter+off] = true
		}
	}
	var worst time.Duration
	n := 0
	for _, p := range pauses {
		var nearest time.Duration = math.MaxInt64
		for e := range ends {
			nearest = min(nearest, p.End.Sub(time.Unix(0, e)).Abs())
		}
		if nearest < time.Millisecond {
			n++
			worst = max(worst, nearest)
		}
	}
	t.Logf("measured CLOCK_REALTIME-CLOCK_MONOTONIC %d ns (±%d); %d pause ends off it by at most %v (precision %v)", off, best/2, n, worst, precision)
	if n != len(pauses) || worst > precision+time.Microsecond {
		t.Errorf("%d of %d pauses placed; worst %v, precision %v", n, len(pauses), worst, precision)
	}
}
func mustList(ctx context.Context, t *testing.T, s *Session) []output {
	t.Helper()
	outs, err := s.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestStartErrors: what Start refuses, and what it reports when the JVM
// refuses.
func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		pid  int
		path string
		want string
	}{
		{0, filepath.Join(dir, "x.log"), "bad pid"},
		{1, filepath.Join(dir, "a b.log"), "cannot take"},
		{1, filepath.Join(dir, "x%p.log"), "cannot take"},
		{1, filepath.Join(dir, "x,y.log"), "cannot take"},
		{1, dir, "already exists"},
	} {
		if _, err := Start(ctx, c.pid, c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%d, %q): %v, want %q", c.pid, c.path, err, c.want)
		}
	}
}

// TestLiveRefused: a JVM that cannot create the file is reported with the
// JVM's reason, and leaves no output behind.
func TestLiveRefused(t *testing.T) {
	b, _ := liveBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, b.PID(), "/nonexistent-kscope-dir/vm.log")
	if err == nil || !strings.Contains(err.Error(), "No such file or directory") {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start: %v", err)
	s := &Session{PID: b.PID()}
	for _, o := range mustList(ctx, t, s) {
		if strings.Contains(o.name, "nonexistent") {
			t.Errorf("left behind: %+v", o)
		}
	}
}

func TestParseList(t *testing.T) {
	out := `8500:
Available log levels: off, trace, debug, info, warning, error
Log output configuration:
 #0: stdout all=warning uptime,level,tags
 #1: stderr all=off uptime,level,tags
 #2: file=/tmp/exp/kafkaServer-gc-%p.log all=off,gc*=info time,tags filecount=10,filesize=100M,async=false
 #3: file=/tmp/exp/k2.log all=off,safepoint=info,gc=info utctime,timenanos,level,tags filecount=0,filesize=20480K,async=false (reconfigured)
`
	outs, ok := parseList(out)
	if !ok || len(outs) != 4 || outs[2].name != "file=/tmp/exp/kafkaServer-gc-%p.log" || outs[3].index != 3 ||
		!strings.HasPrefix(outs[3].config, "all=off,safepoint=info,gc=info utctime,timenanos,level,tags") {
		t.Errorf("%v %+v", ok, outs)
	}
	if _, ok := parseList("8500:\nCommand executed successfully\n"); ok {
		t.Error("no configuration section: ok")
	}
}
