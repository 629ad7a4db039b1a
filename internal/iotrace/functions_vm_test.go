package iotrace

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/vm"
)

// TestFunctionsInVM tests function-level timing (FunctionsOn) on a real
// kernel that allows fentry, since this project's hosts refuse it: Debian's
// cloud kernel under qemu (internal/testkit/vm), with testdata/fentryguest as
// /init. The guest writes known amounts to a segment file on ext4 and on
// XFS while tracing itself, and checks that every write comes as a system
// call and as the file system function inside it, with the right bytes,
// offsets, topic-partition and histogram counts, and that nothing is left
// loaded after Close; its checks and findings are in the console log.
func TestFunctionsInVM(t *testing.T) {
	labtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kdir, err := vm.EnsureKernel(ctx)
	if err != nil {
		labtest.Unavailable(t, "VM kernel: %v", err)
	}
	init := filepath.Join(t.TempDir(), "init")
	if err := vm.BuildInit(ctx, "./testdata/fentryguest", init); err != nil {
		t.Fatal(err)
	}
	res, err := vm.Run(ctx, vm.Config{
		KernelDir: kdir,
		Init:      init,
		Disks: []vm.Disk{
			{FSType: "ext4", Mount: "/mnt/ext4"},
			{FSType: "xfs", Mount: "/mnt/xfs"},
		},
	})
	t.Logf("VM (%s, kernel %s) ran %v", res.Accel, filepath.Base(kdir), res.Elapsed.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	t.Logf("guest console (its lines):\n%s", guestLines(res.Output))
	if res.ExitCode != 0 {
		t.Fatalf("guest exit code %d (1: a check failed, 2: it could not run)", res.ExitCode)
	}
}

// guestLines keeps the console lines fentryguest printed.
func guestLines(out string) string {
	var b []byte
	for _, line := range splitLines(out) {
		if len(line) >= 5 && (line[:5] == "FAIL:" || len(line) >= 12 && line[:12] == "fentryguest:") {
			b = append(append(b, line...), '\n')
		}
	}
	return string(b)
}

func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		lines = append(lines, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return lines
}
