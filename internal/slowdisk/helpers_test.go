package slowdisk

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/testkit/prereq"
	"golang.org/x/sys/unix"
)

// requireDeviceTools fails under CI=true (skips otherwise) without root,
// /dev/fuse, losetup or mkfs.ext4. (testkit/labtest imports lab, which
// imports this package: prereq instead.)
func requireDeviceTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Unavailable(t, "the emulator needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		prereq.Unavailable(t, "no /dev/fuse: %v", err)
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			prereq.Unavailable(t, "no %s", tool)
		}
	}
}

// emulated is an emulated device with ext4 mounted on it.
type emulated struct {
	dev *Device
	mnt string
}

// startEmulated makes a sparse image of sizeMB in a temp dir (on the
// root disk, not a tmpfs), starts the emulator on it with p, makes ext4
// on the loop device and mounts it; all removed at the test's end.
func startEmulated(t *testing.T, p Profile, sizeMB int) *emulated {
	t.Helper()
	requireDeviceTools(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "image")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(sizeMB)<<20); err != nil {
		t.Fatal(err)
	}
	fuseDir, mnt := filepath.Join(dir, "fuse"), filepath.Join(dir, "mnt")
	for _, d := range []string{fuseDir, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dev, err := Start(context.Background(), Config{Image: img, MountDir: fuseDir, Profile: p, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := &emulated{dev: dev, mnt: mnt}
	t.Cleanup(func() {
		_ = unix.Unmount(mnt, 0)
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	})
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev.Loop()).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	// lazytime: the tests' overwrites in place change only mtimes, which
	// would otherwise make a journal commit (with its flushes) every 5 s.
	if err := unix.Mount(dev.Loop(), mnt, "ext4", unix.MS_LAZYTIME, ""); err != nil {
		t.Fatal(err)
	}
	return e
}

// mounted reports whether anything is mounted on dir.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}
