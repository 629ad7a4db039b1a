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
// ProbeFunctionMode says whether this one allows them.
type Mode struct {
	// Tracepoints is always true: the mode in use.
	Tracepoints bool
	// Functions says whether fentry programs load here, and FunctionsErr
	// why not.
	Functions    bool
	FunctionsErr error
}

func (m Mode) String() string {
	if m.Functions {
		return "syscall tracepoints (fentry allowed on this kernel; function-level timing is not built yet)"
	}
	return fmt.Sprintf("syscall tracepoints (fentry not available: %v)", m.FunctionsErr)
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
			m.Functions = true
			return m
		}
		errs = append(errs, fmt.Sprintf("%s: %v", fn, err))
	}
	m.FunctionsErr = errors.New(strings.Join(errs, "; "))
	return m
}
