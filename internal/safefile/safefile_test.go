package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResolveRefuses(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.pcap")
	if err := os.WriteFile(input, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.pcap")
	if err := os.Link(input, hard); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	toDev := filepath.Join(dir, "null-link")
	if err := os.Symlink("/dev/null", toDev); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		t    Target
		want string // resolved path; "" means refused
	}{
		{"device", Target{Path: "/dev/null"}, ""},
		{"fifo", Target{Path: fifo}, ""},
		{"symlink to a device", Target{Path: toDev}, ""},
		{"dangling symlink", Target{Path: dangling}, ""},
		{"the input", Target{Path: input, Inputs: []string{input}}, ""},
		{"a hard link to the input", Target{Path: hard, Inputs: []string{input}}, ""},
		{"the input by another spelling", Target{Path: dir + "/./in.pcap", Inputs: []string{input}}, ""},
		{"inside the recording", Target{Path: filepath.Join(rec, "requests.jsonl"), Inputs: []string{rec}}, ""},
		{"new file inside the recording", Target{Path: filepath.Join(rec, "new.html"), Inputs: []string{rec}}, ""},
		{"directory without a default name", Target{Path: dir}, ""},
		{"missing parent", Target{Path: filepath.Join(dir, "no", "x.html")}, ""},
		{"directory with a default name", Target{Path: dir, DefaultName: "report.html"}, filepath.Join(dir, "report.html")},
		{"recording as directory", Target{Path: rec, DefaultName: "report.html", Inputs: []string{rec}}, ""},
		{"a new file", Target{Path: filepath.Join(dir, "new.html"), Inputs: []string{input, rec}}, filepath.Join(dir, "new.html")},
		{"an old output", Target{Path: old, Inputs: []string{input}}, old},
		{"beside the recording", Target{Path: rec + ".html", Inputs: []string{rec}}, rec + ".html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.t.Resolve()
			if tc.want == "" {
				if err == nil || !errors.Is(err, ErrRefused) {
					t.Fatalf("Resolve = %q, %v; want a refusal", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestWriteLeavesRefusedPathsAlone(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Lstat(fifo)
	if _, err := Write(Target{Path: fifo}, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err == nil {
		t.Fatal("wrote over a FIFO")
	}
	after, err := os.Lstat(fifo)
	if err != nil || after.Mode() != before.Mode() {
		t.Fatalf("FIFO changed: %v %v", after, err)
	}
	out := filepath.Join(dir, "out.html")
	got, err := Write(Target{Path: out}, func(w io.Writer) error { _, err := w.Write([]byte("page")); return err })
	if err != nil || got != out {
		t.Fatal(got, err)
	}
	if b, _ := os.ReadFile(out); string(b) != "page" {
		t.Fatalf("wrote %q", b)
	}
	// A failed write leaves the old file and no temporary behind.
	if _, err := Write(Target{Path: out}, func(w io.Writer) error { return errors.New("boom") }); err == nil {
		t.Fatal("no error")
	}
	if b, _ := os.ReadFile(out); string(b) != "page" {
		t.Fatalf("old output changed to %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("left %d entries", len(ents))
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode Mode
		ok   bool
	}{
		{reg, Regular, true},
		{reg, Stream, true},
		{dir, Stream, false},
		{"/dev/zero", Stream, false},
		{"/dev/null", Regular, false},
		{fifo, Regular, false},
		{fifo, Stream, true},
	} {
		in, err := Open(tc.path, tc.mode)
		if (err == nil) != tc.ok {
			t.Errorf("Open(%s, %v) = %v; want ok %v", tc.path, tc.mode, err, tc.ok)
		}
		if err == nil {
			in.Close()
		} else if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(%s): %v does not wrap ErrNotRegular", tc.path, err)
		}
	}
}

func TestFIFOWithoutWriterDoesNotBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := ReadAll(fifo, 1<<20)
		if err == nil && len(b) != 0 {
			err = errors.New("read data from nowhere")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a FIFO with no writer")
	}
}

func TestStreamIdleAndLimit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := "/proc/self/fd/" + strconv.Itoa(int(r.Fd()))
	in, err := Open(path, Stream)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	in.SetIdle(100 * time.Millisecond)
	start := time.Now()
	_, err = in.Read(make([]byte, 10))
	if !errors.Is(err, ErrIdle) || time.Since(start) > 3*time.Second {
		t.Fatalf("idle read: %v after %v", err, time.Since(start))
	}

	r2, w2, _ := os.Pipe()
	go func() {
		w2.Write(make([]byte, 2000))
		w2.Close()
	}()
	if _, err := ReadAll("/proc/self/fd/"+strconv.Itoa(int(r2.Fd())), 1000); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAll over the limit: %v", err)
	}
	r2.Close()
}

func TestDistinct(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.pcap")
	b := filepath.Join(dir, "b.pcap")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hard := filepath.Join(dir, "hard.pcap")
	if err := os.Link(a, hard); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.pcap")
	if err := os.Symlink(a, sym); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		dup   []string // the spellings the error must name; nil: no error
	}{
		{"two files", []string{a, b}, nil},
		{"one file", []string{a}, nil},
		{"none", nil, nil},
		{"a missing file is the reader's to report", []string{a, filepath.Join(dir, "none"), filepath.Join(dir, "none")}, nil},
		{"the same path", []string{a, b, a}, []string{a}},
		{"another spelling", []string{a, dir + "/./a.pcap"}, []string{a, dir + "/./a.pcap"}},
		{"a hard link", []string{hard, b, a}, []string{hard, a}},
		{"a symbolic link", []string{a, sym}, []string{a, sym}},
		{"a recording twice", []string{rec, rec + "/"}, []string{rec, rec + "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Distinct(tc.paths)
			if tc.dup == nil {
				if err != nil {
					t.Fatalf("Distinct = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrDuplicate) {
				t.Fatalf("Distinct = %v; want ErrDuplicate", err)
			}
			for _, p := range tc.dup {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%q does not name %s", err, p)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if _, err := (Target{Path: filepath.Join(dir, "no", "r.json")}).Check(); !errors.Is(err, ErrRefused) {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := (Target{Path: "/dev/null"}).Check(); !errors.Is(err, ErrRefused) {
		t.Errorf("/dev/null: %v", err)
	}
	// /proc/self is a directory nobody can create files in, root included.
	if _, err := (Target{Path: "/proc/self/r.json"}).Check(); err == nil {
		t.Error("/proc/self/r.json: no error")
	}
	got, err := Target{Path: dir, DefaultName: "r.json"}.Check()
	if err != nil || got != filepath.Join(dir, "r.json") {
		t.Fatalf("Check = %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Check left %d files behind", len(ents))
	}
}

func TestOutputDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	toDev := filepath.Join(dir, "null-link")
	if err := os.Symlink("/dev/null", toDev); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	toDir := filepath.Join(dir, "dir-link")
	if err := os.Symlink(dir, toDir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(dir, "new"), true},
		{filepath.Join(dir, "new", "deeper"), true},
		{dir, true},
		{toDir, true},
		{"", false},
		{file, false},
		{fifo, false},
		{"/dev/null", false},
		{toDev, false},
		{dangling, false},
	} {
		done := make(chan error, 1)
		go func() { done <- OutputDir(tc.path) }()
		select {
		case err := <-done:
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrRefused)) {
				t.Errorf("OutputDir(%q) = %v; want ok %v", tc.path, err, tc.ok)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("OutputDir(%q) blocked", tc.path)
		}
	}
}
