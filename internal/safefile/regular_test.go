package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		limit int64
		want  error // nil: reads "data"
	}{
		{"a regular file", small, 4, nil},
		{"over the limit", small, 3, ErrTooLarge},
		{"a FIFO", fifo, 10, ErrNotRegular},
		{"a directory", dir, 10, ErrNotRegular},
		{"a device", "/dev/zero", 10, ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), 10, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { defer close(done); b, err = ReadRegular(tc.path, tc.limit) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("blocked")
			}
			if tc.want == nil {
				if err != nil || string(b) != "data" {
					t.Fatalf("ReadRegular = %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadRegular = %q, %v; want %v", b, err, tc.want)
			}
		})
	}
}
