package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// TestOpenFileInputs: a capture may come from a pipe (/dev/stdin, a
// process substitution: /proc/self/fd/N of a pipe); a FIFO nobody writes
// to is an error at once, not a wait; a device or a directory is refused
// as not a file.
func TestOpenFileInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pcap, _ := pcapFile(t, testPackets(5, 100))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		pw.Write(pcap)
		pw.Close()
	}()
	for _, tc := range []struct {
		name    string
		path    string
		packets int
		refused bool   // wraps safefile.ErrNotRegular
		err     string // else an error naming this
	}{
		{"process substitution", fmt.Sprintf("/proc/self/fd/%d", pr.Fd()), 5, false, ""},
		{"FIFO without a writer", fifo, 0, false, "a pipe with no writer reads as empty"},
		{"/dev/zero", "/dev/zero", 0, true, ""},
		{"a directory", dir, 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				packets int
				err     error
			}
			done := make(chan result, 1)
			go func() {
				n, err := readPath(tc.path)
				done <- result{n, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: still opening or reading after 10 s", tc.path)
			}
			switch {
			case tc.refused && !errors.Is(r.err, safefile.ErrNotRegular):
				t.Errorf("error %v, want a refusal (safefile.ErrNotRegular)", r.err)
			case tc.err != "" && (r.err == nil || !strings.Contains(r.err.Error(), tc.err)):
				t.Errorf("error %v, want one saying %q", r.err, tc.err)
			case !tc.refused && tc.err == "" && (r.err != nil || r.packets != tc.packets):
				t.Errorf("%d packets, error %v; want %d packets", r.packets, r.err, tc.packets)
			}
		})
	}
}

// readPath reads a capture to its end and counts its packets.
func readPath(path string) (int, error) {
	cf, err := OpenFile(path)
	if err != nil {
		return 0, err
	}
	defer cf.Close()
	for n := 0; ; n++ {
		if _, _, _, err := cf.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}
