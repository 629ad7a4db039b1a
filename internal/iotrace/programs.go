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
	var ids []ebpf.ProgramID
	for _, tp := range t.objs.tracepoints() {
		info, err := tp.prog.Info()
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
