package jvmlog

import (
	"testing"
	"time"
)

func TestSplitDecorations(t *testing.T) {
	wall := func(s string) int64 {
		tm, err := time.Parse(isoLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	for _, c := range []struct {
		line    string
		ok      bool
		wall    int64 // 0: none
		counter int64 // -1: none
		tags    string
		msg     string
	}{
		{`[2026-11-25T13:38:04.418+0000][241325986729ns][info][gc       ] GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms`,
			true, wall("2026-11-25T13:38:04.418+0000"), 241325986729, "gc", "GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms"},
		// Kafka's start script: time,tags; a local time with its offset.
		{`[2026-11-25T14:37:47.611+0100][gc,marking  ] GC(15) Concurrent Cleanup for Next Mark 0.605ms`,
			true, wall("2026-11-25T13:37:47.611+0000"), -1, "gc,marking", "GC(15) Concurrent Cleanup for Next Mark 0.605ms"},
		// timemillis, uptimenanos, pid, tid, uptime, no tags.
		{`[1795613884418ms][123456789ns][12.345s][8500p][8507t] Safepoint "Cleanup", Total: 1 ns`,
			true, 1795613884418 * 1e6, 123456789, "", `Safepoint "Cleanup", Total: 1 ns`},
		// uptimemillis is not a wall clock.
		{`[123456ms][safepoint] x`, true, 0, -1, "safepoint", "x"},
		{`no decorations`, false, 0, -1, "", ""},
		{`[unterminated`, false, 0, -1, "", ""},
		{``, false, 0, -1, "", ""},
		// Out-of-range values are ignored, not errors.
		{`[99999999999999999999ns][0000-01-01T00:00:00.000+0000][info][gc] m`, true, 0, -1, "gc", "m"},
		{`[][GC][info]m`, true, 0, -1, "", "m"},
	} {
		d, ok := splitDecorations([]byte(c.line))
		if ok != c.ok {
			t.Errorf("%q: ok %v", c.line, ok)
			continue
		}
		if !ok {
			continue
		}
		if d.hasWall != (c.wall != 0) || d.wall != c.wall || d.hasCounter != (c.counter >= 0) || (d.hasCounter && d.counter != c.counter) ||
			d.tags != c.tags || string(d.msg) != c.msg {
			t.Errorf("%q:\ngot  %+v msg %q\nwant wall %d counter %d tags %q msg %q", c.line, d, d.msg, c.wall, c.counter, c.tags, c.msg)
		}
	}
}

func TestParseSafepoint(t *testing.T) {
	for _, c := range []struct {
		msg     string
		ok, bad bool
		want    safepointLine
	}{
		{`Safepoint "G1CollectFull", Time since last: 768315074 ns, Reaching safepoint: 14636 ns, Cleanup: 23501 ns, At safepoint: 35512935 ns, Total: 35551072 ns`,
			true, false, safepointLine{"G1CollectFull", 35551072, 14636}},
		// JDK 13 to 16: no Cleanup.
		{`Safepoint "ICBufferFull", Time since last: 123 ns, Reaching safepoint: 45678 ns, At safepoint: 1234567 ns, Total: 1280245 ns`,
			true, false, safepointLine{"ICBufferFull", 1280245, 45678}},
		// JDK 11 and 12.
		{`Total time for which application threads were stopped: 0.0002411 seconds, Stopping threads took: 0.0000330 seconds`,
			true, false, safepointLine{"", 241100, 33000}},
		{`Application time: 1.0001234 seconds`, false, false, safepointLine{}},
		{`Safepoint synchronization initiated using futex wait barrier. Polling page at: 0x7f...`, false, false, safepointLine{}},
		{`Safepoint "Cleanup", Total: 12`, false, true, safepointLine{}},
		{`Safepoint "Cleanup", Time since last: 1 ns`, false, true, safepointLine{}},
		{`Safepoint "Cleanup", Reaching safepoint: 5 ns, Total: 4 ns`, false, true, safepointLine{}},
		{`Safepoint "Cleanup", Total: -4 ns`, false, true, safepointLine{}},
		{`Safepoint "Cleanup", Total: 99999999999999999999 ns`, false, true, safepointLine{}},
		{`Safepoint "Cleanup", Total: 86400000000001 ns`, false, true, safepointLine{}},
		{"Safepoint \"Clean\x01up\", Total: 4 ns", false, true, safepointLine{}},
		{`Safepoint "", Total: 4 ns`, false, true, safepointLine{}},
		{`Safepoint "Cleanup" Total: 4 ns`, false, true, safepointLine{}},
		{`Total time for which application threads were stopped: 0.1 seconds, Stopping threads took: 0.2 seconds`, false, true, safepointLine{}},
		{`Total time for which application threads were stopped: 1e3 seconds, Stopping threads took: 0 seconds`, false, true, safepointLine{}},
		{`Total time for which application threads were stopped: 0.1 seconds`, false, true, safepointLine{}},
	} {
		s, ok, bad := parseSafepoint([]byte(c.msg))
		if ok != c.ok || bad != c.bad || (ok && s != c.want) {
			t.Errorf("%q: got %+v ok %v bad %v; want %+v ok %v bad %v", c.msg, s, ok, bad, c.want, c.ok, c.bad)
		}
	}
}

func TestParseGC(t *testing.T) {
	for _, c := range []struct {
		msg     string
		ok, bad bool
		want    gcLine
	}{
		{`GC(3) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) 3.456ms`, true, false, gcLine{"Pause Young (Normal)", "G1 Evacuation Pause", 3456000}},
		{`GC(79) Pause Young (Concurrent Start) (G1 Evacuation Pause) 305M->161M(344M) 3.214ms`, true, false,
			gcLine{"Pause Young (Concurrent Start)", "G1 Evacuation Pause", 3214000}},
		{`GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms`, true, false, gcLine{"Pause Full", "Diagnostic Command", 35257000}},
		{`GC(4) Pause Full (System.gc()) 20M->5M(64M) 12.001ms`, true, false, gcLine{"Pause Full", "System.gc()", 12001000}},
		{`GC(80) Pause Remark 164M->164M(344M) 3.508ms`, true, false, gcLine{"Pause Remark", "", 3508000}},
		{`GC(80) Pause Cleanup 167M->167M(344M) 0.061ms`, true, false, gcLine{"Pause Cleanup", "", 61000}},
		// Serial and Parallel.
		{`GC(0) Pause Young (Allocation Failure) 10M->2M(50M) 3.456ms`, true, false, gcLine{"Pause Young", "Allocation Failure", 3456000}},
		{`GC(7) Pause Full (Ergonomics) 100M->80M(200M) 250.000ms`, true, false, gcLine{"Pause Full", "Ergonomics", 250000000}},
		// G1 with a kind but no cause; Shenandoah without the heap.
		{`GC(1) Pause Young (Mixed) 1M->1M(2M) 1.000ms`, true, false, gcLine{"Pause Young (Mixed)", "", 1000000}},
		{`GC(2) Pause Init Mark (unload classes) 0.231ms`, true, false, gcLine{"Pause Init Mark (unload classes)", "", 231000}},
		// Not pauses.
		{`GC(16) Pause Full (Diagnostic Command)`, false, false, gcLine{}},
		{`GC(80) Concurrent Mark Cycle 47.571ms`, false, false, gcLine{}},
		{`Using G1`, false, false, gcLine{}},
		{`GC(x) Pause Young 1.0ms`, false, false, gcLine{}},
		// Damaged.
		{`GC(3) Pause Young (Normal) 24M->3M(256M) -3.456ms`, false, true, gcLine{}},
		{`GC(3) Pause Young (Normal) 24M->3M(256M) 3.4.56ms`, false, true, gcLine{}},
		{`GC(3) Pause Young (Normal) 24M->3M(256M) 99999999999.0ms`, false, true, gcLine{}},
		{`GC(3) Pause Young (Normal 24M->3M(256M) 3.456ms`, true, false, gcLine{"Pause Young (Normal", "", 3456000}},
		{"GC(3) Pause Young (\x00) 3.456ms", false, true, gcLine{}},
		{`GC(3) Pause Full (a)(b) 3.456ms`, true, false, gcLine{"Pause Full (a)(b)", "", 3456000}},
		{`GC(3) Pause 3.456ms`, true, false, gcLine{"Pause", "", 3456000}},
	} {
		g, ok, bad := parseGC([]byte(c.msg))
		if ok != c.ok || bad != c.bad || (ok && g != c.want) {
			t.Errorf("%q: got %+v ok %v bad %v; want %+v ok %v bad %v", c.msg, g, ok, bad, c.want, c.ok, c.bad)
		}
	}
}

func TestClockFit(t *testing.T) {
	const off = 1795613643092366381 // wall - counter
	var c clockFit
	// Lines at every phase of the ms narrow the offset to well under it.
	for i := range int64(50) {
		counter := 227519219610 + i*1000170001
		w := counter + off
		c.add(i+1, w-w%1e6, counter)
	}
	if len(c.segs) != 1 || c.steps != 0 {
		t.Fatalf("segments %+v", c.segs)
	}
	s := c.segs[0]
	if s.lo > off || s.hi <= off || s.hi-s.lo > 50_000 {
		t.Errorf("offset in [%d, %d) (%d ns wide); true %d", s.lo, s.hi, s.hi-s.lo, off)
	}
	// The wall clock stepped by a second: a new segment.
	counter := int64(400e9)
	w := counter + off + 1e9
	c.add(51, w-w%1e6, counter)
	if len(c.segs) != 2 || c.steps != 1 || c.segs[1].line != 51 {
		t.Errorf("after a step: %+v", c.segs)
	}
	r := clockReader{segs: c.segs}
	d := decorated{counter: 300e9, hasCounter: true}
	if got, unc, ok := r.at(10, &d); !ok || got < 300e9+off-unc || got > 300e9+off+unc || unc > 25_000 {
		t.Errorf("line 10: %d ± %d, want %d", got, unc, int64(300e9+off))
	}
	d = decorated{counter: 500e9, hasCounter: true}
	if got, _, ok := r.at(60, &d); !ok || got < 500e9+off+1e9-1e6 || got > 500e9+off+1e9+1e6 {
		t.Errorf("line 60: %d", got)
	}
	// Only a ms wall clock: its middle, ±0.5 ms.
	d = decorated{wall: 5e6, hasWall: true}
	if got, unc, ok := (&clockReader{}).at(1, &d); !ok || got != 5.5e6 || unc != 5e5 {
		t.Errorf("wall only: %d ± %d", got, unc)
	}
	if _, _, ok := (&clockReader{}).at(1, &decorated{counter: 1, hasCounter: true}); ok {
		t.Error("a counter without any wall clock in the file has no time")
	}
	// Overflow is refused, not wrapped.
	c = clockFit{}
	c.add(1, maxInt64, -5)
	c.add(2, -maxInt64, maxInt64)
	if len(c.segs) != 0 {
		t.Errorf("overflowing lines made segments %+v", c.segs)
	}
}
