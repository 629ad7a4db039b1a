package fsbench

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// TestLoadWorkloadNotRegular: a workload file that is a device (/dev/zero
// was read until memory ran out) or a directory is refused, one over the
// size bound too; a FIFO with no writer (which blocked forever) is read as
// empty, and a pipe with a workload in it (--workload <(...)) works.
func TestLoadWorkloadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxWorkloadFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write([]byte(`{"rate": 123}`))
		w.Close()
	}()
	pipe := "/proc/self/fd/" + strconv.Itoa(int(r.Fd()))
	for _, c := range []struct {
		path string
		want error // nil: loads
		rate float64
	}{
		{"/dev/zero", safefile.ErrNotRegular, 0},
		{dir, safefile.ErrNotRegular, 0},
		{big, safefile.ErrTooLarge, 0},
		{fifo, errors.New("any"), 0},
		{pipe, nil, 123},
	} {
		t.Run(c.path, func(t *testing.T) {
			type result struct {
				w   Workload
				err error
			}
			done := make(chan result, 1)
			go func() {
				w, err := LoadWorkload(c.path)
				done <- result{w, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("LoadWorkload(%s) blocked", c.path)
			}
			switch {
			case c.want == nil && (got.err != nil || got.w.Rate != c.rate):
				t.Errorf("LoadWorkload(%s) = %+v, %v; want rate %v", c.path, got.w, got.err, c.rate)
			case c.want != nil && got.err == nil:
				t.Errorf("LoadWorkload(%s): no error", c.path)
			case c.want != nil && c.want.Error() != "any" && !errors.Is(got.err, c.want):
				t.Errorf("LoadWorkload(%s) = %v; want %v", c.path, got.err, c.want)
			}
		})
	}
}
