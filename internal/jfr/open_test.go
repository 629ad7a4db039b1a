package jfr

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// TestReadNotRegular: a FIFO (with no writer: opening it for reading
// used to block forever), a device or a directory given as a recording
// is refused at once, by every reader.
func TestReadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jfr")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	readers := map[string]func(string) error{
		"ReadLockWaits": func(p string) error {
			_, err := ReadLockWaits(p, func(*event.LockWait) error { return nil })
			return err
		},
		"ReadPauses": func(p string) error {
			_, err := ReadPauses(p, func(*event.JVMPause) error { return nil })
			return err
		},
		"ReadProfile": func(p string) error { _, err := ReadProfile(p); return err },
	}
	for name, read := range readers {
		for _, p := range []string{fifo, "/dev/zero", dir} {
			t.Run(name+" "+p, func(t *testing.T) {
				done := make(chan error, 1)
				go func() { done <- read(p) }()
				select {
				case err := <-done:
					if !errors.Is(err, safefile.ErrNotRegular) {
						t.Errorf("%s(%s) = %v; want a refusal wrapping ErrNotRegular", name, p, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s(%s) blocked", name, p)
				}
			})
		}
	}
}
