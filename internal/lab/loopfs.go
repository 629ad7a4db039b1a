package lab

// File systems of their own for the nodes of a cluster (ClusterConfig.FS):
// per node a sparse image file in the node's dir, attached to a loop
// device, formatted (ext4 or xfs) once, and mounted on the node's log dir.
// Each node's log then has its own device, block queue and journal: an
// fsfreeze of one node's mount stalls that node's log writes only, and an
// I/O trace tells the nodes apart by device. The image outlives a stop
// (it is the node's data); the loop device and the mount do not.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/slowdisk"
)

const (
	// FSImageFile is a node's image in its dir.
	FSImageFile = "fs.img"
	// DefaultFSSizeMB is an image's size when ClusterConfig.FSSizeMB is
	// 0. Images are sparse: only what is written takes space.
	DefaultFSSizeMB = 2048
)

// The fsfreeze ioctls, _IOWR('X', 119/120, int) (linux/fs.h); x/sys/unix
// does not define them.
const (
	ioctlFIFREEZE = 0xC0045877
	ioctlFITHAW   = 0xC0045878
)

// clusterFS is a cluster's file system choice, in cluster.json.
type clusterFS struct {
	Type   string `json:"type"`   // "ext4" or "xfs"
	SizeMB int    `json:"sizeMB"` // of an image when it is made
	// Device is the emulated device's profile of the last start (""
	// for none; ClusterConfig.Device).
	Device string `json:"device,omitempty"`
}

// nodeFS is one node's file system, in cluster.json. Paths are absolute,
// as mountinfo and losetup show them.
type nodeFS struct {
	Image      string `json:"image"`
	MountPoint string `json:"mountPoint"` // the node's log dir
	// Device is the loop device while attached ("" once detached).
	Device string `json:"device,omitempty"`
	// Formatted: mkfs completed on Image (an image made but not
	// formatted when a start was killed is formatted next time).
	Formatted bool `json:"formatted"`
	// EmulatorDir is where the emulated device's FUSE file system is
	// mounted (ClusterConfig.Device): the loop device is on its file,
	// not on Image. Recorded before it is made, so that a stop from
	// another process, after a crash, finds it.
	EmulatorDir string `json:"emulatorDir,omitempty"`
}

// checkFSType accepts the file systems a node can have.
func checkFSType(fs string) error {
	switch fs {
	case "ext4", "xfs":
		return nil
	}
	return fmt.Errorf("lab: file system %q: want ext4 or xfs", fs)
}

// mkfsArgs are mkfs.<fs>'s arguments before the device.
func mkfsArgs(fs string) []string {
	if fs == "ext4" {
		// Inode tables and journal initialised now: otherwise the
		// ext4lazyinit thread zeroes them in the background for minutes
		// after the mount, writes that would show in every I/O trace of
		// the node.
		return []string{"-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"}
	}
	return []string{"-q", "-f"}
}

