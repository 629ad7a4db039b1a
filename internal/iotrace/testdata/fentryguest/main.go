// Command fentryguest is the /init of the VM that tests iotrace's
// fentry timing (TestFunctionsInVM) on a kernel that allows it: it makes
// every kind of traced call (write, pwrite64, writev, pwritev, pwritev2,
// fsync, fdatasync) on a segment file on ext4 and on XFS while tracing
// itself with iotrace.FunctionsOn, once with the system calls timed at
// fentry (SyscallsAuto) and once at the syscalls tracepoints; checks
// every call it made against the events and histograms, checks that no
// program is left after Close, prints what it found and powers the VM off with exit code
// 0 (all good), 1 (a check failed) or 2 (it could not run).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

const (
	writes    = 200
	writeSize = 4096
)

// mounts are the file systems the host attached (vm.Disk), with the
// function that times writes on each.
var mounts = []struct{ dir, fn string }{
	{"/mnt/ext4", "ext4_file_write_iter"},
	{"/mnt/xfs", "xfs_file_write_iter"},
}

// readyEnv marks the second start of /init, after Setup.
const readyEnv = "FENTRYGUEST_SET_UP"

func main() {
	if os.Getenv(readyEnv) == "" {
		if err := guest.Setup(); err != nil {
			fmt.Println("fentryguest: setup:", err)
			guest.Exit(2)
		}
		// cilium/ebpf's rlimit package probes the kernel in its init,
		// which ran before /proc was mounted: start again (still PID 1).
		err := unix.Exec("/init", os.Args, append(os.Environ(), readyEnv+"=1"))
		fmt.Println("fentryguest: exec:", err)
		guest.Exit(2)
	}
	failures, err := run()
	if err != nil {
		fmt.Println("fentryguest:", err)
		guest.Exit(2)
	}
	for _, f := range failures {
		fmt.Println("FAIL:", f)
	}
	if len(failures) > 0 {
		guest.Exit(1)
	}
	fmt.Println("fentryguest: all checks passed")
	guest.Exit(0)
}

// probes are the two ways of timing the system calls the guest checks,
// with what Mode must say for each: on this kernel auto takes fentry.
var probes = []struct {
	name  string
	probe iotrace.SyscallProbe
	// fentry: the system calls must be timed at fentry, and no
	// syscalls tracepoint program attached.
	fentry bool
}{
	{"auto", iotrace.SyscallsAuto, true},
	{"tracepoint", iotrace.SyscallTracepoints, false},
}

func run() (failures []string, err error) {
	for _, p := range probes {
		f, err := traceCalls(p.name, p.probe, p.fentry)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		failures = append(failures, f...)
	}
	return failures, nil
}

// call is a system call the guest made, as the tracer must report it.
type call struct {
	op     string
	offset int64
	bytes  int64
}

