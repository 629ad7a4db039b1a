package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
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
		{"record --jfr FIFO", []string{"record", "--pid", idleProcess(t), "--log-dirs", dir, "--duration", "1s", "--out", filepath.Join(dir, "new-rec"), "--jfr", fifo}, "not a regular file"},
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
	for _, p := range []string{"r.html", "new-rec"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestDuplicateInputsRefused: an input given twice, by the same path,
// another spelling, a symbolic or a hard link, is refused with exit 2 and
// both spellings named, by every command that reads several.
func TestDuplicateInputsRefused(t *testing.T) {
	dir := t.TempDir()
	capture := copyFile(t, realCapture, filepath.Join(dir, "x.pcapng"))
	hard := filepath.Join(dir, "hard.pcapng")
	if err := os.Link(capture, hard); err != nil {
		t.Fatal(err)
	}
	other := dir + "/./x.pcapng"
	rec := filepath.Join(dir, "rec")
	writeSlowLog(t, rec)
	recLink := filepath.Join(dir, "rec-link")
	if err := os.Symlink(rec, recLink); err != nil {
		t.Fatal(err)
	}
	ioFile := filepath.Join(dir, "io.jsonl")
	if err := os.WriteFile(ioFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	result := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	resultHard := filepath.Join(dir, "a-again.json")
	if err := os.Link(result, resultHard); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.html")
	for _, c := range []struct {
		name  string
		args  []string
		names []string // in the error
	}{
		{"requests, same path", []string{"requests", "-q", capture, capture}, []string{capture}},
		{"requests, another spelling", []string{"requests", "-q", capture, other}, []string{capture, other}},
		{"requests, hard link", []string{"requests", "-q", hard, capture}, []string{hard, capture}},
		{"report --pcap", []string{"report", "-q", "--pcap", capture + "," + hard, "-o", out}, []string{capture, hard}},
		{"report --io", []string{"report", "-q", "--pcap", capture, "--io", ioFile + "," + ioFile, "-o", out}, []string{ioFile}},
		{"explain, two recordings", []string{"explain", "-q", rec, recLink}, []string{rec, recLink}},
		{"explain --pcap", []string{"explain", "-q", "--pcap", capture + "," + other, "--io", ioFile}, []string{capture, other}},
		{"bench compare", []string{"bench", "compare", result, resultHard}, []string{result, resultHard}},
		{"bench report", []string{"bench", "report", result, result}, []string{result}},
		{"model --from-capture", []string{"model", "--from-capture", capture, hard}, []string{capture, hard}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitBadInput || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "given twice") {
				t.Fatalf("exit %d, want %d and one line saying it was given twice: %q", code, ExitBadInput, stderr)
			}
			for _, n := range c.names {
				if !strings.Contains(stderr, n) {
					t.Errorf("%q does not name %s", stderr, n)
				}
			}
			if stdout != "" {
				t.Errorf("printed %.200q before refusing", stdout)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("report wrote a page")
	}
}

// TestSegmentDuplicateInputsRefused: segment dump and verify refuse a
// file or directory given twice, which would print every batch (or
// problem) twice.
func TestSegmentDuplicateInputsRefused(t *testing.T) {
	segDir := "../../testdata/segments/seg-ids-zstd-0"
	seg := filepath.Join(segDir, "00000000000000000000.log")
	for _, c := range []struct {
		name  string
		args  []string
		names []string // in the error
	}{
		{"segment dump", []string{"segment", "dump", "-q", seg, segDir + "/./00000000000000000000.log"}, []string{seg, segDir + "/./00000000000000000000.log"}},
		{"segment verify", []string{"segment", "verify", "-q", segDir, segDir + "/"}, []string{segDir}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitBadInput || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "given twice") {
				t.Fatalf("exit %d, want %d and one line saying it was given twice: %q", code, ExitBadInput, stderr)
			}
			for _, n := range c.names {
				if !strings.Contains(stderr, n) {
					t.Errorf("%q does not name %s", stderr, n)
				}
			}
			if stdout != "" {
				t.Errorf("printed %.200q before refusing", stdout)
			}
		})
	}
}
