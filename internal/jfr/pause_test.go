package jfr

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// gcRunCause is the cause HotSpot gives a collection that jcmd GC.run
// asked for; a System.gc() call from Java reads "System.gc()".
const gcRunCause = "Diagnostic Command"

// gcWindow is the wall-clock time around one jcmd GC.run.
type gcWindow struct{ from, to time.Time }

// gcRuns runs jcmd PID GC.run n times, 300 ms apart.
func gcRuns(ctx context.Context, t *testing.T, pid, n int) []gcWindow {
	t.Helper()
	var ws []gcWindow
	for range n {
		from := time.Now()
		out, err := jcmd(ctx, pid, "GC.run")
		to := time.Now()
		if err != nil || !strings.Contains(out, "Command executed successfully") {
			t.Fatalf("jcmd GC.run: %v %s", err, out)
		}
		ws = append(ws, gcWindow{from, to})
		time.Sleep(300 * time.Millisecond)
	}
	return ws
}

// recordPauses records a broker's pauses with Start's settings (lock
// waits of lockThreshold or more) while load (if not nil) runs, then has
// it collect three times with jcmd GC.run.
func recordPauses(t *testing.T, lockThreshold time.Duration, load func(context.Context, *lab.Broker) error) (string, []gcWindow) {
	t.Helper()
	if _, err := jcmdPath(); err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	b := labtest.Broker(t, lab.BrokerConfig{JVMArgs: []string{"-XX:+UseG1GC"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pauses.jfr")
	rec, err := Start(ctx, b.PID(), "kscope-pauses", path, lockThreshold)
	if err != nil {
		t.Fatal(err)
	}
	if load != nil {
		if err := load(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	ws := gcRuns(ctx, t, b.PID(), 3)
	if err := rec.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return path, ws
}

// TestPausesLive records a real broker that collects three times on jcmd
// GC.run, and finds the three pauses, each inside the time of its jcmd,
// and every safepoint just as the JDK's jfr tool reads it.
func TestPausesLive(t *testing.T) {
	path, ws := recordPauses(t, time.Millisecond, nil)
	pauses, st := readPausesAll(t, path)
	t.Logf("%+v", st)
	checkGCRuns(t, pauses, ws)
	if want, ok := jfrPrintPauses(t, path); ok {
		comparePauses(t, pauses, st, want)
	}
}

func readPausesAll(t testing.TB, path string) ([]event.JVMPause, PauseStats) {
	t.Helper()
	var pauses []event.JVMPause
	st, err := ReadPauses(path, func(p *event.JVMPause) error {
		pauses = append(pauses, *p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pauses, st
}

// checkGCRuns checks that each window holds exactly one full GC pause
// caused by GC.run.
func checkGCRuns(t *testing.T, pauses []event.JVMPause, ws []gcWindow) {
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
		if p.Start.Before(w.from) || p.End.After(w.to) || p.Name != "Pause Full" || p.Source != PauseSource || p.LatencyMs <= 0 || p.ReachMs <= 0 {
			t.Errorf("GC.run %d (%s .. %s): pause %+v", i, w.from.Format("15:04:05.000000"), w.to.Format("15:04:05.000000"), p)
		}
		t.Logf("GC.run %d: pause %s .. %s (%.3f ms, %.3f ms to reach the safepoint)", i,
			p.Start.Format("15:04:05.000000"), p.End.Format("15:04:05.000000"), p.LatencyMs, p.ReachMs)
	}
}

// printed is one pause event as the JDK's jfr tool reads it.
type printed struct {
	Type       string    `json:"type"`
	ID         uint64    `json:"id"` // safepointId or gcId
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Name       string    `json:"name,omitempty"` // operation, GC name, phase name, G1 type
	Cause      string    `json:"cause,omitempty"`
	Safepoint  bool      `json:"safepoint,omitempty"`
	DurationNs int64     `json:"duration_ns"`
}

// jfrPrintPauses runs jfr print --json on the pause events of path;
// false if the tool is missing.
func jfrPrintPauses(t *testing.T, path string) ([]printed, bool) {
	t.Helper()
	bin, err := jdkTool("jfr")
	if err != nil {
		t.Logf("no jfr tool: not comparing with it")
		return nil, false
	}
	out, err := exec.Command(bin, "print", "--json", "--events", strings.Join(pauseEvents, ","), path).Output()
	if err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Type   string `json:"type"`
				Values struct {
					StartTime   time.Time `json:"startTime"`
					Duration    string    `json:"duration"`
					SafepointID *uint64   `json:"safepointId"`
					GCID        *uint64   `json:"gcId"`
					Operation   string    `json:"operation"`
					Safepoint   bool      `json:"safepoint"`
					Name        string    `json:"name"`
					Cause       string    `json:"cause"`
					G1Type      string    `json:"type"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	var l []printed
	for _, e := range doc.Recording.Events {
		v := e.Values
		d, err := time.ParseDuration(strings.ToLower(strings.TrimPrefix(v.Duration, "PT")))
		if err != nil {
			t.Fatalf("jfr print: duration %q: %v", v.Duration, err)
		}
		p := printed{Type: e.Type, Start: v.StartTime.UTC(), End: v.StartTime.Add(d).UTC(), DurationNs: int64(d),
			Name: v.Name + v.Operation + v.G1Type, Cause: v.Cause, Safepoint: v.Safepoint}
		switch {
		case v.SafepointID != nil:
			p.ID = *v.SafepointID
		case v.GCID != nil:
			p.ID = *v.GCID
		}
		l = append(l, p)
	}
	return l, true
}

// jdkTool finds a JDK tool next to $JAVA_HOME/bin/java, else on PATH.
func jdkTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, "bin", name)); err == nil {
			return filepath.Join(home, "bin", name), nil
		}
	}
	return exec.LookPath(name)
}

// comparePauses checks ReadPauses against the jfr tool: every safepoint
// with a begin and an end is one pause with exactly its span (to a µs, for
// the two ways of rounding ticks), named after its operation unless a GC
// pause lies in it; every GC pause in no safepoint is a pause of its own.
func comparePauses(t *testing.T, got []event.JVMPause, st PauseStats, want []printed) {
	t.Helper()
	type sp struct {
		start, end   time.Time
		began, ended bool
		op           string
	}
	sps := map[uint64]*sp{}
	get := func(id uint64) *sp {
		if sps[id] == nil {
			sps[id] = &sp{}
		}
		return sps[id]
	}
	var phases []printed
	for _, e := range want {
		switch e.Type {
		case evSafepointBegin:
			s := get(e.ID)
			s.start, s.began = e.Start, true
		case evSafepointEnd:
			s := get(e.ID)
			s.end, s.ended = e.End, true
		case evVMOperation:
			if e.Safepoint {
				get(e.ID).op = e.Name
			}
		case evGCPhasePause:
			phases = append(phases, e)
		}
	}
	near := func(a, b time.Time) bool { return math.Abs(float64(a.Sub(b))) <= float64(time.Microsecond) }
	used := make([]bool, len(got))
	complete := 0
	for id, s := range sps {
		if !s.began || !s.ended {
			continue
		}
		complete++
		found := false
		for i, p := range got {
			if !used[i] && near(p.Start, s.start) && near(p.End, s.end) {
				used[i], found = true, true
				if p.Type == event.PauseSafepoint && p.Name != s.op {
					t.Errorf("safepoint %d: name %q, jfr says %q", id, p.Name, s.op)
				}
				break
			}
		}
		if !found {
			t.Errorf("safepoint %d (%s, %s .. %s) not read", id, s.op, s.start.Format("15:04:05.000000"), s.end.Format("15:04:05.000000"))
		}
	}
	if int64(complete) != st.Safepoints {
		t.Errorf("%d safepoints read, jfr has %d", st.Safepoints, complete)
	}
	for i, p := range got {
		if used[i] {
			continue
		}
		ok := false
		for _, ph := range phases {
			ok = ok || (near(p.Start, ph.Start) && near(p.End, ph.End) && p.Type == event.PauseGC)
		}
		if !ok {
			t.Errorf("pause %+v is no safepoint and no GC pause of the recording", p)
		}
	}
	if st.GCPauses != int64(len(phases)) {
		t.Errorf("%d GC pauses read, jfr has %d", st.GCPauses, len(phases))
	}
}

// TestPausesTestdata reads testdata/pauses.jfr.gz, a broker under load
// that also had jcmd GC.run three times, and compares it with what the
// jfr tool printed for it (testdata/pauses.want.jsonl; both written by
// go test -tags updatetestdata -run TestPausesTestdataGen ./internal/jfr).
func TestPausesTestdata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pauses.jfr")
	if err := os.WriteFile(path, gunzip(t, filepath.Join("testdata", "pauses.jfr.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	got, st := readPausesAll(t, path)
	t.Logf("%+v", st)
	want := readPrinted(t, filepath.Join("testdata", "pauses.want.jsonl"))
	comparePauses(t, got, st, want)
	count := map[string]int{}
	for _, p := range got {
		count[p.Type+" "+p.Name+" / "+p.Cause]++
	}
	t.Logf("%v", count)
	if count["gc Pause Full / "+gcRunCause] != 3 || count["gc Pause Young (Normal) / G1 Evacuation Pause"] == 0 || st.Merged != st.GCPauses {
		t.Errorf("pauses %v", count)
	}
}

// gunzip reads a gzipped file.
func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readPrinted(t testing.TB, path string) []printed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var l []printed
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p printed
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		l = append(l, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPausesErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadPauses(filepath.Join(dir, "missing.jfr"), nil); err == nil || !strings.HasPrefix(err.Error(), "jfr: ") {
		t.Errorf("missing: %v", err)
	}
	data := gunzip(t, filepath.Join("testdata", "pauses.jfr.gz"))
	stop := errors.New("stop")
	n := 0
	st, err := readPauses(data, func(*event.JVMPause) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	var ce *callbackError
	if !errors.As(err, &ce) || ce.err != stop || st.Pauses != 2 {
		t.Errorf("callback error: %v %+v", err, st)
	}
	// Cut short: the first chunk is damaged, nothing is read, an error
	// names the chunk.
	if _, err := readPauses(data[:len(data)/2], func(*event.JVMPause) error { return nil }); err == nil || !strings.Contains(err.Error(), "chunk 1") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := readPauses([]byte("FLR\x00"), nil); err == nil {
		t.Error("a bare magic: no error")
	}
}

// FuzzReadPauses feeds readPauses crafted files: every chunk passes check
// first, and the decoder of this package must stay in bounds on the rest.
func FuzzReadPauses(f *testing.F) {
	f.Add(gunzip(f, filepath.Join("testdata", "pauses.jfr.gz")))
	f.Add(testdata(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		wd := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("readPauses has not finished after 10s on a %d-byte input", len(data)))
		})
		defer wd.Stop()
		var n int64
		st, err := readPauses(data, func(p *event.JVMPause) error {
			n++
			if p.End.Before(p.Start) || p.Name == "" || len(p.Name) > 400 || len(p.Cause) > 400 {
				t.Fatalf("bad pause %+v", p)
			}
			return nil
		})
		if st.Pauses != n {
			t.Fatalf("stats %+v, %d pauses", st, n)
		}
		if err != nil && (strings.Contains(err.Error(), panicked) || strings.Contains(err.Error(), "\n")) {
			t.Fatal(err)
		}
	})
}

func TestSettingsPauses(t *testing.T) {
	s := string(Settings(time.Millisecond))
	for _, e := range pauseEvents {
		want := "<event name=\"" + e + "\">\n    <setting name=\"enabled\">true</setting>\n    <setting name=\"stackTrace\">false</setting>\n    <setting name=\"threshold\">0 ns</setting>"
		if !strings.Contains(s, want) {
			t.Errorf("settings lack %s:\n%s", e, s)
		}
	}
	if !strings.HasSuffix(s, "</configuration>\n") {
		t.Errorf("settings end %q", s[len(s)-40:])
	}
}
