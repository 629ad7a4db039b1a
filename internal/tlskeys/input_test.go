package tlskeys

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// openWithin opens a key log with OpenFile, failing the test if that
// takes longer than limit (the call is left running: it is the defect).
func openWithin(t *testing.T, path string, limit time.Duration) (*File, error) {
	t.Helper()
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := OpenFile(path)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(limit):
		t.Fatalf("OpenFile(%s) still running after %v", path, limit)
		return nil, nil
	}
}

// pipePath is a pipe's read end as a path (what <(cmd) gives), with
// write run on its write end in the background.
func pipePath(t *testing.T, write func(w *os.File)) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() {
		defer w.Close()
		write(w)
	}()
	return fmt.Sprintf("/proc/self/fd/%d", r.Fd())
}

// fifoPath is a named FIFO holding content (nil: a FIFO nobody has
// written to), its writer already gone, as after `cat keys > fifo`: a
// reader of the test's holds the written bytes in the FIFO until the key
// log has opened it too.
func fifoPath(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if content == nil {
		return path
	}
	hold, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Close() })
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(content); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenKeyLogInputs: whatever the key log path is, opening it ends
// promptly: a regular file and a pipe or FIFO are read (a stream once,
// to its end), a device and a directory are refused as not regular, an
// endless stream is refused as too large.
func TestOpenKeyLogInputs(t *testing.T) {
	log := realKeyLog(t, tls.VersionTLS13, tls.VersionTLS12)
	writeLog := func(w *os.File) { w.Write(log) }
	regular := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(regular, log, 0o600); err != nil {
		t.Fatal(err)
	}
	zeros := func(w *os.File) {
		buf := make([]byte, 1<<20)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}
	tests := []struct {
		name     string
		path     func(t *testing.T) string
		sessions int
		stream   bool
		err      error
	}{
		{"regular file", func(*testing.T) string { return regular }, 2, false, nil},
		{"device /dev/zero", func(*testing.T) string { return "/dev/zero" }, 0, false, safefile.ErrNotRegular},
		{"directory", func(t *testing.T) string { return t.TempDir() }, 0, false, safefile.ErrNotRegular},
		{"pipe, as from <(cmd)", func(t *testing.T) string { return pipePath(t, writeLog) }, 2, true, nil},
		{"FIFO with a writer", func(t *testing.T) string { return fifoPath(t, log) }, 2, true, nil},
		{"FIFO without a writer", func(t *testing.T) string { return fifoPath(t, nil) }, 0, true, nil},
		{"endless pipe", func(t *testing.T) string { return pipePath(t, zeros) }, 0, true, safefile.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := openWithin(t, tt.path(t), 20*time.Second)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if st := f.Keys().Stats(); st.Sessions != tt.sessions || f.Stream() != tt.stream {
				t.Errorf("%d sessions, stream %v; want %d, %v", st.Sessions, f.Stream(), tt.sessions, tt.stream)
			}
		})
	}
}

// TestStreamIdle: a stream whose writer stays open and sends nothing
// fails after the idle bound, naming the key log and the line it got to.
func TestStreamIdle(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	path := pipePath(t, func(w *os.File) {
		w.WriteString("# one line\n")
		<-release
	})
	start := time.Now()
	_, err := openFile(path, New(), 200*time.Millisecond)
	if !errors.Is(err, safefile.ErrIdle) || !strings.Contains(err.Error(), path+" (line 1)") {
		t.Errorf("error %v, want one wrapping ErrIdle naming %s (line 1)", err, path)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// TestTailRefusesNonRegular: a followed key log replaced by a FIFO is an
// error at the next read, not a wait for a writer.
func TestTailRefusesNonRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, realKeyLog(t, tls.VersionTLS13), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(2 * minRefresh)
		f.Refresh()
		done <- f.Err()
	}()
	select {
	case err := <-done:
		if !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("error %v, want one wrapping ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a key log that became a FIFO still waits after 10s")
	}
}
