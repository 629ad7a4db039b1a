package iotrace

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// SyscallProbe says where a Tracer times the write and fsync system
// calls. The events, histograms and counts are the same either way; what
// differs is what the host pays for them.
type SyscallProbe int

const (
	// SyscallsAuto (the zero value) times them with fentry/fexit on the
	// system call functions (bpf/iosysfn.bpf.c) where the kernel allows
	// BPF trampolines, and at the syscalls tracepoints elsewhere;
	// Tracer.Mode says which, and why not fentry.
	SyscallsAuto SyscallProbe = iota
	// SyscallTracepoints always uses the syscalls tracepoints.
	SyscallTracepoints
)

// ParseSyscallProbe parses "auto" or "tracepoint".
func ParseSyscallProbe(s string) (SyscallProbe, error) {
	switch s {
	case "auto":
		return SyscallsAuto, nil
	case "tracepoint":
		return SyscallTracepoints, nil
	}
	return 0, fmt.Errorf("iotrace: syscall probe %q: want auto or tracepoint", s)
}

// sysFunctions holds iosysfn's programs, attached in place of the
// syscalls tracepoints.
type sysFunctions struct{ tracingSet }

// openSysFunctions loads bpf/iosysfn.bpf.c with the settings of
// iotraceSpec and the maps of shared (iotrace's collection as configured,
// and as loaded) and attaches every program, exits first; it fails,
// leaving nothing loaded, when any of them cannot be: the kernel lacks BPF
// trampolines, refuses them (as on this project's hosts), or has no
// __x64_sys_* functions (another architecture, or kernels before 4.17,
// without the syscall wrappers); iosysfn.bpf.c reads the arguments from
// x86-64's registers.
func openSysFunctions(iotraceSpec *ebpf.CollectionSpec, shared *iotraceObjects) (*sysFunctions, error) {
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("system call functions are only probed on amd64, not %s", runtime.GOARCH)
	}
	spec, err := loadIosysfn()
	if err != nil {
		return nil, err
	}
	// The settings iotrace was configured with.
	for _, name := range []string{iosysfnVarTargTgid, iosysfnVarMinLatencyNs, iosysfnVarFilterDev, iosysfnVarRingbufFlags, iosysfnVarTaskBtf} {
		src, dst := iotraceSpec.Variables[name], spec.Variables[name]
		if src == nil || dst == nil || src.Size() != dst.Size() {
			return nil, fmt.Errorf("setting %s differs between iotrace and iosysfn", name)
		}
		if err := dst.Set(src.Value); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	coll, err := loadTracing(spec, shared)
	if err != nil {
		return nil, err
	}
	links, err := attachTracing(coll, spec)
	if err != nil {
		coll.Close()
		return nil, err
	}
	return &sysFunctions{tracingSet{colls: []*ebpf.Collection{coll}, links: links}}, nil
}

// String is the name ParseSyscallProbe parses.
func (p SyscallProbe) String() string {
	if p == SyscallTracepoints {
		return "tracepoint"
	}
	return "auto"
}
