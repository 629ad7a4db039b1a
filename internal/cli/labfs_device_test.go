package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLabFSDeviceRefused: a --device that is no profile (an unknown
// name, a FIFO, a directory, a hostile profile file) is refused at once
// with exit 2 and one line naming the file and the true position, before
// anything is made.
func TestLabFSDeviceRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	negative := write("negative.json", "{\n  \"read\": {\"percentiles\": [{\"p\": 50, \"ms\": -3}]}}")
	twoDevs := write("two.jsonl", `{"dev":"7:0","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`+"\n"+
		`{"dev":"8:0","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`)
	work := filepath.Join(dir, "work")
	for _, c := range []struct {
		name, device, want string
	}{
		{"unknown name", "nvme-fast", "not one of fast, cloud-baseline"},
		{"FIFO without a writer", fifo, fifo + ":1:1: bad device profile: the file ends"},
		{"directory", dir, "not a regular file"},
		{"negative latency", negative, negative + ":2:28: bad device profile: read: p50: -3 ms"},
		{"two devices", twoDevs, "pick one as " + twoDevs + "#DEV"},
		{"missing device", twoDevs + "#9:9", "no block requests of device 9:9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runWithin(t, 30*time.Second, "lab", "fs", "--work-dir", work, "--device", c.device)
			if code != ExitBadInput || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, want %d and one line with %q: %q", code, ExitBadInput, c.want, stderr)
			}
		})
	}
	if _, err := os.Stat(work); err == nil {
		t.Error("the work dir was made")
	}
}
