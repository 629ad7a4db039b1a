package iotrace

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// requireRoot skips t unless running as root (eBPF), or fails it under
// CI=true.
func requireRoot(t *testing.T) { labtest.RequireRoot(t) }

func monoNow(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}
