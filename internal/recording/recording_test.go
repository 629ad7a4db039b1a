package recording

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/use"
)

func TestWriteAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	w.Request(&event.Request{Arrival: now, End: now.Add(time.Millisecond), API: "Produce", Answered: true})
	w.Write(&event.Write{Start: now, End: now.Add(time.Millisecond), Op: "write", Topic: "t", File: "t-0/0.log"})
	w.Commit(&event.JournalCommit{Kind: event.KindJBD2Commit, Start: now, End: now, Dev: "7:0"})
	w.Sync(&event.FileSync{Kind: event.KindExt4Fsync, Start: now, End: now, Dev: "7:0"})
	w.Block(&event.BlockIO{Kind: event.KindBlockIO, Start: now, End: now, Dev: "7:0", Op: "write"})
	w.LockWait(&event.LockWait{Start: now, End: now.Add(time.Millisecond), TID: 7, Monitor: "java.lang.Object"})
	if err := w.Close(&Meta{Tool: "test", Start: now, End: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != FormatVersion || strings.Join(m.Files, ",") != "requests.jsonl,writes.jsonl,journal.jsonl,lockwaits.jsonl" {
		t.Errorf("meta %+v", m)
	}
	var n [5]int
	for _, f := range []string{WritesFile, JournalFile} {
		err := ReadIO(filepath.Join(dir, f), IOHandlers{
			Write:  func(*event.Write) error { n[0]++; return nil },
			Commit: func(*event.JournalCommit) error { n[1]++; return nil },
			Sync:   func(*event.FileSync) error { n[2]++; return nil },
			Block:  func(*event.BlockIO) error { n[3]++; return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ReadLockWaits(filepath.Join(dir, LockWaitsFile), func(l *event.LockWait) error { n[4]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != [5]int{1, 1, 1, 1, 1} {
		t.Errorf("read back %v", n)
	}
	if _, err := Create(dir); err == nil {
		t.Error("Create on a non-empty directory: want an error")
	}
}

func TestReadIOKinds(t *testing.T) {
	// Hand-edited lines: kind not first, unknown kinds skipped.
	in := `{"start":"2026-11-21T12:00:00Z","end":"2026-11-21T12:00:00Z","op":"write","topic":"t","partition":0}
{"dev":"7:0","kind":"jbd2_commit","start":"2026-11-21T12:00:00Z","end":"2026-11-21T12:00:00Z"}
{"kind":"from_the_future","x":1}

{"kind":"block_io","dev":"7:0","start":"2026-11-21T12:00:00Z","end":"2026-11-21T12:00:00Z"}
{"kind":"cpu_steal","start":"2026-11-21T12:00:00Z","end":"2026-11-21T12:00:00.002Z","cpu":1,"stolen_ms":1.5,"tid":7,"pid":6,"thread":"h"}
`
	path := filepath.Join(t.TempDir(), "io.jsonl")
	os.WriteFile(path, []byte(in), 0o644)
	var writes, commits, blocks int
	var steals []event.CPUSteal
	err := ReadIO(path, IOHandlers{
		Write:  func(*event.Write) error { writes++; return nil },
		Commit: func(*event.JournalCommit) error { commits++; return nil },
		Block:  func(*event.BlockIO) error { blocks++; return nil },
		Steal:  func(s *event.CPUSteal) error { steals = append(steals, *s); return nil },
	})
	if err != nil || writes != 1 || commits != 1 || blocks != 1 || len(steals) != 1 {
		t.Errorf("%v: %d writes %d commits %d blocks %d steals", err, writes, commits, blocks, len(steals))
	}
	if len(steals) == 1 && (steals[0].CPU != 1 || steals[0].StolenMs != 1.5 || steals[0].Thread != "h" || steals[0].TID != 7) {
		t.Errorf("steal read as %+v", steals[0])
	}
}

func TestLineErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(path, []byte("{\"op\":\"write\"}\n{\"op\":\n"), 0o644)
	err := ReadIO(path, IOHandlers{Write: func(*event.Write) error { return nil }})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Pos != 15 || !strings.Contains(err.Error(), "bad.jsonl:2 (byte 15)") {
		t.Fatalf("%v", err)
	}
	// A line over the limit is refused without holding more than it.
	long := filepath.Join(t.TempDir(), "long.jsonl")
	f, _ := os.Create(long)
	f.Write(bytes.Repeat([]byte("x"), MaxLineBytes+10))
	f.Close()
	err = Lines(long, func([]byte, int64) error { return nil })
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("long line: %v", err)
	}
}

func TestReadLineAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	// JSON strings: a last line without its newline is read when it is
	// whole JSON.
	long := `"` + strings.Repeat("y", 200<<10) + `"`
	os.WriteFile(path, []byte(`"a"`+"\n"+long+"\n"+`"c"`), 0o644)
	var pos []int64
	Lines(path, func(_ []byte, p int64) error { pos = append(pos, p); return nil })
	if len(pos) != 3 {
		t.Fatalf("positions %v", pos)
	}
	f, _ := os.Open(path)
	defer f.Close()
	for i, want := range []string{`"a"`, long, `"c"`} {
		got, err := ReadLineAt(f, pos[i], nil)
		if err != nil || string(got) != want {
			t.Errorf("line %d: %v, %d bytes", i, err, len(got))
		}
	}
}

// FuzzReadIO: any bytes of writes.jsonl, journal.jsonl or sched.jsonl
// (they share ReadIO) are read without panic, strictly and with a tally
// and a window; errors are one bounded line that names the line.
func FuzzReadIO(f *testing.F) {
	seed, err := os.ReadFile("testdata/io.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-40]) // cut by a crash
	f.Add([]byte(`{"kind":"jbd2_commit","start":"2026-11-21T12:00:00Z"}` + "\n" + `{"op":"write"}`))
	f.Add([]byte("{\"kind\":\"\n\x00\xff"))
	t0 := time.Date(2026, 11, 21, 20, 27, 42, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var h IOHandlers
		seen := 0
		for _, k := range event.Kinds() {
			k.Bind(&h, func(any) error { seen++; return nil })
		}
		for _, r := range []Reader{{}, {Window: Window{Start: t0, End: t0.Add(time.Second)}, Tally: &Tally{}}} {
			checkReadError(t, path, r.ReadIO(path, h))
		}
	})
}

// FuzzReadEach: lockwaits.jsonl and use.jsonl, as FuzzReadIO.
func FuzzReadEach(f *testing.F) {
	for _, name := range []string{"testdata/lockwaits.jsonl", "testdata/use.jsonl"} {
		seed, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
		f.Add(seed[:len(seed)/2])
	}
	t0 := time.Date(2026, 11, 21, 20, 27, 42, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, r := range []Reader{{}, {Window: Window{Start: t0, End: t0.Add(time.Second)}, Tally: &Tally{}}} {
			checkReadError(t, path, r.ReadLockWaits(path, func(*event.LockWait) error { return nil }))
			checkReadError(t, path, r.ReadUse(path, func(*use.Sample) error { return nil }))
			for _, w := range r.Tally.Warnings() {
				if strings.Contains(w, "\n") || len(w) > len(path)+400 {
					t.Errorf("warning %q", w)
				}
			}
		}
	})
}

// checkReadError: a read's error names the file and line, in one line of
// bounded length.
func checkReadError(t *testing.T, path string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("error without a line: %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > len(path)+600 || !strings.HasPrefix(msg, path+":") {
		t.Fatalf("error of %d bytes: %.800q", len(msg), msg)
	}
}

// sched.jsonl is written by several goroutines at once (tracer, cgroup
// sampler, JVM log) and read back by kind.
func TestSchedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	const n = 200
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				var err error
				switch g {
				case 0:
					err = w.RunDelay(&event.RunDelay{Kind: event.KindRunDelay, Start: t0, End: t0.Add(time.Millisecond), TID: i, HolderComm: "java"})
				case 1:
					err = w.ConnThread(&event.ConnThread{Kind: event.KindConnThread, Time: t0, TID: i, Client: "127.0.0.1:40000", Broker: "127.0.0.1:9092"})
				case 2:
					err = w.Throttle(&event.CPUThrottle{Kind: event.KindCPUThrottle, Start: t0, End: t0, Periods: int64(i)})
				case 3:
					err = w.JVMPause(&event.JVMPause{Kind: event.KindJVMPause, Start: t0, End: t0, Type: event.PauseGC, Name: "Pause Young (Normal)"})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(&Meta{}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	err = ReadIO(filepath.Join(dir, SchedFile), IOHandlers{
		RunDelay:   func(r *event.RunDelay) error { counts[r.Kind]++; return nil },
		ConnThread: func(c *event.ConnThread) error { counts[c.Kind]++; return nil },
		Throttle:   func(c *event.CPUThrottle) error { counts[c.Kind]++; return nil },
		JVMPause:   func(p *event.JVMPause) error { counts[p.Kind]++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{event.KindRunDelay, event.KindConnThread, event.KindCPUThrottle, event.KindJVMPause} {
		if counts[k] != n {
			t.Errorf("%s: read %d, wrote %d", k, counts[k], n)
		}
	}
	meta, err := ReadMeta(dir)
	if err != nil || !slices.Contains(meta.Files, SchedFile) {
		t.Errorf("meta.json files %v (%v): want %s listed", meta.Files, err, SchedFile)
	}
}

// TestHandle: each kind of event goes to its handler, kinds without one
// are left out.
func TestHandle(t *testing.T) {
	var got []string
	h := IOHandlers{
		Write:    func(*event.Write) error { got = append(got, "write"); return nil },
		RunDelay: func(*event.RunDelay) error { got = append(got, "run_delay"); return nil },
		JVMPause: func(*event.JVMPause) error { return errors.New("refused") },
	}
	for _, ev := range []any{&event.Write{}, &event.JournalCommit{}, &event.RunDelay{}, "not an event"} {
		if err := h.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Handle(&event.JVMPause{}); err == nil {
		t.Error("a handler's error was not returned")
	}
	if strings.Join(got, ",") != "write,run_delay" {
		t.Errorf("handled %v", got)
	}
}
