package jvmlog

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// readAll reads path with ReadPauses into a slice.
func readAll(t testing.TB, path string) ([]event.JVMPause, Stats) {
	t.Helper()
	var got []event.JVMPause
	st, err := ReadPauses(path, func(p *event.JVMPause) error {
		got = append(got, *p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

func writeFile(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vm.log")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTestdata reads testdata/g1-broker.log, written by Start's output on
// a Kafka 4.1.2 broker (Java 17, G1) that ran idle, had jcmd GC.run three
// times and took 3 million produced records: every GC line lies inside its
// safepoint and is merged into it.
func TestTestdata(t *testing.T) {
	got, st := readAll(t, filepath.Join("testdata", "g1-broker.log"))
	t.Logf("%+v", st)
	want := Stats{Bytes: st.Bytes, Lines: 368, Skipped: 46, Safepoints: 228, GCs: 94, Merged: 94, Pauses: 228, Precision: st.Precision}
	if st != want {
		t.Errorf("stats\n%+v, want\n%+v", st, want)
	}
	if st.Precision <= 0 || st.Precision > 20*time.Microsecond {
		t.Errorf("precision %v", st.Precision)
	}
	count := map[string]int{}
	for _, p := range got {
		count[p.Type+" "+p.Name+" / "+p.Cause]++
		if p.Kind != event.KindJVMPause || p.Source != Source || !p.End.After(p.Start) || p.ReachMs <= 0 ||
			math.Abs(p.LatencyMs-float64(p.End.Sub(p.Start))/1e6) > 1e-9 || p.ReachMs > p.LatencyMs {
			t.Errorf("bad pause %+v", p)
		}
	}
	wantCount := map[string]int{
		"safepoint Cleanup / ": 116, "safepoint ICBufferFull / ": 13, "safepoint JFRCheckpoint / ": 4, "safepoint RedefineClasses / ": 1,
		"gc Pause Young (Normal) / G1 Evacuation Pause": 22, "gc Pause Young (Concurrent Start) / G1 Evacuation Pause": 23,
		"gc Pause Remark / ": 23, "gc Pause Cleanup / ": 23, "gc Pause Full / Diagnostic Command": 3,
	}
	for k, n := range wantCount {
		if count[k] != n {
			t.Errorf("%d × %q, want %d", count[k], k, n)
		}
	}
	// Line 15, the first G1CollectFull: it ended at counter 241326211374.
	// While the file was written, CLOCK_REALTIME - CLOCK_MONOTONIC was
	// measured as 1795613643092366381 ns (±144 ns) on the same machine:
	// the fitted offset must agree.
	var full *event.JVMPause
	for i := range got {
		if got[i].Name == "Pause Full" {
			full = &got[i]
			break
		}
	}
	if full == nil {
		t.Fatal("no Pause Full")
	}
	wantEnd := time.Unix(0, 241326211374+1795613643092366381)
	if d := full.End.Sub(wantEnd); d < -st.Precision-time.Microsecond || d > st.Precision+time.Microsecond {
		t.Errorf("Pause Full ends %v off the measured clock (precision %v)", d, st.Precision)
	}
	if full.LatencyMs != 35.551072 || full.ReachMs != 0.014636 || full.Type != event.PauseGC {
		t.Errorf("Pause Full %+v", full)
	}
}

const (
	cleanup1 = "[2026-11-25T13:37:50.611+0000][227519219610ns][info][safepoint] Safepoint \"Cleanup\", Time since last: 1000104173 ns, Reaching safepoint: 16204 ns, Cleanup: 22365 ns, At safepoint: 1711 ns, Total: 40280 ns\n"
	gcFull   = "[2026-11-25T13:38:04.418+0000][241325986729ns][info][gc       ] GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms\n"
	spFull   = "[2026-11-25T13:38:04.418+0000][241326211374ns][info][safepoint] Safepoint \"G1CollectFull\", Time since last: 768315074 ns, Reaching safepoint: 14636 ns, Cleanup: 23501 ns, At safepoint: 35512935 ns, Total: 35551072 ns\n"
)

func TestMerge(t *testing.T) {
	type want struct {
		typ, name, cause string
		ms               float64
	}
	for _, c := range []struct {
		name string
		text string
		want []want
	}{
		{"merged", cleanup1 + gcFull + spFull, []want{{"safepoint", "Cleanup", "", 0.04028}, {"gc", "Pause Full", "Diagnostic Command", 35.551072}}},
		{"gc without its safepoint line", gcFull, []want{{"gc", "Pause Full", "Diagnostic Command", 35.257}}},
		{"gc op without a gc line", spFull, []want{{"gc", "G1CollectFull", "", 35.551072}}},
		{"gc before an unrelated safepoint", gcFull +
			"[2026-11-25T13:38:05.418+0000][242326211374ns][info][safepoint] Safepoint \"Cleanup\", Reaching safepoint: 1 ns, Total: 2000 ns\n",
			[]want{{"gc", "Pause Full", "Diagnostic Command", 35.257}, {"safepoint", "Cleanup", "", 0.002}}},
		// Serial: a young collection that failed and a full one, in one
		// safepoint: named after the longer.
		{"two gcs in one safepoint",
			"[2026-11-25T13:38:04.400+0000][241308000000ns][info][gc] GC(3) Pause Young (Allocation Failure) 10M->9M(10M) 2.000ms\n" +
				"[2026-11-25T13:38:04.420+0000][241328000000ns][info][gc] GC(4) Pause Full (Allocation Failure) 10M->2M(10M) 19.000ms\n" +
				"[2026-11-25T13:38:04.420+0000][241328100000ns][info][safepoint] Safepoint \"GenCollectForAllocation\", Reaching safepoint: 50000 ns, Total: 22100000 ns\n",
			[]want{{"gc", "Pause Full", "Allocation Failure", 22.1}}},
		// JDK 11: no operation name.
		{"jdk 11",
			"[2026-11-25T13:38:04.418+0000][info][gc] GC(5) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) 3.456ms\n" +
				"[2026-11-25T13:38:04.419+0000][info][safepoint] Total time for which application threads were stopped: 0.0037000 seconds, Stopping threads took: 0.0001000 seconds\n" +
				"[2026-11-25T13:38:05.419+0000][info][safepoint] Total time for which application threads were stopped: 0.0001000 seconds, Stopping threads took: 0.0000500 seconds\n",
			[]want{{"gc", "Pause Young (Normal)", "G1 Evacuation Pause", 3.7}, {"safepoint", UnknownOperation, "", 0.1}}},
		// Kafka's own kafkaServer-gc.log: -Xlog:gc*:file=...:time,tags.
		{"kafka gc log", "[2026-11-25T13:38:04.383+0000][gc,start    ] GC(16) Pause Full (Diagnostic Command)\n" +
			"[2026-11-25T13:38:04.405+0000][gc,phases      ] GC(16) Phase 1: Mark live objects 22.304ms\n" +
			"[2026-11-25T13:38:04.418+0000][gc             ] GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms\n" +
			"[2026-11-25T13:38:04.418+0000][gc,cpu         ] GC(16) User=0.04s Sys=0.00s Real=0.04s\n",
			[]want{{"gc", "Pause Full", "Diagnostic Command", 35.257}}},
		{"other lines", "[2026-11-25T13:38:04.418+0000][241325986729ns][info][gc] Using G1\n" +
			"[2026-11-25T13:38:04.418+0000][241325986729ns][info][gc,heap] GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms\n" +
			"[2026-11-25T13:38:04.418+0000][241325986729ns][info][safepoint,stats] Safepoint \"Cleanup\", Total: 5 ns\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, st := readAll(t, writeFile(t, c.text))
			if len(got) != len(c.want) || st.Pauses != int64(len(got)) {
				t.Fatalf("got %+v (%+v), want %+v", got, st, c.want)
			}
			for i, w := range c.want {
				g := got[i]
				if g.Type != w.typ || g.Name != w.name || g.Cause != w.cause || math.Abs(g.LatencyMs-w.ms) > 1e-9 {
					t.Errorf("pause %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestHostile: damaged and crafted lines are counted, never fatal.
func TestHostile(t *testing.T) {
	long := "[2026-11-25T13:38:04.418+0000][1ns][gc] GC(1) Pause Young (" + strings.Repeat("x", 3*MaxLine) + ") 1.0ms\n"
	text := "garbage\n" + long + "\x00\x01\x02\n" +
		"[2026-11-25T13:38:04.418+0000][9223372036854775807ns][info][safepoint] Safepoint \"A\", Total: 5 ns\n" + // counter out of the file's range
		"[2026-11-25T13:38:04.418+0000][info][safepoint] Safepoint \"A\", Total: 99999999999999999 ns\n" +
		"[9999-11-25T13:38:04.418+0000][info][safepoint] Safepoint \"B\", Total: 5 ns\n" + // no usable time
		"[2026-11-25T13:38:04.418+0000][info][safepoint] Safepoint \"C\", Total: 5 ns\n" +
		strings.Repeat("[", 100) + "\n" +
		spFull[:50] // unterminated
	got, st := readAll(t, writeFile(t, text))
	if len(got) != 2 || got[0].Name != "A" || got[1].Name != "C" {
		t.Errorf("got %+v", got)
	}
	want := Stats{Bytes: int64(len(text) - 50), Lines: 8, Skipped: 6, Malformed: 4, TooLong: 1, Untimed: 1, Partial: 1, Safepoints: 2, Pauses: 2,
		Precision: 500 * time.Microsecond}
	if st != want {
		t.Errorf("stats\n%+v, want\n%+v", st, want)
	}
	// A line of MaxLine bytes (and its newline) is read, a longer one not.
	pad := strings.Replace(cleanup1, `"Cleanup"`, `"`+strings.Repeat("C", MaxLine)+`"`, 1)
	_, st = readAll(t, writeFile(t, pad[:MaxLine]+"\n"+pad[:MaxLine+1]+"\n"))
	if st.Lines != 2 || st.TooLong != 1 {
		t.Errorf("MaxLine: %+v", st)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadPauses(filepath.Join(dir, "missing"), nil); err == nil || !strings.HasPrefix(err.Error(), "jvmlog: ") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadPauses(dir, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	stop := errors.New("stop")
	n := 0
	st, err := ReadPauses(writeFile(t, cleanup1+cleanup1+cleanup1), func(*event.JVMPause) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || st.Pauses != 2 {
		t.Errorf("callback error: %v, %+v", err, st)
	}
	// An empty file is no error.
	if got, st := readAll(t, writeFile(t, "")); len(got) != 0 || st.Lines != 0 {
		t.Errorf("empty: %+v", st)
	}
}
