package iotrace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
)

// Mode says how writes are timed. iotrace times system calls at the
// syscalls tracepoints, which every kernel with tracing has. Function-level
// timing (fentry/fexit on ext4_file_write_iter and xfs_file_write_iter)
// needs BPF trampolines, which some kernels lack and some hosts refuse;
// ProbeFunctionMode says whether this one allows them, Tracer.Mode what a
// Tracer attached.
type Mode struct {
	// Tracepoints is always true: system calls are always timed.
	Tracepoints bool
	// Functions lists the file system functions timed (for
	// ProbeFunctionMode: the first one fentry loaded on), and
	// FunctionsErr says why others are not.
	Functions    []string
	FunctionsErr error
}

func (m Mode) String() string {
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

// ProbeFunctionMode tries to load a do-nothing fentry program on
// ext4_file_write_iter (falling back to xfs_file_write_iter) and unloads
// it at once.
func ProbeFunctionMode() Mode {
	m := Mode{Tracepoints: true}
	if err := rlimit.RemoveMemlock(); err != nil {
		m.FunctionsErr = err
		return m
	}
	var errs []string
	for _, fn := range []string{"ext4_file_write_iter", "xfs_file_write_iter"} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         ProgramPrefix + "probe",
			Type:         ebpf.Tracing,
			AttachType:   ebpf.AttachTraceFEntry,
			AttachTo:     fn,
			License:      "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		})
		if err == nil {
			prog.Close()
			m.Functions = []string{fn}
			return m
		}
		errs = append(errs, fmt.Sprintf("%s: %v", fn, explainRefusal(err)))
	}
	m.FunctionsErr = errors.New(strings.Join(errs, "; "))
	return m
}
