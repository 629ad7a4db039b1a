package guest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// baseMount is one of the file systems every VM gets.
type baseMount struct {
	fstype, target, data string
	flags                uintptr
	optional             bool // missing from the kernel is fine
}

func baseMounts() []baseMount {
	const nse = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	return []baseMount{
		{fstype: "proc", target: "/proc", flags: nse},
		{fstype: "sysfs", target: "/sys", flags: nse},
		{fstype: "devtmpfs", target: "/dev", data: "mode=0755", flags: unix.MS_NOSUID},
		{fstype: "tmpfs", target: "/tmp", data: "mode=1777", flags: unix.MS_NOSUID | unix.MS_NODEV},
		{fstype: "debugfs", target: "/sys/kernel/debug", flags: nse, optional: true},
		{fstype: "tracefs", target: "/sys/kernel/tracing", flags: nse, optional: true},
		{fstype: "bpf", target: "/sys/fs/bpf", data: "mode=0700", flags: nse},
	}
}

func mountBase() error {
	for _, m := range baseMounts() {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			if m.optional {
				continue
			}
			return fmt.Errorf("guest: mount %s: %w", m.target, err)
		}
		err := unix.Mount(m.fstype, m.target, m.fstype, m.flags, m.data)
		switch {
		case err == nil, errors.Is(err, unix.EBUSY): // EBUSY: already mounted
		case m.optional && (errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT)):
		default:
			return fmt.Errorf("guest: mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// ensureConsole makes fds 0, 1 and 2 the console when the kernel could
// not open one for init (an initramfs without /dev/console).
func ensureConsole() error {
	if _, err := unix.FcntlInt(1, unix.F_GETFD, 0); err == nil {
		return nil
	}
	fd, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("guest: open console: %w", err)
	}
	for i := 0; i <= 2; i++ {
		if fd != i {
			if err := unix.Dup3(fd, i, 0); err != nil {
				return fmt.Errorf("guest: console on fd %d: %w", i, err)
			}
		}
	}
	if fd > 2 {
		unix.Close(fd)
	}
	return nil
}

// mountDisk mounts d once its device shows up (until deadline).
func mountDisk(d Disk, deadline time.Time) error {
	if !filepath.IsAbs(d.Mount) {
		return fmt.Errorf("guest: disk %s: mount point %q is not absolute", d.Serial, d.Mount)
	}
	var dev string
	for {
		dev = deviceBySerial(d.Serial)
		if dev != "" {
			if _, err := os.Stat(dev); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("guest: disk %s (%s on %s): no block device with that serial in /sys/block (is virtio_blk loaded?)", d.Serial, d.FSType, d.Mount)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.MkdirAll(d.Mount, 0o755); err != nil {
		return fmt.Errorf("guest: disk %s: %w", d.Serial, err)
	}
	if err := unix.Mount(dev, d.Mount, d.FSType, 0, d.Options); err != nil {
		return fmt.Errorf("guest: mount %s (%s, %q) on %s: %w", dev, d.FSType, d.Options, d.Mount, err)
	}
	return nil
}

// deviceBySerial returns /dev/NAME of the block device whose serial is
// serial, or "".
func deviceBySerial(serial string) string {
	paths, _ := filepath.Glob("/sys/block/*/serial")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == serial {
			return "/dev/" + filepath.Base(filepath.Dir(p))
		}
	}
	return ""
}
