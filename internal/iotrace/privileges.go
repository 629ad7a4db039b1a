package iotrace

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Capability numbers (linux/capability.h); CAP_BPF and CAP_PERFMON exist
// since Linux 5.8, before which CAP_SYS_ADMIN stood for both.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// effectiveCaps returns the effective capability set of this thread.
func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("iotrace: capget: %w", err)
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, nil
}

// checkPrivileges fails with one line naming the missing capabilities.
func checkPrivileges() error {
	caps, err := effectiveCaps()
	if err != nil {
		return err
	}
	return missingCaps(caps)
}

func missingCaps(caps uint64) error {
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if has(capSysAdmin) {
		return nil
	}
	var missing []string
	if !has(capBPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) {
		missing = append(missing, "CAP_PERFMON")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("iotrace: needs CAP_BPF and CAP_PERFMON (or root): missing %s", strings.Join(missing, " and "))
}

// tracefsDirs are where tracefs is looked for, in cilium/ebpf's order.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// ensureTracefs mounts tracefs at /sys/kernel/tracing when it is not
// mounted: attaching to a tracepoint needs its id from
// events/GROUP/NAME/id. Mounting needs CAP_SYS_ADMIN.
func ensureTracefs() error {
	for _, d := range tracefsDirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC) {
			if _, err := os.Stat(d + "/events"); err == nil {
				return nil
			}
		}
	}
	caps, err := effectiveCaps()
	if err != nil {
		return err
	}
	if caps&(1<<capSysAdmin) == 0 {
		return errors.New("iotrace: tracefs is not mounted and mounting it needs CAP_SYS_ADMIN: run `mount -t tracefs nodev /sys/kernel/tracing`")
	}
	if err := unix.Mount("nodev", tracefsDirs[0], "tracefs", 0, ""); err != nil {
		return fmt.Errorf("iotrace: mount tracefs on %s: %w", tracefsDirs[0], err)
	}
	return nil
}
