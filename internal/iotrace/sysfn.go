package iotrace

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
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

// syscallFunctionPrefix is where the kernel's system call functions
// (those taking the user's registers) are named on this architecture;
// iosysfn.bpf.c reads the arguments from x86-64's registers.
const syscallFunctionPrefix = "__x64_sys_"

// sysFunctions holds iosysfn's programs, attached in place of the
// syscalls tracepoints.
type sysFunctions struct {
	coll  *ebpf.Collection
	links []link.Link
}

// openSysFunctions loads bpf/iosysfn.bpf.c with iotrace's maps and
// settings (shared, spec: the loaded and the configured iotrace
// collections) and attaches every program, exits first; it fails, leaving
// nothing loaded, when any of them cannot be: the kernel lacks BPF
// trampolines, refuses them (as on this project's hosts), or names its
// system call functions otherwise.
func openSysFunctions(iotraceSpec *ebpf.CollectionSpec, shared *iotraceObjects) (_ *sysFunctions, err error) {
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
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{
			"ksio_devs":     shared.KsioDevs,
			"ksio_hists":    shared.KsioHists,
			"ksio_events":   shared.KsioEvents,
			"ksio_counters": shared.KsioCounters,
			"ksio_zero":     shared.KsioZero,
			"ksio_starts":   shared.KsioStarts,
			"ksio_pending":  shared.KsioPending,
		},
	})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load: %+v", ve)
		}
		return nil, fmt.Errorf("load: %w", explainRefusal(err))
	}
	s := &sysFunctions{coll: coll}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	// Exits first: once a call's entry is timed, its exit is too.
	for _, typ := range []ebpf.AttachType{ebpf.AttachTraceFExit, ebpf.AttachTraceFEntry} {
		for name, ps := range spec.Programs {
			if ps.AttachType != typ {
				continue
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name], AttachType: typ})
			if err != nil {
				return nil, fmt.Errorf("attach %s to %s: %w", name, ps.AttachTo, err)
			}
			s.links = append(s.links, l)
		}
	}
	return s, nil
}

// programs returns the loaded programs.
func (s *sysFunctions) programs() []*ebpf.Program {
	var progs []*ebpf.Program
	for _, p := range s.coll.Programs {
		progs = append(progs, p)
	}
	return progs
}

// detach closes the links: the programs stop running.
func (s *sysFunctions) detach() error {
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	s.links = nil
	return errors.Join(errs...)
}

// close detaches and releases the programs (the maps are iotrace's).
func (s *sysFunctions) close() error {
	err := s.detach()
	s.coll.Close()
	return err
}

// String is the name ParseSyscallProbe parses.
func (p SyscallProbe) String() string {
	if p == SyscallTracepoints {
		return "tracepoint"
	}
	return "auto"
}
