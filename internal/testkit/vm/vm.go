package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

// Disk is a file system made on the host and attached to the VM as a
// virtio disk, which the guest mounts (guest.Setup).
type Disk struct {
	FSType string // "ext4" or "xfs"
	SizeMB int    // default 64 for ext4, 300 (mkfs.xfs's minimum) for xfs
	Mount  string // guest mount point, e.g. /mnt/ext4
	// MkfsArgs are extra mkfs arguments, e.g. {"-O", "fast_commit"}.
	MkfsArgs []string
	// Options is the mount data, e.g. "data=writeback".
	Options string
}

// Config is one boot.
type Config struct {
	KernelDir string   // output of scripts/vm-kernel.sh (EnsureKernel)
	Init      string   // host path of a static binary that becomes the guest's /init
	Args      []string // its arguments (passed on the kernel command line after "--")
	// Modules are kernel modules to load at boot (with their dependencies,
	// from modules.dep), e.g. "xfs", "virtio_blk". Those Disks need are
	// added; built-in ones are skipped.
	Modules  []string
	Disks    []Disk        // made on the host (mkfs), mounted by the guest
	MemoryMB int           // default 1024
	Timeout  time.Duration // default 5 min
}

// Result is what a boot produced.
type Result struct {
	Output   string // the guest console (kernel messages and /init's output), "\r\n" made "\n", terminal escapes removed
	ExitCode int    // what the guest passed to guest.Exit
	Accel    string // "kvm" or "tcg"
	Elapsed  time.Duration
}

const (
	defaultMemoryMB = 1024
	defaultTimeout  = 5 * time.Minute
	// markerGrace is how long qemu may take to end once the guest has
	// reported its exit code.
	markerGrace = 10 * time.Second
)

// Run boots cfg.Init as /init of the kernel in cfg.KernelDir and returns
// the exit code it reported (guest.Exit). Failing to boot, a VM that ends
// without reporting, cfg.Timeout and ctx's end are errors; the Result
// holds the console output so far in every case.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	cfg, err := withDefaults(cfg)
	if err != nil {
		return Result{}, err
	}
	cmdline, err := kernelCmdline(cfg.Args)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	k, err := loadKernel(cfg.KernelDir)
	if err != nil {
		return Result{}, err
	}
	mods, err := k.modulesFor(cfg)
	if err != nil {
		return Result{}, err
	}
	if err := checkStatic(cfg.Init); err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp("", "kscope-vm-")
	if err != nil {
		return Result{}, fmt.Errorf("vm: %w", err)
	}
	defer os.RemoveAll(dir)

	token, err := newToken()
	if err != nil {
		return Result{}, err
	}
	m := guest.Manifest{Token: token}
	images, err := makeDisks(ctx, dir, cfg.Disks)
	if err != nil {
		return Result{}, err
	}
	for i, d := range cfg.Disks {
		m.Disks = append(m.Disks, guest.Disk{Serial: images[i].serial, FSType: d.FSType, Mount: d.Mount, Options: d.Options})
	}
	initrd, err := buildInitramfs(ctx, dir, cfg.Init, mods, m)
	if err != nil {
		return Result{}, err
	}
	res, err := boot(ctx, bootSpec{
		kernel:   k.vmlinuz,
		initrd:   initrd,
		cmdline:  cmdline,
		disks:    images,
		memoryMB: cfg.MemoryMB,
		token:    token,
	})
	res.Elapsed = time.Since(start)
	return res, err
}

// withDefaults fills in cfg's defaults and checks it.
func withDefaults(cfg Config) (Config, error) {
	if cfg.KernelDir == "" {
		return cfg, errors.New("vm: Config.KernelDir is empty (see scripts/vm-kernel.sh)")
	}
	if cfg.Init == "" {
		return cfg, errors.New("vm: Config.Init is empty")
	}
	if cfg.MemoryMB <= 0 {
		cfg.MemoryMB = defaultMemoryMB
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	disks := make([]Disk, len(cfg.Disks))
	seen := map[string]bool{}
	for i, d := range cfg.Disks {
		fs, ok := fsTypeOf(d.FSType)
		if !ok {
			return cfg, fmt.Errorf("vm: disk %d: unsupported file system %q (want ext4 or xfs)", i, d.FSType)
		}
		if d.SizeMB <= 0 {
			d.SizeMB = fs.defaultMB
		}
		if d.SizeMB < fs.minMB {
			return cfg, fmt.Errorf("vm: disk %d: %s needs at least %d MB, not %d", i, d.FSType, fs.minMB, d.SizeMB)
		}
		if d.Mount == "" {
			d.Mount = fmt.Sprintf("/mnt/disk%d", i)
		}
		if !filepath.IsAbs(d.Mount) || filepath.Clean(d.Mount) == "/" {
			return cfg, fmt.Errorf("vm: disk %d: mount point %q must be an absolute path other than /", i, d.Mount)
		}
		d.Mount = filepath.Clean(d.Mount)
		if seen[d.Mount] {
			return cfg, fmt.Errorf("vm: disk %d: mount point %s used twice", i, d.Mount)
		}
		seen[d.Mount] = true
		disks[i] = d
	}
	cfg.Disks = disks
	return cfg, nil
}

// maxCmdline is the x86 kernel's COMMAND_LINE_SIZE, less its terminating
// NUL.
const maxCmdline = 2047

// kernelCmdline is the kernel command line with args for /init after
// "--". The kernel splits it at white space and interprets double quotes,
// so args may contain neither.
func kernelCmdline(args []string) (string, error) {
	parts := []string{
		"console=ttyS0",
		"panic=-1",   // reboot at once on a panic, which -no-reboot makes the end of qemu
		"oops=panic", // an oops ends the VM rather than leaving it half alive
		"loglevel=4", // warnings and worse on the console
		"rdinit=/init",
		"edd=off",         // no BIOS disk probing in the boot stub
		"mitigations=off", // speed: the guest runs only our code
	}
	if len(args) > 0 {
		parts = append(parts, "--")
	}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\r\v\f\"") {
			return "", fmt.Errorf("vm: init argument %q: must be non-empty, without white space or double quotes (it goes on the kernel command line)", a)
		}
		parts = append(parts, a)
	}
	s := strings.Join(parts, " ")
	if len(s) > maxCmdline {
		return "", fmt.Errorf("vm: kernel command line is %d bytes, over the kernel's %d", len(s), maxCmdline)
	}
	return s, nil
}

func newToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("vm: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
