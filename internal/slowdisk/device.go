package slowdisk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FSType is the emulator's file system type in /proc/mounts.
const FSType = "fuse.kscope_slowdisk"

// Config is one emulated device.
type Config struct {
	// Image is the backing image (a regular file, made by the caller).
	Image string
	// MountDir is an empty directory the emulator's file system is
	// mounted on; the loop device's backing file is MountDir/DeviceFile.
	MountDir string
	Profile  Profile
	// Seed makes the draws reproducible (per kind of request, in the
	// order requests arrive).
	Seed uint64
	// BufferedLoop attaches the loop device without direct I/O (measured
	// and documented in docs/slowdisk.md: direct I/O is the default).
	BufferedLoop bool
}

// Device is a running emulator: its file system mounted, a loop device
// attached to its file.
type Device struct {
	cfg    Config
	img    *os.File
	hold   *holder
	server *fuse.Server
	loop   string
	// conn is the FUSE connection (for an abort when the unmount fails).
	conn string

	mu sync.Mutex // serialises Close
}

// Start mounts the emulator's file system on cfg.MountDir and attaches a
// loop device to its file. On an error, or when ctx ends first, what it
// made is removed again. The caller must Close the Device, after
// unmounting whatever it mounted from the loop device.
func Start(ctx context.Context, cfg Config) (*Device, error) {
	if err := cfg.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("slowdisk: profile %s: %w", cfg.Profile.Name, err)
	}
	if err := checkMountDir(cfg.MountDir); err != nil {
		return nil, err
	}
	img, err := os.OpenFile(cfg.Image, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("slowdisk: image: %w", err)
	}
	d := &Device{cfg: cfg, img: img, hold: newHolder(cfg.Profile, cfg.Seed)}
	if err := d.start(ctx); err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

func (d *Device) start(ctx context.Context) error {
	if err := d.mount(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("slowdisk: %w", err)
	}
	loop, err := attachLoop(d.File(), !d.cfg.BufferedLoop)
	if err != nil {
		return err
	}
	d.loop = loop
	return ctx.Err()
}

// mount serves the file system. Requests are served concurrently (one
// goroutine each, go-fuse's default), up to 128 of the loop's async
// direct I/O at once (MaxBackground; FUSE's default of 12 would be a
// queue depth the profile did not ask for), in requests of up to 1 MiB
// so that a loop request is rarely split into several held ones.
func (d *Device) mount() error {
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:            "kscope-slowdisk",
			Name:              strings.TrimPrefix(FSType, "fuse."),
			DirectMountStrict: true, // root: no fusermount
			MaxBackground:     128,
			MaxWrite:          1 << 20,
			DisableXAttrs:     true,
			ExtraCapabilities: fuse.CAP_ASYNC_DIO,
		},
	}
	server, err := fs.Mount(d.cfg.MountDir, &root{img: d.img, hold: d.hold}, opts)
	if err != nil {
		return fmt.Errorf("slowdisk: mount FUSE on %s: %w", d.cfg.MountDir, err)
	}
	d.server = server
	d.conn, err = fuseConnection(d.cfg.MountDir)
	return err
}

// Stats are the counts so far.
func (d *Device) Stats() Stats { return d.hold.snapshot() }

// Loop is the loop device ("/dev/loopN").
func (d *Device) Loop() string { return d.loop }

// File is the loop device's backing file.
func (d *Device) File() string { return filepath.Join(d.cfg.MountDir, DeviceFile) }

// Close ends every hold, detaches the loop device, unmounts the file
// system and waits for its server to end. Whatever the loop device
// carries must be unmounted first: while it is mounted the loop device
// stays attached (losetup -d only marks it to go with its last user),
// and Close fails without unmounting the file system that serves it, so
// that the file system on it sees no I/O errors; it can be called again
// once that is unmounted. After a successful Close it does nothing.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hold.release()
	if d.loop != "" {
		if err := detachLoop(d.loop); err != nil {
			return err
		}
		if !waitDetached(d.loop, detachWait) {
			return fmt.Errorf("slowdisk: %s is still in use (a file system mounted on it?): not unmounting %s, which serves it", d.loop, d.cfg.MountDir)
		}
		d.loop = ""
	}
	if d.server != nil {
		if err := unmountServer(d.server, d.cfg.MountDir, d.conn); err != nil {
			return err
		}
		d.server = nil
	}
	if d.img != nil {
		err := d.img.Close()
		d.img = nil
		if err != nil {
			return fmt.Errorf("slowdisk: image: %w", err)
		}
	}
	return nil
}

