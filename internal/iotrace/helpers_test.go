package iotrace

import (
	"os"

	"golang.org/x/sys/unix"
	"testing"
)

// requireRoot skips t unless running as root, or fails it under CI=true
// (the policy of internal/lab/labtest: CI can never pass by skipping).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("iotrace: needs root for eBPF (euid %d) (CI=true: prerequisites are mandatory)", os.Geteuid())
	}
	t.Skipf("iotrace: needs root for eBPF (euid %d)", os.Geteuid())
}

func monoNow(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}
