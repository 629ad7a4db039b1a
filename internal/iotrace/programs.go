package iotrace

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
)

// KernelPrograms returns the BPF programs loaded in the kernel whose names
// start with ProgramPrefix, by id: those of every iotrace running on the
// host. Listing them needs CAP_SYS_ADMIN.
func KernelPrograms() (map[ebpf.ProgramID]string, error) {
	progs := map[ebpf.ProgramID]string{}
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return progs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("iotrace: list BPF programs: %w", err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if errors.Is(err, os.ErrNotExist) {
			continue // unloaded meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("iotrace: BPF program %d: %w", id, err)
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			return nil, fmt.Errorf("iotrace: BPF program %d: %w", id, err)
		}
		if strings.HasPrefix(info.Name, ProgramPrefix) {
			progs[id] = info.Name
		}
	}
}

// ProgramIDs returns the kernel's ids of the programs this Tracer loaded.
func (t *Tracer) ProgramIDs() ([]ebpf.ProgramID, error) {
	var progs []*ebpf.Program
	for _, tp := range t.objs.tracepoints() {
		progs = append(progs, tp.prog)
	}
	for _, s := range t.subs {
		progs = append(progs, s.programs()...)
	}
	var ids []ebpf.ProgramID
	for _, prog := range progs {
		info, err := prog.Info()
		if err != nil {
			return nil, fmt.Errorf("iotrace: program info: %w", err)
		}
		id, ok := info.ID()
		if !ok {
			return nil, errors.New("iotrace: the kernel does not report program ids")
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ProgramCount is how many BPF programs a Tracer with FunctionsOff loads
// where the kernel refuses fentry: those of bpf/iotrace.bpf.c, and with
// journal those of bpf/iojournal.bpf.c too (all loaded, whether or not
// their tracepoints exist on this kernel). Where fentry is allowed,
// SyscallsAuto adds bpf/iosysfn.bpf.c's (the tracepoint programs stay
// loaded, unattached), and function mode two per file system function.
func ProgramCount(journal bool) (int, error) {
	spec, err := loadIotrace()
	if err != nil {
		return 0, fmt.Errorf("iotrace: %w", err)
	}
	n := len(spec.Programs)
	if journal {
		js, err := loadIojournal()
		if err != nil {
			return 0, fmt.Errorf("iotrace: journal: %w", err)
		}
		n += len(js.Programs)
	}
	return n, nil
}
