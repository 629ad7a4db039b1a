package iotrace

import (
	"fmt"
	"strconv"
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
	// RunQueue says whether the broker's run-queue delays are traced
	// (Config.RunQueue); Conns lists the ports whose connections' threads
	// are (Config.Conns), empty without.
	RunQueue bool
	Conns    []uint16
}

func (m Mode) String() string {
	s := m.writes()
	switch {
	case m.Steal:
		s += " + steal"
	case m.StealErr != nil:
		s += fmt.Sprintf(" (steal not traced: %v)", m.StealErr)
	}
	if m.RunQueue {
		s += " + run-queue delays"
	}
	if len(m.Conns) > 0 {
		ports := make([]string, len(m.Conns))
		for i, p := range m.Conns {
			ports[i] = strconv.Itoa(int(p))
		}
		s += " + connection threads (ports " + strings.Join(ports, ",") + ")"
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
