package fsbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// FuzzParseWorkload: any bytes given as a workload file give a workload
// whose bench config can be made, or an error of one line; never a panic
// nor a hang.
func FuzzParseWorkload(f *testing.F) {
	def, err := json.Marshal(DefaultWorkload())
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{def,
		[]byte(`{"rate": 500, "duration": "7s", "acks": "1", "partitions": 2}`),
		[]byte(`{"rate": 500, "durration": "7s"}`),
		[]byte(`{"rate": -1}`),
		[]byte(`{"message_size": "uniform:100-2000", "keys": "hot:0.5", "compression": "zstd"}`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wd := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("parseWorkload has not finished after 10s on a %d-byte input", len(data)))
		})
		defer wd.Stop()
		w, err := parseWorkload(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if _, err := w.BenchConfig("127.0.0.1:9092"); err != nil {
			t.Fatalf("accepted %+v, whose bench config fails: %v", w, err)
		}
	})
}
