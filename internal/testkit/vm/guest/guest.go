// Package guest is the guest half of package vm. The static Go program
// that vm.Run boots as the VM's /init calls Setup first, then does its
// work, and ends with Exit, which reports the exit code to the host and
// powers the VM off.
//
//	func main() {
//		if err := guest.Setup(); err != nil {
//			fmt.Println(err)
//			guest.Exit(125)
//		}
//		... // the test proper
//		guest.Exit(0)
//	}
//
// Setup and Exit act only when the process is PID 1 (the VM's init): on a
// host they would mount over /proc or power the machine off.
package guest

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Setup prepares the VM as its PID 1: it mounts proc, sysfs, devtmpfs
// (/dev), tmpfs (/tmp), debugfs and tracefs (when the kernel has them) and
// bpffs (/sys/fs/bpf), makes sure stdin/stdout/stderr are the console,
// loads the manifest's kernel modules in order and mounts its disks.
func Setup() error {
	if os.Getpid() != 1 {
		return fmt.Errorf("guest: Setup must run as the VM's init (PID 1), not as PID %d", os.Getpid())
	}
	if err := mountBase(); err != nil {
		return err
	}
	if err := ensureConsole(); err != nil {
		return err
	}
	m, err := ReadManifest(ManifestPath)
	if err != nil {
		return err
	}
	for _, mod := range m.Modules {
		if err := loadModule(mod); err != nil {
			return err
		}
	}
	// The disks appear while virtio_blk probes; give them a moment.
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range m.Disks {
		if err := mountDisk(d, deadline); err != nil {
			return err
		}
	}
	return nil
}

// Exit prints the exit marker with code on the console, syncs and powers
// the VM off. It never returns. Outside a VM (not PID 1) it prints the
// marker and exits the process with code.
func Exit(code int) {
	token := "?"
	if m, err := ReadManifest(ManifestPath); err == nil {
		token = m.Token
	}
	// On a line of its own, even when the program's output did not end one.
	fmt.Fprintf(os.Stdout, "\n%s\n", Marker(token, code))
	unix.Sync()
	if os.Getpid() == 1 {
		err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
		// PID 1 exiting panics the kernel, which with panic=-1 and
		// qemu's -no-reboot ends the VM as well.
		fmt.Fprintf(os.Stderr, "guest: power off: %v\n", err)
	}
	os.Exit(code)
}

// loadModule loads the kernel module file path. A module already there
// (built in or loaded) is fine.
func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("guest: module: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("guest: finit_module %s: %w", path, err)
	}
	return nil
}