// setUp mounts the node's file system on its mount point: the image
// (made, sparse, when missing), a loop device, mkfs unless done before,
// the mount. save records progress in cluster.json; it runs as soon as
// the loop device is known, so that a stop from another process finds it.
//
// attach attaches the image to a loop device (attachLoop, or an
// emulated device's).
func (f *nodeFS) setUp(fs string, sizeMB int, save func() error, attach func(image string) (string, error)) error {
	created, err := makeImage(f.Image, sizeMB)
	if err != nil {
		return err
	}
	if created {
		f.Formatted = false
	} else if !f.Formatted {
		// An image that cluster.json does not know as formatted (a start
		// killed before mkfs ended, or a cluster.json removed by hand):
		// never format over a file system, which may hold a node's data.
		switch got := detectFS(f.Image); got {
		case "":
		case fs:
			f.Formatted = true
		default:
			return fmt.Errorf("lab: %s holds %s, not %s: remove it to start this node afresh", f.Image, got, fs)
		}
	}
	if err := checkMountPoint(f.MountPoint); err != nil {
		return err
	}
	dev, err := attach(f.Image)
	if err != nil {
		return err
	}
	f.Device = dev
	if err := save(); err != nil {
		return err
	}
	fresh := !f.Formatted
	if fresh {
		if _, err := runTool("mkfs."+fs, append(mkfsArgs(fs), dev)...); err != nil {
			return err
		}
		f.Formatted = true
		if err := save(); err != nil {
			return err
		}
	}
	if err := unix.Mount(dev, f.MountPoint, fs, 0, ""); err != nil {
		return fmt.Errorf("lab: mount %s (%s) on %s: %w", dev, fs, f.MountPoint, err)
	}
	if fresh {
		// Kafka takes every dir in a log dir for a partition and fails on
		// ext4's lost+found. Removing it is harmless: e2fsck makes it
		// again when it needs one.
		if err := os.Remove(filepath.Join(f.MountPoint, "lost+found")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// tearDown thaws (a frozen file system cannot be unmounted), unmounts and
// detaches every loop device backed by the image; what is not there is
// skipped, so it can run any number of times. The nodes must be stopped.
// An emulated device is closed (emu, when this process runs it), or its
// loop devices detached and its FUSE mount, whose server is gone,
// removed.
func (f *nodeFS) tearDown(emu *slowdisk.Device) error {
	var errs []error
	if isMountPoint(f.MountPoint) {
		_ = ThawFS(f.MountPoint) // EINVAL when not frozen: nothing to do
		if err := unmountFS(f.MountPoint); err != nil {
			errs = append(errs, err)
		}
	}
	if f.EmulatorDir != "" {
		errs = append(errs, f.tearDownEmulator(emu))
	}
	for _, dev := range loopsBackedBy(f.Image) {
		if err := detachLoop(dev); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		f.Device = ""
	}
	return errors.Join(errs...)
}

// tearDownEmulator closes emu, or, for an emulator of another (dead)
// process, detaches the loop devices on its file and unmounts its dir.
func (f *nodeFS) tearDownEmulator(emu *slowdisk.Device) error {
	if emu != nil {
		return emu.Close()
	}
	var errs []error
	for _, dev := range loopsBackedBy(filepath.Join(f.EmulatorDir, slowdisk.DeviceFile)) {
		if err := detachLoop(dev); err != nil {
			errs = append(errs, err)
		}
	}
	if isMountPoint(f.EmulatorDir) {
		errs = append(errs, unmountFS(f.EmulatorDir))
	}
	return errors.Join(errs...)
}

// makeImage creates a sparse image of sizeMB MiB unless path exists, and
// reports whether it did.
func makeImage(path string, sizeMB int) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("lab: image: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("lab: image: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false, fmt.Errorf("lab: image: %w", err)
	}
	err = f.Truncate(int64(sizeMB) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return false, fmt.Errorf("lab: image %s: %w", path, err)
	}
	return true, nil
}

// detectFS returns "ext4" (any ext2/3/4) or "xfs" when image starts with
// that file system's super block, else "".
func detectFS(image string) string {
	f, err := os.Open(image)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 2048)
	if n, _ := f.ReadAt(b, 0); n < len(b) {
		return ""
	}
	switch {
	case string(b[:4]) == "XFSB":
		return "xfs"
	case b[1080] == 0x53 && b[1081] == 0xEF: // s_magic 0xEF53, little-endian, at 1024+56
		return "ext4"
	}
	return ""
}

// checkMountPoint makes the mount point and refuses one that is mounted
// on already or holds files, which the mount would hide.
func checkMountPoint(mnt string) error {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return fmt.Errorf("lab: mount point: %w", err)
	}
	if isMountPoint(mnt) {
		return fmt.Errorf("lab: %s is mounted on already", mnt)
	}
	entries, err := os.ReadDir(mnt)
	if err != nil {
		return fmt.Errorf("lab: mount point: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("lab: %s is not empty (%s, ...): a file system mounted there would hide it", mnt, entries[0].Name())
	}
	return nil
}

// attachLoop attaches image to a free loop device and returns it. Direct
// I/O where the backing file system allows it: the page cache then holds
// the node's data once, not twice.
func attachLoop(image string) (string, error) {
	out, err := runTool("losetup", "--find", "--show", "--direct-io=on", image)
	if err != nil {
		if out, err = runTool("losetup", "--find", "--show", image); err != nil {
			return "", err
		}
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/loop") {
		return "", fmt.Errorf("lab: losetup printed %q, not a loop device", out)
	}
	return dev, nil
}

// detachLoop detaches dev, retrying while the kernel still holds it (a
// file system unmounted a moment ago).
func detachLoop(dev string) error {
	var err error
	for range 25 {
		if loopBackingFile(dev) == "" {
			return nil
		}
		if _, err = runTool("losetup", "-d", dev); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// loopsBackedBy lists the loop devices whose backing file is image
// (/sys/block/loopN/loop/backing_file; a deleted file shows as "PATH
// (deleted)").
func loopsBackedBy(image string) []string {
	want := realPath(image)
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(f)))
		if loopBackingFile(dev) == want {
			out = append(out, dev)
		}
	}
	return out
}

// loopBackingFile is the backing file of a loop device, "" when detached.
func loopBackingFile(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}

// isMountPoint reports whether something is mounted on path in this
// process's mount namespace.
func isMountPoint(path string) bool {
	ms, err := hostinfo.Mounts(0)
	if err != nil {
		return false
	}
	want := realPath(path)
	for _, m := range ms {
		if m.MountPoint == want {
			return true
		}
	}
	return false
}

// realPath resolves symlinks, as the kernel reports paths; a path that
// does not exist stays as it is.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// unmountFS unmounts mnt, retrying while it is busy (a process that just
// died may still hold it).
func unmountFS(mnt string) error {
	var err error
	for range 50 {
		err = unix.Unmount(mnt, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
			return nil // EINVAL: not a mount point (any more)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("lab: unmount %s: %w", mnt, err)
}

// FreezeFS freezes the file system mounted on mnt (fsfreeze -f): writes
// to it block until ThawFS. Stopping a cluster thaws its nodes first.
func FreezeFS(mnt string) error { return fsIoctl(mnt, ioctlFIFREEZE, "freeze") }

// ThawFS thaws a frozen file system (fsfreeze -u); it fails (EINVAL) when
// the file system was not frozen.
func ThawFS(mnt string) error { return fsIoctl(mnt, ioctlFITHAW, "thaw") }

func fsIoctl(mnt string, req uint, what string) error {
	fd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lab: %s %s: %w", what, mnt, err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, req, 0); err != nil {
		return fmt.Errorf("lab: %s %s: %w", what, mnt, err)
	}
	return nil
}
