package recording

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

const (
	write1 = `{"start":"2026-11-21T12:00:00.1Z","end":"2026-11-21T12:00:00.101Z","latency_ms":1,"op":"write"}`
	write2 = `{"start":"2026-11-21T12:00:00.2Z","end":"2026-11-21T12:00:00.202Z","latency_ms":2,"op":"write"}`
)

// TestCutLastLine: a last line cut short by a crash is left out and
// counted when the reader keeps a tally, and is an error without one; a
// bad line anywhere else, or a bad last line that ended with its newline,
// is always an error.
func TestCutLastLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		tally   bool
		writes  int
		cutLine int64
		wantErr string // "" : no error
	}{
		{"cut last line", write1 + "\n" + write2 + "\n" + write2[:30], true, 2, 3, ""},
		{"cut last line, strict", write1 + "\n" + write2[:30], false, 1, 0, "f.jsonl:2 (byte 96): the last line is cut short"},
		{"cut inside a number", write1 + "\n" + `{"start":"2026-11-21T12:00:00.1Z","latency_ms":1`, true, 1, 2, ""},
		{"last line whole without its newline", write1 + "\n" + write2, true, 2, 0, ""},
		{"bad line in the middle", write1 + "\n" + write2[:30] + "\n" + write2 + "\n", true, 1, 0, "f.jsonl:2 (byte 96)"},
		{"bad last line with its newline", write1 + "\n" + write2[:30] + "\n", true, 1, 0, "f.jsonl:2"},
		{"only a cut line", write2[:10], true, 0, 1, ""},
		{"empty", "", true, 0, 0, ""},
		{"blank cut line", write1 + "\n  ", true, 1, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			r := Reader{}
			if tc.tally {
				r.Tally = &Tally{}
			}
			writes := 0
			err := r.ReadIO(path, IOHandlers{Write: func(*event.Write) error { writes++; return nil }})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if writes != tc.writes {
				t.Errorf("%d writes read, want %d", writes, tc.writes)
			}
			var cut int64
			for _, s := range r.Tally.Files() {
				cut = s.CutLine
			}
			if cut != tc.cutLine {
				t.Errorf("cut line %d, want %d", cut, tc.cutLine)
			}
			if w := r.Tally.Warnings(); tc.cutLine > 0 && (len(w) != 1 || !strings.HasPrefix(w[0], path+":"+strconv.FormatInt(tc.cutLine, 10)+": the last line is cut short")) {
				t.Errorf("warnings %q", w)
			}
		})
	}
}

// TestLineErrorBounded: a bad value of megabytes is not echoed: the
// error is one line naming the file, line and byte, with an escaped
// excerpt of at most a few hundred bytes.
func TestLineErrorBounded(t *testing.T) {
	huge := strings.Repeat("1", 4<<20)
	for _, tc := range []struct {
		name, line, want string
	}{
		{"huge number", `{"start":"2026-11-21T12:00:00Z","latency_ms":` + huge + `e999}`, "cannot unmarshal number"},
		{"huge time", `{"start":"` + strings.Repeat("X", 4<<20) + `"}`, "parsing time"},
		{"control characters", "{\"start\":\"\x1b[31m" + strings.Repeat("\x07", 1<<20) + "\"}", "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.jsonl")
			if err := os.WriteFile(path, []byte(write1+"\n"+tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Reader{Tally: &Tally{}}.ReadIO(path, IOHandlers{Write: func(*event.Write) error { return nil }})
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || le.Pos != int64(len(write1)+1) {
				t.Fatalf("error %v: want line 2", err)
			}
			msg := err.Error()
			if len(msg) > 600 || strings.ContainsAny(msg, "\n\x1b\x07") || !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, path+":2 (byte 96): ") {
				t.Errorf("error of %d bytes: %.700q", len(msg), msg)
			}
		})
	}
}

