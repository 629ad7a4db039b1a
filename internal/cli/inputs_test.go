package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNonRegularInputsRefused: inputs read as regular files (JFR
// recordings, workload files) that are a FIFO or a device are refused
// at once with exit 2, never read forever.
func TestNonRegularInputsRefused(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	writeSlowLog(t, rec)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	labFS := []string{"lab", "fs", "--work-dir", filepath.Join(blocker, "work"), "--workload"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"profile --jfr FIFO", []string{"profile", "--jfr", fifo}, "not a regular file"},
		{"profile --jfr directory", []string{"profile", "--jfr", dir}, "not a regular file"},
		{"explain --jfr FIFO", []string{"explain", rec, "-q", "--jfr", fifo}, "not a regular file"},
		{"report --jfr FIFO", []string{"report", rec, "-q", "--jfr", fifo, "-o", filepath.Join(dir, "r.html")}, "not a regular file"},
		{"lab fs --workload FIFO", append(slices.Clone(labFS), fifo), "workload"},
		{"lab fs --workload /dev/zero", append(slices.Clone(labFS), "/dev/zero"), "not a regular file"},
		{"lab versions --workload /dev/zero", []string{"lab", "versions", "--kafka", "3.9.1,4.1.1", "--work-dir", filepath.Join(blocker, "work"), "--workload", "/dev/zero"}, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runWithin(t, 30*time.Second, c.args...)
			if code != ExitBadInput || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, want %d and one line with %q: %q", code, ExitBadInput, c.want, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report wrote a page")
	}
}
