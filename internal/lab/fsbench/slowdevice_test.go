package fsbench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/slowdisk"
	"github.com/kscope-dev/kscope/internal/testkit/childtest"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// slowHelperEnv makes the test binary the child of
// TestSweepRemovesKilledEmulator.
const slowHelperEnv = "KSCOPE_FSBENCH_SLOW_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(slowHelperEnv); dir != "" {
		os.Exit(runSlowHelper(dir))
	}
	os.Exit(m.Run())
}

// runSlowHelper sets up one run's emulated device and ext4 in work dir
// dir as Run does, prints "ready", and waits to be killed.
func runSlowHelper(dir string) int {
	r := slowRunner(dir)
	if _, err := r.loopDevice("ext4-1", nil); err != nil {
		fmt.Println("error", err)
		return 1
	}
	if _, err := r.fileSystem(Variants[0], r.st.items[len(r.st.items)-1].Dev, "ext4-1"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready")
	select {}
}

func slowRunner(workDir string) *runner {
	p, _ := slowdisk.Named("fast")
	cfg := Config{WorkDir: workDir, ImageSize: 512 << 20, Device: &p, DeviceSeed: 1}
	r := &runner{cfg: cfg, res: &Result{}, st: newStack(workDir), dir: filepath.Join(workDir, runDir)}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		panic(err)
	}
	return r
}

func requireSlowDevice(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		labtest.Unavailable(t, "the emulated device needs root")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			labtest.Unavailable(t, "no %s", tool)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		labtest.Unavailable(t, "no /dev/fuse")
	}
}

// checkWorkDirClean: nothing mounted under dir, no loop device backed
// by a file under it.
func checkWorkDirClean(t *testing.T, dir string) {
	t.Helper()
	if m, err := mountsUnder(dir); err != nil || len(m) > 0 {
		t.Errorf("mounted under %s: %v %v", dir, m, err)
	}
	if l, err := loopsBackedUnder(dir); err != nil || len(l) > 0 {
		t.Errorf("loop devices on files under %s: %v %v", dir, l, err)
	}
}

// TestSlowDeviceMkfsFailureUnwinds: a run whose mkfs fails on the
// emulated device unwinds it: the loop device detached, the FUSE file
// system unmounted, its dir removed.
func TestSlowDeviceMkfsFailureUnwinds(t *testing.T) {
	requireSlowDevice(t)
	work := t.TempDir()
	r := slowRunner(work)
	dev, err := r.loopDevice("bad-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dev, "/dev/loop") || !strings.HasSuffix(loopBackingFile(dev), "bad-1.dev/"+slowdisk.DeviceFile) {
		t.Fatalf("device %s on %q, want a loop device on the emulator's file", dev, loopBackingFile(dev))
	}
	bad := Variant{Name: "bad", FS: "ext4", MkfsArgs: []string{"-q", "-b", "12345"}}
	if _, err := r.fileSystem(bad, dev, "bad-1"); err == nil {
		t.Fatal("mkfs with block size 12345 succeeded")
	}
	if err := r.st.unwind(0); err != nil {
		t.Fatal(err)
	}
	checkWorkDirClean(t, work)
	if _, err := os.Stat(filepath.Join(r.dir, "bad-1.dev")); err == nil {
		t.Error("the emulator's dir is left")
	}
}

// TestSweepRemovesKilledEmulator: a run killed (SIGKILL) with ext4
// mounted on an emulated device leaves a FUSE mount whose server is gone,
// a loop device on its file and the ext4 mount; the next run's sweep
// removes all three.
func TestSweepRemovesKilledEmulator(t *testing.T) {
	requireSlowDevice(t)
	work := t.TempDir()
	child, first := childtest.Start(t, slowHelperEnv+"="+work)
	cmd := child.Cmd
	if first != "ready" {
		t.Fatalf("child: %q", first)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	mounts, _ := mountsUnder(work)
	if len(mounts) != 2 {
		t.Errorf("after the kill: mounts %v, want the ext4 and the FUSE one", mounts)
	}
	left, err := sweep(work)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Mounts) != 2 || len(left.Loops) != 1 {
		t.Errorf("sweep removed %s, want 2 mounts and 1 loop device", left)
	}
	checkWorkDirClean(t, work)
}
