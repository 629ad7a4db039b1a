package iotrace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// FunctionMode says whether a Tracer also times writes inside the file
// system (bpf/iofunc.bpf.c: fentry/fexit on ext4_file_write_iter and
// xfs_file_write_iter), next to the system calls. That needs BPF
// trampolines, which some kernels lack and some hosts refuse.
type FunctionMode int

const (
	// FunctionsOff times system calls only (the zero value).
	FunctionsOff FunctionMode = iota
	// FunctionsAuto adds the file system functions where the kernel
	// allows it, and says why not elsewhere (Tracer.Mode).
	FunctionsAuto
	// FunctionsOn fails Open when no file system function can be timed.
	FunctionsOn
)

// ParseFunctionMode parses "off", "auto" or "on".
func ParseFunctionMode(s string) (FunctionMode, error) {
	switch s {
	case "off":
		return FunctionsOff, nil
	case "auto":
		return FunctionsAuto, nil
	case "on":
		return FunctionsOn, nil
	}
	return 0, fmt.Errorf("iotrace: function mode %q: want off, auto or on", s)
}

// fsFunctions are the file system functions iofunc times, with their op
// and the names of their programs.
var fsFunctions = []struct {
	name        string
	op          Op
	enter, exit string
}{
	{"ext4_file_write_iter", OpExt4WriteIter, "ksio_fe_ext4", "ksio_fx_ext4"},
	{"xfs_file_write_iter", OpXfsWriteIter, "ksio_fe_xfs", "ksio_fx_xfs"},
}

// functions holds the loaded function programs: one collection per file
// system function, so that one the kernel lacks (xfs not loaded) does not
// keep the other from loading.
type functions struct {
	tracingSet
	timed   []string // functions attached
	skipped []string // "function: why not"
}

// tracingSet is collections of fentry/fexit programs and their links.
type tracingSet struct {
	colls []*ebpf.Collection
	links []link.Link
}

// openFunctionSource is the file system functions' entry of sources.
func openFunctionSource(t *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	f, err := openFunctions(*cfg, &t.objs)
	if err != nil {
		return nil, err
	}
	t.mode.Functions = f.timed
	if len(f.skipped) > 0 {
		t.mode.FunctionsErr = errors.New(strings.Join(f.skipped, "; "))
	}
	return f, nil
}

// openFunctions loads and attaches bpf/iofunc.bpf.c's programs for each
// file system function, sharing the system calls' maps in shared: calls
// are counted in the same histograms and sent through the same ring
// buffer. A function that cannot be timed is skipped with its reason.
func openFunctions(cfg Config, shared *iotraceObjects) (*functions, error) {
	spec, err := loadIofunc()
	if err != nil {
		return nil, fmt.Errorf("iotrace: functions: %w", err)
	}
	f := &functions{}
	for _, fn := range fsFunctions {
		if err := f.open(cfg, spec.Copy(), shared, fn.enter, fn.exit); err != nil {
			f.skipped = append(f.skipped, fmt.Sprintf("%s: %v", fn.name, err))
		} else {
			f.timed = append(f.timed, fn.name)
		}
	}
	if len(f.timed) == 0 && cfg.Functions == FunctionsOn {
		f.close()
		return nil, fmt.Errorf("iotrace: no file system function can be timed: %s", strings.Join(f.skipped, "; "))
	}
	return f, nil
}

