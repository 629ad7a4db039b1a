package iotrace

import (
	"fmt"
	"strings"
)

// Mode says how writes are timed. iotrace times system calls at the
// syscalls tracepoints, which every kernel with tracing has. Function-level
// timing (fentry/fexit on ext4_file_write_iter and xfs_file_write_iter)
// needs BPF trampolines, which some kernels lack and some hosts refuse;
// Tracer.Mode says what a Tracer attached.
type Mode struct {
	// Tracepoints is always true: system calls are always timed.
	Tracepoints bool
	// Functions lists the file system functions timed, and FunctionsErr
	// says why others are not.
	Functions    []string
	FunctionsErr error
	// Steal says whether hypervisor steal is traced (Config.Steal), and
	// StealErr why not when it was asked for with Config.StealOptional.
	Steal    bool
	StealErr error
}

func (m Mode) String() string {
	s := m.writes()
	switch {
	case m.Steal:
		s += " + steal"
	case m.StealErr != nil:
		s += fmt.Sprintf(" (steal not traced: %v)", m.StealErr)
	}
	return s
}

func (m Mode) writes() string {
	switch {
	case len(m.Functions) > 0 && m.FunctionsErr != nil:
		return fmt.Sprintf("syscall tracepoints + fentry/fexit on %s (not: %v)", strings.Join(m.Functions, ", "), m.FunctionsErr)
	case len(m.Functions) > 0:
		return "syscall tracepoints + fentry/fexit on " + strings.Join(m.Functions, ", ")
	case m.FunctionsErr != nil:
		return fmt.Sprintf("syscall tracepoints (fentry not available: %v)", m.FunctionsErr)
	}
	return "syscall tracepoints"
}
