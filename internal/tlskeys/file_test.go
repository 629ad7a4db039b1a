package tlskeys

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileGrows: a key log appended to while it is read (an agent writing
// as handshakes happen), in pieces that split lines, is found session by
// session; a line still without its newline is not read yet, and an
// overlong line is skipped whole.
func TestFileGrows(t *testing.T) {
	log := realKeyLog(t, 0x0303, 0x0303, 0x0303)
	lines := strings.SplitAfter(strings.TrimSpace(string(log)), "\n")
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, line := range lines {
		cr := randomOf(t, strings.Fields(line)[1])
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		if i == 1 {
			// An overlong line in the middle, also split.
			long := strings.Repeat("x", MaxLineBytes+10) + "\n"
			write(t, w, long[:MaxLineBytes-5])
			wait(t, f, cr, false)
			write(t, w, long[MaxLineBytes-5:])
		}
		half := len(line) / 2
		write(t, w, line[:half])
		wait(t, f, cr, false)
		write(t, w, line[half:])
		wait(t, f, cr, true)
	}
	st := f.Keys().Stats()
	if st.Malformed != 1 || st.Sessions != 3 || f.Err() != nil {
		t.Errorf("stats %+v, err %v; want 1 malformed line, 3 sessions", st, f.Err())
	}
}

func write(t *testing.T, w *os.File, s string) {
	t.Helper()
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// wait looks cr up until it is found (want) or, for !want, checks it is
// not found after a refresh.
func wait(t *testing.T, f *File, cr ClientRandom, want bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		time.Sleep(minRefresh)
		_, ok := f.Lookup(cr)
		if ok == want && (want || time.Now().After(deadline.Add(-2*time.Second+3*minRefresh))) {
			return
		}
		if ok && !want {
			t.Fatalf("session %x found before its line was whole", cr[:4])
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %x not found after its line was written", cr[:4])
		}
	}
}

// TestFileTruncated: a key log replaced by a shorter one is read again
// from its start.
func TestFileTruncated(t *testing.T) {
	first, second := realKeyLog(t, 0x0304), realKeyLog(t, 0x0303)
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, append(bytes.Clone(first), first...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, second, 0o600); err != nil {
		t.Fatal(err)
	}
	cr := randomOf(t, strings.Fields(string(second))[1])
	wait(t, f, cr, true)
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing key log opened")
	}
}

// TestDirOfKeyLogs: a directory's key logs are all read, a new one too;
// other files are not.
func TestDirOfKeyLogs(t *testing.T) {
	a, b := realKeyLog(t, 0x0303), realKeyLog(t, 0x0303)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "1-100.log"), a, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.jar"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	crA, crB := randomOf(t, strings.Fields(string(a))[1]), randomOf(t, strings.Fields(string(b))[1])
	if _, ok := f.Lookup(crA); !ok {
		t.Error("a session of the first key log not found")
	}
	if _, ok := f.Lookup(crB); ok {
		t.Error("a session of a file that is not a key log found")
	}
	if err := os.WriteFile(filepath.Join(dir, "2-200.log"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	wait(t, f, crB, true)
}