// open loads the programs enter and exit of spec, a copy of
// bpf/iofunc.bpf.c's (their attach target is in their section names), and
// attaches them.
func (f *functions) open(cfg Config, spec *ebpf.CollectionSpec, shared *iotraceObjects, enter, exit string) error {
	for name := range spec.Programs {
		if name != enter && name != exit {
			delete(spec.Programs, name)
		}
	}
	for name, v := range map[string]any{
		iofuncVarTargTgid:     uint32(cfg.PID),
		iofuncVarMinLatencyNs: uint64(cfg.MinLatency),
		iofuncVarFilterDev:    uint8(1),
		iofuncVarRingbufFlags: cfg.ringFlags(),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	coll, err := loadTracing(spec, shared)
	if err != nil {
		return err
	}
	links, err := attachTracing(coll, spec)
	if err != nil {
		coll.Close()
		return err
	}
	f.colls = append(f.colls, coll)
	f.links = append(f.links, links...)
	return nil
}

// loadTracing loads spec, fentry/fexit programs that time into iotrace's
// maps: each map of shared that spec also declares replaces spec's.
func loadTracing(spec *ebpf.CollectionSpec, shared *iotraceObjects) (*ebpf.Collection, error) {
	replace := map[string]*ebpf.Map{}
	for name, m := range map[string]*ebpf.Map{
		"ksio_devs":     shared.KsioDevs,
		"ksio_hists":    shared.KsioHists,
		"ksio_events":   shared.KsioEvents,
		"ksio_counters": shared.KsioCounters,
		"ksio_zero":     shared.KsioZero,
		"ksio_starts":   shared.KsioStarts,
		"ksio_pending":  shared.KsioPending,
	} {
		if _, ok := spec.Maps[name]; ok {
			replace[name] = m
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: replace})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load: %+v", ve)
		}
		return nil, fmt.Errorf("load: %w", explainRefusal(err))
	}
	return coll, nil
}

// attachTracing attaches every program of coll (loaded from spec), the
// fexit ones first: once a call's entry is timed, its exit is too. On
// failure nothing stays attached.
func attachTracing(coll *ebpf.Collection, spec *ebpf.CollectionSpec) ([]link.Link, error) {
	var links []link.Link
	for _, typ := range []ebpf.AttachType{ebpf.AttachTraceFExit, ebpf.AttachTraceFEntry} {
		for name, ps := range spec.Programs {
			if ps.AttachType != typ {
				continue
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name], AttachType: typ})
			if err != nil {
				for _, l := range links {
					l.Close()
				}
				return nil, fmt.Errorf("attach %s to %s: %w", name, ps.AttachTo, err)
			}
			links = append(links, l)
		}
	}
	return links, nil
}

// Function programs (file system functions, system calls at fentry) send
// and count through the system calls' maps: nothing of their own to read.
func (f *tracingSet) ring() *ringbuf.Reader                   { return nil }
func (f *tracingSet) read(*Tracer, Handlers, *delivery) error { return nil }
func (f *tracingSet) counters(*Stats) error                   { return nil } // counted in ksio_counters

// programs returns the loaded programs.
func (f *tracingSet) programs() []*ebpf.Program {
	var progs []*ebpf.Program
	for _, c := range f.colls {
		for _, p := range c.Programs {
			progs = append(progs, p)
		}
	}
	return progs
}

// detach closes the links: the programs stop running.
func (f *tracingSet) detach() error {
	var errs []error
	for _, l := range f.links {
		errs = append(errs, l.Close())
	}
	f.links = nil
	return errors.Join(errs...)
}

// close detaches and releases programs and maps.
func (f *tracingSet) close() error {
	errs := []error{f.detach()}
	for _, c := range f.colls {
		c.Close()
	}
	f.colls = nil
	return errors.Join(errs...)
}

// explainRefusal adds the likely cause to an EPERM from loading a tracing
// program: memory limits are lifted before (rlimit.RemoveMemlock), so it
// means the kernel cannot attach BPF trampolines to the function (built
// without CONFIG_FUNCTION_TRACER, as on this project's hosts) or a
// security policy (lockdown, an LSM) refuses tracing programs.
func explainRefusal(err error) error {
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	// cilium/ebpf suggests raising MEMLOCK on any EPERM; it is raised
	// already, and the hint sends the reader the wrong way.
	msg := strings.Replace(err.Error(), " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", "", 1)
	msg = strings.TrimSuffix(msg, ": "+unix.EPERM.Error())
	return fmt.Errorf("refused (no BPF trampolines in this kernel, or a security policy): %s: %w", msg, unix.EPERM)
}
