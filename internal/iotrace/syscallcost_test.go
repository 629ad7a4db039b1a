package iotrace

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestSyscallCostHelper is not a test: bench/syscall-cost.sh runs it (from
// a compiled test binary) to hold one variant of the system calls'
// programs attached while it times other processes' system calls. It is
// run only when KSCOPE_SYSCALL_COST names the variant:
//
//	tracepoints  Open: iotrace's 14 programs on the syscalls tracepoints
//	raw          ksio_raw_enter and ksio_raw_exit from the object file
//	             KSCOPE_SYSCALL_COST_OBJ, which the script builds from
//	             bpf/iotrace.bpf.c plus two programs on the raw syscalls
//	             tracepoints (raw_syscalls:sys_enter, sys_exit) that call
//	             its on_enter and on_exit, set up as Open sets up iotrace's
//	floor        only ksio_e_fdsync/ksio_x_fdsync, on the syscalls
//	             tracepoints of fdatasync, which the timed processes never
//	             call: what every system call pays once any syscalls
//	             tracepoint has a program, before any program runs
//
// KSCOPE_SYSCALL_COST_PID is the traced process, KSCOPE_SYSCALL_COST_DIR
// its log directory. In a normal test run it does nothing (it is not a
// test, so it neither passes nor skips anything). It prints "ids" and the
// programs' ids, then "ready",
// and detaches when its standard input ends, printing (tracepoints and
// raw) "counted" and the calls counted in the histograms.
func TestSyscallCostHelper(t *testing.T) {
	variant := os.Getenv("KSCOPE_SYSCALL_COST")
	if variant == "" {
		return // not run by bench/syscall-cost.sh
	}
	requireRoot(t)
	pid, err := strconv.Atoi(os.Getenv("KSCOPE_SYSCALL_COST_PID"))
	if err != nil {
		t.Fatalf("KSCOPE_SYSCALL_COST_PID: %v", err)
	}
	dir := os.Getenv("KSCOPE_SYSCALL_COST_DIR")
	// kscope's default threshold: fast writes are counted in the
	// histograms, not sent to user space.
	const minLatency = 10 * time.Millisecond
	var ids []ebpf.ProgramID
	// hists, when set, is counted at the end: the calls timed, printed
	// as "counted N" (the script checks that the traced dd's were).
	var hists *ebpf.Map
	addID := func(p *ebpf.Program) {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		ids = append(ids, id)
	}
	switch variant {
	case "tracepoints":
		tr, err := Open(Config{PID: pid, LogDirs: []string{dir}, MinLatency: minLatency, SyscallProbes: SyscallTracepoints})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		hists = tr.objs.KsioHists
		if ids, err = tr.ProgramIDs(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tr.Run(ctx, func(*event.Write) error { return nil }) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
	case "raw":
		if err := rlimit.RemoveMemlock(); err != nil {
			t.Fatal(err)
		}
		spec, err := ebpf.LoadCollectionSpec(os.Getenv("KSCOPE_SYSCALL_COST_OBJ"))
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]any{
			iotraceVarTargTgid: uint32(pid), iotraceVarMinLatencyNs: uint64(minLatency), iotraceVarFilterDev: uint8(1),
			"nr_write": int64(unix.SYS_WRITE), "nr_pwrite64": int64(unix.SYS_PWRITE64), "nr_writev": int64(unix.SYS_WRITEV),
			"nr_pwritev": int64(unix.SYS_PWRITEV), "nr_pwritev2": int64(unix.SYS_PWRITEV2),
			"nr_fsync": int64(unix.SYS_FSYNC), "nr_fdatasync": int64(unix.SYS_FDATASYNC),
		} {
			vs, ok := spec.Variables[name]
			if !ok {
				t.Fatalf("%s: no variable %s", os.Getenv("KSCOPE_SYSCALL_COST_OBJ"), name)
			}
			if err := vs.Set(v); err != nil {
				t.Fatal(err)
			}
		}
		var objs struct {
			iotraceMaps
			Enter *ebpf.Program `ebpf:"ksio_raw_enter"`
			Exit  *ebpf.Program `ebpf:"ksio_raw_exit"`
		}
		if err := loadObjects(spec, &objs, "raw"); err != nil {
			t.Fatal(err)
		}
		defer objs.iotraceMaps.Close()
		defer objs.Enter.Close()
		defer objs.Exit.Close()
		hists = objs.KsioHists
		devs, err := devicesOf([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range devs {
			if err := objs.KsioDevs.Put(dev, uint8(1)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []struct {
			name string
			prog *ebpf.Program
		}{{"sys_exit", objs.Exit}, {"sys_enter", objs.Enter}} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.name, Program: p.prog})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			addID(p.prog)
		}
		// Drain the ring buffer as Run does (calls of 10 ms or more).
		rd, err := ringbuf.NewReader(objs.KsioEvents)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			readRing(rd, 0, nil, func([]byte) error { return nil })
		}()
		defer func() {
			rd.Close()
			<-done
		}()
	case "floor":
		if err := rlimit.RemoveMemlock(); err != nil {
			t.Fatal(err)
		}
		spec, err := loadIotrace()
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Variables[iotraceVarTargTgid].Set(uint32(pid)); err != nil {
			t.Fatal(err)
		}
		var objs struct {
			iotraceMaps
			Enter *ebpf.Program `ebpf:"ksio_e_fdsync"`
			Exit  *ebpf.Program `ebpf:"ksio_x_fdsync"`
		}
		if err := loadObjects(spec, &objs, "floor"); err != nil {
			t.Fatal(err)
		}
		defer objs.iotraceMaps.Close()
		defer objs.Enter.Close()
		defer objs.Exit.Close()
		for _, p := range []struct {
			name string
			prog *ebpf.Program
		}{{"sys_exit_fdatasync", objs.Exit}, {"sys_enter_fdatasync", objs.Enter}} {
			l, err := link.Tracepoint("syscalls", p.name, p.prog, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			addID(p.prog)
		}
	default:
		t.Fatalf("KSCOPE_SYSCALL_COST=%q: want tracepoints, raw or floor", variant)
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	fmt.Printf("ids %s\nready\n", strings.Join(s, " "))
	io.Copy(io.Discard, os.Stdin)
	if hists != nil {
		var (
			k iotraceIotraceHistKey
			h iotraceIotraceHist
			n uint64
		)
		it := hists.Iterate()
		for it.Next(&k, &h) {
			n += h.Count
		}
		if err := it.Err(); err != nil {
			t.Error(err)
		}
		fmt.Printf("counted %d\n", n)
	}
}