// TestImplausible: events whose values cannot be true are left out and
// counted, with the first one's line and reason; without a tally they
// are the read's error.
func TestImplausible(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	win := Window{Start: t0, End: t0.Add(547 * time.Millisecond)}
	line := func(start, end string, ms string) string {
		return `{"start":"` + start + `","end":"` + end + `","latency_ms":` + ms + `,"op":"write"}`
	}
	for _, tc := range []struct {
		name   string
		win    Window
		line   string
		reason string // "" : plausible
	}{
		{"fine", win, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.102Z", "2"), ""},
		{"latency not given", win, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.102Z", "0"), ""},
		{"longer than the recording", win, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.102Z", "1e9"), "latency_ms 1e+09 is longer than the recording (547ms)"},
		{"negative", win, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.102Z", "-5"), "latency_ms -5 is negative"},
		{"not its times", Window{}, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.102Z", "900"), "latency_ms 900 is not the 2 ms between start and end"},
		{"end before start", Window{}, line("2026-11-21T12:00:00.1Z", "2026-11-21T12:00:00.098Z", "0"), "end 2026-11-21T12:00:00.098Z is before start"},
		{"years after", win, line("2099-11-21T12:00:00.1Z", "2099-11-21T12:00:00.102Z", "2"), "start 2099-11-21T12:00:00.1Z is after the recording's end"},
		{"before", win, line("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.002Z", "2"), "is before the recording's start"},
		{"within the slack", win, line("2026-11-21T11:59:00Z", "2026-11-21T11:59:00.002Z", "2"), ""},
		{"open window", Window{Start: t0}, line("2099-11-21T12:00:00.1Z", "2099-11-21T12:00:00.102Z", "2"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.jsonl")
			data := write1 + "\n" + tc.line + "\n" + tc.line + "\n" + write2 + "\n"
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			h := IOHandlers{Write: func(*event.Write) error { return nil }}
			tally := &Tally{}
			n := 0
			h.Write = func(*event.Write) error { n++; return nil }
			if err := (Reader{Window: tc.win, Tally: tally}).ReadIO(path, h); err != nil {
				t.Fatal(err)
			}
			files := tally.Files()
			if tc.reason == "" {
				if n != 4 || len(files) != 0 {
					t.Fatalf("%d read, left out %+v", n, files)
				}
				return
			}
			if n != 2 || len(files) != 1 || files[0].Implausible != 2 || files[0].FirstLine != 2 || !strings.Contains(files[0].Reason, tc.reason) {
				t.Fatalf("%d read, left out %+v; want reason %q", n, files, tc.reason)
			}
			if w := tally.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], path+":2: 2 lines with impossible values left out") {
				t.Errorf("warnings %q", w)
			}
			// Read again: nothing is counted twice.
			if err := (Reader{Window: tc.win, Tally: tally}).ReadIO(path, h); err != nil || tally.Files()[0].Implausible != 2 {
				t.Errorf("second read: %v, %+v", err, tally.Files())
			}
			err := Reader{Window: tc.win}.ReadIO(path, h)
			var ie *ImplausibleError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), path+":2 (byte 96)") {
				t.Errorf("strict read: %v", err)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	win := Window{Start: t0, End: t0.Add(547 * time.Millisecond)}
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for _, tc := range []struct {
		name         string
		win          Window
		arrival, end time.Time
		ms           float64
		answered     bool
		reason       string
	}{
		{"fine", win, at(10), at(12), 2, true, ""},
		{"unanswered", win, at(10), time.Time{}, 0, false, ""},
		{"unanswered before the start", win, at(-5000), time.Time{}, 0, false, "arrival"},
		{"1e9 ms", win, at(10), at(12), 1e9, true, "longer than the recording"},
		{"negative", win, at(10), at(12), -1, true, "negative"},
		{"NaN", Window{}, at(10), at(12), nanValue(), true, "NaN"},
		{"disagrees", Window{}, at(10), at(12), 300, true, "not the 2 ms"},
		{"end after the recording", win, at(500), at(2600), 2100, true, "after the recording's end"},
		{"answered without times", Window{}, time.Time{}, time.Time{}, 3, true, "without its arrival and end"},
		{"a slow log's context before its start", Window{End: win.End}, at(-20000), at(-19990), 10, true, ""},
	} {
		err := tc.win.CheckRequest(tc.arrival, tc.end, tc.ms, tc.answered)
		if tc.reason == "" && err != nil || tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.reason)
		}
	}
}

func nanValue() float64 { var z float64; return z / z }

// TestRefusesNonRegular: a FIFO, a device or a directory in place of a
// recording's file is refused at once, never waited on.
func TestRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	metaDir := filepath.Join(dir, "rec")
	if err := os.Mkdir(metaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(metaDir, MetaFile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"FIFO as writes.jsonl", func() error { return ReadIO(fifo, IOHandlers{}) }},
		{"device as requests.jsonl", func() error { return Lines("/dev/zero", func([]byte, int64) error { return nil }) }},
		{"directory as lockwaits.jsonl", func() error { return ReadLockWaits(dir, func(*event.LockWait) error { return nil }) }},
		{"FIFO as meta.json", func() error { _, err := ReadMeta(metaDir); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.read() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("error %v: want a refusal", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("blocked")
			}
		})
	}
}

// TestUnfinishedRecording: meta.json is written when the recording
// starts, so one cut short by a crash is still a recording, and says it
// did not finish.
func TestUnfinishedRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	if err := w.Begin(&Meta{Tool: "test", Start: t0}); err != nil {
		t.Fatal(err)
	}
	// No Close: the process died here.
	m, err := ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev := m.MissingEvidence(); len(ev) != 1 || !strings.Contains(ev[0], "did not finish") {
		t.Errorf("missing evidence %q", ev)
	}
	if win := m.Window(); !win.Start.Equal(t0) || !win.End.IsZero() {
		t.Errorf("window %+v", win)
	}
	if err := w.Close(&Meta{Tool: "test", Start: t0, End: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if m, err = ReadMeta(dir); err != nil || m.End.IsZero() || len(m.Files) != 3 {
		t.Errorf("closed: %+v %v", m, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("%d files in the recording: a temporary left behind?", len(ents))
	}
}

// TestMetaErrorBounded: a damaged meta.json's error is one line with
// where the damage is, not the value.
func TestMetaErrorBounded(t *testing.T) {
	dir := t.TempDir()
	meta := `{"version":1,"start":"` + strings.Repeat("\x1bX", 1<<20) + `"}`
	if err := os.WriteFile(filepath.Join(dir, MetaFile), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadMeta(dir)
	if err == nil || len(err.Error()) > 400 || strings.ContainsAny(err.Error(), "\n\x1b") || !strings.Contains(err.Error(), "meta.json") {
		t.Fatalf("error %.500q", err)
	}
}