// traceCalls makes every traced kind of call on a segment file on each
// mount while tracing itself with probe, and checks what the tracer saw.
func traceCalls(name string, probe iotrace.SyscallProbe, fentry bool) (failures []string, err error) {
	fail := func(format string, args ...any) {
		failures = append(failures, name+": "+fmt.Sprintf(format, args...))
	}
	var files []*os.File
	var dirs []string
	for _, m := range mounts {
		dir := filepath.Join(m.dir, "orders-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, "00000000000000000000.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files = append(files, f)
		dirs = append(dirs, m.dir)
	}
	tr, err := iotrace.Open(iotrace.Config{PID: os.Getpid(), LogDirs: dirs, Functions: iotrace.FunctionsOn, SyscallProbes: probe})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	mode := tr.Mode()
	fmt.Printf("fentryguest: %s: mode: %s\n", name, mode)
	for _, m := range mounts {
		if !strings.Contains(strings.Join(mode.Functions, ","), m.fn) {
			fail("mode does not time %s: %s", m.fn, mode)
		}
	}
	if mode.SyscallFentry != fentry || mode.Tracepoints == fentry {
		fail("system calls timed at fentry %v and tracepoints %v, want fentry %v", mode.SyscallFentry, mode.Tracepoints, fentry)
	}
	ids, err := tr.ProgramIDs()
	if err != nil {
		return nil, err
	}
	attached, err := syscallTracepointLinks()
	if err != nil {
		return nil, err
	}
	fmt.Printf("fentryguest: %s: %d programs loaded, %d attached to syscalls tracepoints\n", name, len(ids), attached)
	if fentry && attached != 0 || !fentry && attached != 14 {
		fail("%d programs attached to syscalls tracepoints", attached)
	}

	var mu sync.Mutex
	var got []*event.Write
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- tr.Run(ctx, func(w *event.Write) error {
			mu.Lock()
			got = append(got, w)
			mu.Unlock()
			return nil
		})
	}()
	made := make([][]call, len(files))
	for i, f := range files {
		if made[i], err = makeCalls(int(f.Fd())); err != nil {
			return nil, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		return nil, err
	}
	sums, _, err := tr.Summaries()
	if err != nil {
		return nil, err
	}
	if err := tr.Close(); err != nil {
		return nil, err
	}

	// Per file system: the system calls, each as it was made, and the
	// function calls inside the writes, writes*writeSize bytes, on
	// orders-0.
	for i, m := range mounts {
		dev := devOf(m.dir)
		var sys, fn []*event.Write
		var seen []call
		for _, w := range got {
			if !strings.HasPrefix(w.File, "orders-0/") || w.Topic != "orders" || w.Partition != 0 {
				fail("event on %q (topic %q partition %d)", w.File, w.Topic, w.Partition)
				continue
			}
			if w.Dev != dev {
				continue
			}
			if w.Op == m.fn {
				fn = append(fn, w)
				continue
			}
			sys = append(sys, w)
			seen = append(seen, call{w.Op, w.Offset, w.Bytes})
		}
		fmt.Printf("fentryguest: %s: %s: %d system calls, %d %s calls\n", name, m.dir, len(sys), len(fn), m.fn)
		if missing, extra := diffCalls(made[i], seen); len(missing)+len(extra) > 0 {
			fail("%s: system calls not seen %v, seen but not made %v", m.dir, missing, extra)
		}
		var bytes int64
		for _, w := range fn {
			bytes += w.Bytes
		}
		if len(fn) != writes || bytes != writes*writeSize {
			fail("%s %s: %d events and %d bytes, want %d and %d", m.dir, m.fn, len(fn), bytes, writes, writes*writeSize)
		}
		// Each function call lies inside a system call of its thread.
		for _, f := range fn {
			inside := false
			for _, s := range sys {
				if s.TID == f.TID && !f.Start.Before(s.Start) && !f.End.After(s.End) && s.Offset == f.Offset {
					inside = true
					break
				}
			}
			if !inside {
				fail("%s at offset %d (%v-%v) is inside no write system call", m.fn, f.Offset, f.Start, f.End)
				break
			}
		}
		counted := map[string]uint64{}
		for _, s := range sums {
			if s.Topic == "orders" && s.Partition == 0 && s.Dev == dev {
				counted[s.Op] += s.Count
			}
		}
		want := map[string]uint64{m.fn: writes}
		for _, c := range made[i] {
			want[c.op]++
		}
		for op, n := range want {
			if counted[op] != n {
				fail("%s: histograms count %d %s calls, want %d", m.dir, counted[op], op, n)
			}
		}
	}

	// Nothing of ours stays in the kernel.
	left, err := iotrace.KernelPrograms()
	if err != nil {
		return nil, err
	}
	if len(left) > 0 {
		fail("programs left after Close: %v", left)
	}
	return failures, nil
}

// makeCalls makes writes calls of writeSize bytes to fd, one after the
// other in the file, cycling through write, pwrite64, writev, pwritev and
// pwritev2 (at an offset, and at the file position with offset -1), with
// an fsync or fdatasync after every fiftieth, and returns them as the
// tracer must report them.
func makeCalls(fd int) ([]call, error) {
	buf := make([]byte, writeSize)
	half := [][]byte{buf[:writeSize/2], buf[writeSize/2:]}
	var calls []call
	for i := range writes {
		off := int64(i * writeSize)
		var op string
		var n int
		var err error
		positioned := true
		switch i % 6 {
		case 0:
			op, positioned = "write", false
			n, err = unix.Write(fd, buf)
		case 1:
			op = "pwrite64"
			n, err = unix.Pwrite(fd, buf, off)
		case 2:
			op, positioned = "writev", false
			n, err = unix.Writev(fd, half)
		case 3:
			op = "pwritev"
			n, err = unix.Pwritev(fd, half, off)
		case 4:
			op = "pwritev2"
			n, err = unix.Pwritev2(fd, half, off, 0)
		case 5:
			op, positioned = "pwritev2", false
			n, err = unix.Pwritev2(fd, half, -1, 0)
		}
		if err == nil && n != writeSize {
			err = fmt.Errorf("%s wrote %d of %d bytes", op, n, writeSize)
		}
		if err == nil && positioned {
			// The next call at the file position writes after this one.
			_, err = unix.Seek(fd, off+writeSize, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		calls = append(calls, call{op, off, writeSize})
		if (i+1)%50 == 0 {
			op, sync := "fsync", unix.Fsync
			if (i+1)%100 == 0 {
				op, sync = "fdatasync", unix.Fdatasync
			}
			if err := sync(fd); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			calls = append(calls, call{op, -1, 0})
		}
	}
	return calls, nil
}

// diffCalls returns the calls made that were not seen, and those seen
// that were not made, each as many times as it is missing or extra.
func diffCalls(made, seen []call) (missing, extra []call) {
	left := map[call]int{}
	for _, c := range made {
		left[c]++
	}
	for _, c := range seen {
		if left[c] > 0 {
			left[c]--
		} else {
			extra = append(extra, c)
		}
	}
	for _, c := range made {
		if left[c] > 0 {
			left[c]--
			missing = append(missing, c)
		}
	}
	return missing, extra
}

// syscallTracepointLinks counts the links in the kernel whose program is
// one of iotrace's syscalls tracepoint programs (ksio_e_*, ksio_x_*).
func syscallTracepointLinks() (int, error) {
	n := 0
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		l := it.Take()
		info, err := l.Info()
		l.Close()
		if err != nil {
			return 0, fmt.Errorf("link info: %w", err)
		}
		prog, err := ebpf.NewProgramFromID(info.Program)
		if err != nil {
			continue // unloaded meanwhile
		}
		pi, err := prog.Info()
		prog.Close()
		if err != nil {
			return 0, fmt.Errorf("program info: %w", err)
		}
		if strings.HasPrefix(pi.Name, "ksio_e_") || strings.HasPrefix(pi.Name, "ksio_x_") {
			n++
		}
	}
	return n, it.Err()
}

// devOf returns the device of the file system mounted at dir, as
// "major:minor", or "" when dir cannot be read.
func devOf(dir string) string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}