// detachWait is how long Close waits for a detached loop device's last
// user to let go.
const detachWait = 5 * time.Second

func waitDetached(dev string, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if LoopBackingFile(dev) == "" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// unmountServer unmounts the file system and waits for the server's
// loops to end. When the unmount fails (a process holds the file open),
// the mount is detached lazily and its connection aborted, which ends
// the server: whoever holds the file gets ENOTCONN. Without the fusectl
// file system (/sys/fs/fuse/connections) there is no abort: the server
// then ends when the last holder lets go, and unmountServer waits for
// that only serverWait.
func unmountServer(server *fuse.Server, dir string, conn string) error {
	if err := server.Unmount(); err == nil {
		return nil
	} else if lerr := unix.Unmount(dir, unix.MNT_DETACH); lerr != nil && !errors.Is(lerr, unix.EINVAL) {
		return fmt.Errorf("slowdisk: unmount %s: %w (lazily: %v)", dir, err, lerr)
	}
	abortErr := abortConnection(conn)
	ended := make(chan struct{})
	go func() { server.Wait(); close(ended) }()
	select {
	case <-ended:
		return nil
	case <-time.After(serverWait):
		return errors.Join(fmt.Errorf("slowdisk: %s detached lazily, but its server still runs: a process holds %s open", dir, DeviceFile), abortErr)
	}
}

// serverWait bounds the wait for a lazily unmounted file system's server.
const serverWait = 5 * time.Second

// fuseConnection names the FUSE connection of the file system mounted on
// dir: its dir in /sys/fs/fuse/connections is the anonymous device
// number of the mount.
func fuseConnection(dir string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("slowdisk: %w", err)
	}
	return strconv.FormatUint(uint64(st.Dev), 10), nil
}

// abortConnection aborts a FUSE connection (conn "" : none known).
func abortConnection(conn string) error {
	if conn == "" {
		return errors.New("slowdisk: the FUSE connection is unknown: cannot abort it")
	}
	p := filepath.Join("/sys/fs/fuse/connections", conn, "abort")
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		return fmt.Errorf("slowdisk: abort the FUSE connection: %w", err)
	}
	return nil
}

// checkMountDir refuses a mount point that is not an empty directory.
func checkMountDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("slowdisk: mount dir: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("slowdisk: mount dir %s is not empty", dir)
	}
	return nil
}

// attachLoop attaches file to a free loop device, with direct I/O when
// dio, and returns the device.
func attachLoop(file string, dio bool) (string, error) {
	args := []string{"--find", "--show"}
	if dio {
		args = append(args, "--direct-io=on")
	}
	out, err := exec.Command("losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("slowdisk: losetup %s: %w: %s", file, err, strings.TrimSpace(string(out)))
	}
	dev := strings.TrimSpace(string(out))
	if !strings.HasPrefix(dev, "/dev/loop") {
		return "", fmt.Errorf("slowdisk: losetup printed %q, not a loop device", out)
	}
	return dev, nil
}

// detachLoop detaches dev, retrying while the kernel still holds it (a
// file system unmounted a moment ago).
func detachLoop(dev string) error {
	var err error
	for range 25 {
		if LoopBackingFile(dev) == "" {
			return nil
		}
		var out []byte
		if out, err = exec.Command("losetup", "-d", dev).CombinedOutput(); err == nil {
			return nil
		}
		err = fmt.Errorf("slowdisk: losetup -d %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// LoopBackingFile is the backing file of a loop device, "" when detached.
func LoopBackingFile(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}
