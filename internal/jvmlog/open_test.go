package jvmlog

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// TestReadPausesNotRegular: a FIFO with no writer (opening it for reading
// used to block forever), a device or a directory in place of the JVM's
// log is refused at once.
func TestReadPausesNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "jvm.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		t.Run(p, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := ReadPauses(p, func(*event.JVMPause) error { return nil })
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, safefile.ErrNotRegular) {
					t.Errorf("ReadPauses(%s) = %v; want a refusal wrapping ErrNotRegular", p, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadPauses(%s) blocked", p)
			}
		})
	}
}
