package use

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestSamplerLive samples this machine's own /proc and /sys for two short
// intervals: the real files parse, and the table and JSON are written.
func TestSamplerLive(t *testing.T) {
	// kscope runs on Linux only: a machine without /proc/stat is broken
	// for it, not a reason to skip.
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Fatalf("no /proc: %v", err)
	}
	s, err := NewSampler(Config{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("notes: %q", s.Notes())
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	n := 0
	err = Run(ctx, s, 300*time.Millisecond, func(smp *Sample) error {
		n++
		var b bytes.Buffer
		if err := WriteTable(&b, smp); err != nil {
			return err
		}
		t.Logf("\n%s", b.String())
		if _, err := json.Marshal(smp); err != nil {
			return err
		}
		if smp.CPU.CPUs < 1 || len(smp.CPU.PerCPU) != smp.CPU.CPUs || smp.FDs.Broker == nil || smp.FDs.Broker.Open < 3 {
			t.Errorf("cpu %+v fds %+v", smp.CPU, smp.FDs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d samples in 700 ms at 300 ms, want 2", n)
	}
}
