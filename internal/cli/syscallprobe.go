package cli

import (
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/iotrace"
)

// syscallProbeValue is the --syscall-probe flag of the commands that
// trace writes (iotrace, record, agent).
type syscallProbeValue struct{ p *iotrace.SyscallProbe }

func (v syscallProbeValue) String() string {
	if v.p == nil {
		return iotrace.SyscallsAuto.String()
	}
	return v.p.String()
}

func (v syscallProbeValue) Set(s string) error {
	p, err := iotrace.ParseSyscallProbe(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func (v syscallProbeValue) Type() string { return "auto|tracepoint" }

func addSyscallProbeFlag(f *pflag.FlagSet, p *iotrace.SyscallProbe) {
	f.Var(syscallProbeValue{p}, "syscall-probe", "where to time the broker's write and fsync system calls: auto (fentry on the system call functions where the kernel allows it, which spares every other system call on the host; else the syscalls tracepoints) or tracepoint")
}
