package iotrace

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode says how writes are timed. iotrace times system calls at fentry on
// the system call functions where the kernel allows BPF trampolines, else
// at the syscalls tracepoints, which every kernel with tracing has. Function-level
// timing (fentry/fexit on ext4_file_write_iter and xfs_file_write_iter)
// needs BPF trampolines, which some kernels lack and some hosts refuse;
// Tracer.Mode says what a Tracer attached.
type Mode struct {
	// Tracepoints says the system calls are timed at the syscalls
	// tracepoints; SyscallFentry, at fentry/fexit on the system call
	// functions (Config.SyscallProbes), and SyscallFentryErr says why
	// not when it was tried. One of the two is always true.
	Tracepoints      bool
	SyscallFentry    bool
	SyscallFentryErr error
	// Functions lists the file system functions timed, and FunctionsErr
	// says why others are not.
	Functions    []string
	FunctionsErr error
	// Steal says whether hypervisor steal is traced (Config.Steal), and
	// StealErr why not when it was asked for with Config.StealOptional.
	Steal    bool
	StealErr error
	// RunQueue says whether the broker's run-queue delays are traced
	// (Config.RunQueue); Conns lists the ports whose connections' threads
	// are (Config.Conns), empty without.
	RunQueue bool
	Conns    []uint16
	// PageCache says whether the pages the broker adds to the page cache
	// are traced (Config.PageCache), and PageCacheErr why not when it was
	// asked for: the kernel lacks the tracepoint, or refused the program.
	PageCache    bool
	PageCacheErr error
}

// String says how writes are timed, then what each source that
// describes itself says (sources).
func (m Mode) String() string {
	s := m.writes()
	for _, src := range sources {
		if src.describe != nil {
			s += src.describe(m)
		}
	}
	return s
}

func (m Mode) stealString() string {
	switch {
	case m.Steal:
		return " + steal"
	case m.StealErr != nil:
		return fmt.Sprintf(" (steal not traced: %v)", m.StealErr)
	}
	return ""
}

func (m Mode) pageCacheString() string {
	switch {
	case m.PageCache:
		return " + page cache adds"
	case m.PageCacheErr != nil:
		return fmt.Sprintf(" (page cache not traced: %v)", m.PageCacheErr)
	}
	return ""
}

func (m Mode) runQueueString() string {
	if m.RunQueue {
		return " + run-queue delays"
	}
	return ""
}

func (m Mode) connsString() string {
	if len(m.Conns) == 0 {
		return ""
	}
	ports := make([]string, len(m.Conns))
	for i, p := range m.Conns {
		ports[i] = strconv.Itoa(int(p))
	}
	return " + connection threads (ports " + strings.Join(ports, ",") + ")"
}

func (m Mode) writes() string {
	s := "syscall tracepoints"
	switch {
	case m.SyscallFentry:
		s = "syscall fentry/fexit"
	case m.SyscallFentryErr != nil:
		s = fmt.Sprintf("syscall tracepoints (not fentry: %v)", m.SyscallFentryErr)
	}
	switch {
	case len(m.Functions) > 0 && m.FunctionsErr != nil:
		return fmt.Sprintf("%s + fentry/fexit on %s (not: %v)", s, strings.Join(m.Functions, ", "), m.FunctionsErr)
	case len(m.Functions) > 0:
		return s + " + fentry/fexit on " + strings.Join(m.Functions, ", ")
	case m.FunctionsErr != nil:
		return fmt.Sprintf("%s (file system functions: fentry not available: %v)", s, m.FunctionsErr)
	}
	return s
}
