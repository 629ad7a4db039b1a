package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runKeyLogCmd runs the command, failing the test if it has not ended after
// limit (it is left running: that is the defect).
func runKeyLogCmd(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		done <- result{code, errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(limit):
		t.Fatalf("%v still running after %v", args, limit)
		return 0, ""
	}
}

// TestKeyLogInputs: whatever --tls-keylog names, the command ends: a
// device is refused with exit 2, a FIFO nobody writes to is an empty key
// log, a file that is not a key log is said to be one no line of which is
// a key log line; record, which reads its key log again, refuses a FIFO
// before it starts anything.
func TestKeyLogInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "keys.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "a.out")
	if err := os.WriteFile(binary, []byte("\x7fELF\x02\x01\x01\x00\n\x00\x00\x00 \x03\x00>\x00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"device", []string{"requests", "--tls-keylog", "/dev/zero", realCapture}, ExitBadInput, "/dev/zero: not a regular file (a character device)"},
		{"FIFO without a writer", []string{"requests", "--tls-keylog", fifo, realCapture}, 0, "--tls-keylog " + fifo + ": it has no key log lines"},
		{"not a key log", []string{"requests", "--tls-keylog", binary, realCapture}, 0,
			"--tls-keylog " + binary + ": no line of it is a key log line (2 lines skipped, the first at " + binary + ":1)"},
		{"record, a FIFO", []string{"record", "--out", filepath.Join(dir, "rec"), "--pid", "1", "--log-dirs", dir, "--duration", "1ms", "--tls-keylog", fifo},
			ExitBadInput, "record follows the key log and copies it into the recording"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runKeyLogCmd(t, 30*time.Second, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s", code, tt.code, tt.stderr, stderr)
			}
		})
	}
}
