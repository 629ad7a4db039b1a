// Command guest is the /init of bench/syscallcost-vm's VM: on a kernel
// that allows BPF trampolines, it measures what iotrace's timing of the
// write system calls costs each system call, with the programs at the
// syscalls tracepoints and at fentry on the system call functions, against
// nothing attached.
//
// A worker (this binary again, as a child) makes CALLS system calls of
// one kind on one thread and exits; that thread's CPU time over CALLS is
// one measurement. Kinds: reads (1-byte reads of /dev/zero: any
// system call that is not a write) and writes (1-byte writes to
// /dev/null) by a process that is not traced, and the same by the traced
// process (the tracer's target is the worker): its writes to /dev/null
// are looked up and dropped, as a broker's socket writes are. Each round
// runs every kind under every variant, the variants in a rotating order.
// It prints one line per measurement:
//
//	result ROUND VARIANT KIND NS_PER_CALL
//
// and exits 0, or 2 when it could not run.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

const (
	readyEnv  = "SYSCALLCOST_SET_UP"
	workerEnv = "SYSCALLCOST_WORKER" // reads or writes
)

func main() {
	if kind := os.Getenv(workerEnv); kind != "" {
		os.Exit(work(kind))
	}
	if os.Getenv(readyEnv) == "" {
		if err := guest.Setup(); err != nil {
			fmt.Println("syscallcost: setup:", err)
			guest.Exit(2)
		}
		// cilium/ebpf probes the kernel in its init, which ran before
		// /proc was mounted: start again (still PID 1).
		err := unix.Exec("/init", os.Args, append(os.Environ(), readyEnv+"=1"))
		fmt.Println("syscallcost: exec:", err)
		guest.Exit(2)
	}
	rounds, calls := 5, 200000
	if len(os.Args) > 2 {
		rounds, _ = strconv.Atoi(os.Args[1])
		calls, _ = strconv.Atoi(os.Args[2])
	}
	if err := run(rounds, calls); err != nil {
		fmt.Println("syscallcost:", err)
		guest.Exit(2)
	}
	guest.Exit(0)
}

// work is the worker: it waits for a byte on stdin (the tracer is then
// attached), makes the calls on one locked thread and prints that
// thread's CPU time per call in nanoseconds (CLOCK_THREAD_CPUTIME_ID
// around the loop: the Go runtime's start is not in it).
func work(kind string) int {
	calls, err := strconv.Atoi(os.Getenv("SYSCALLCOST_CALLS"))
	if err != nil || calls <= 0 {
		return 2
	}
	runtime.LockOSThread()
	one := make([]byte, 1)
	if _, err := os.Stdin.Read(one); err != nil {
		return 2
	}
	path, flags := "/dev/zero", unix.O_RDONLY
	if kind == "writes" {
		path, flags = "/dev/null", unix.O_WRONLY
	}
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return 2
	}
	var start, end unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &start); err != nil {
		return 2
	}
	for range calls {
		if kind == "writes" {
			_, err = unix.Write(fd, one)
		} else {
			_, err = unix.Read(fd, one)
		}
		if err != nil {
			return 2
		}
	}
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &end); err != nil {
		return 2
	}
	fmt.Printf("%.2f\n", float64(end.Nano()-start.Nano())/float64(calls))
	return 0
}

var variants = []struct {
	name  string
	probe iotrace.SyscallProbe
	trace bool
}{
	{"none", 0, false},
	{"tracepoints", iotrace.SyscallTracepoints, true},
	{"fentry", iotrace.SyscallsAuto, true},
}

func run(rounds, calls int) error {
	for r := range rounds {
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			for _, kind := range []string{"reads", "writes", "t_reads", "t_writes"} {
				ns, err := measure(v.probe, v.trace, kind, calls)
				if err != nil {
					return fmt.Errorf("round %d %s %s: %w", r+1, v.name, kind, err)
				}
				fmt.Printf("result %d %s %s %.1f\n", r+1, v.name, kind, ns)
			}
		}
	}
	return nil
}

// measure runs a worker of kind (t_ kinds: the traced process) with the
// write timing attached per probe when trace is set, and returns its CPU
// time per call in nanoseconds.
func measure(probe iotrace.SyscallProbe, trace bool, kind string, calls int) (float64, error) {
	traced := len(kind) > 2 && kind[:2] == "t_"
	if traced {
		kind = kind[2:]
	}
	cmd := exec.Command("/init")
	cmd.Env = append(os.Environ(), workerEnv+"="+kind, "SYSCALLCOST_CALLS="+strconv.Itoa(calls))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Process.Kill()
	if trace {
		pid := os.Getpid() // the guest itself: the worker is not traced
		if traced {
			pid = cmd.Process.Pid
		}
		tr, err := iotrace.Open(iotrace.Config{PID: pid, LogDirs: []string{"/tmp"}, MinLatency: time.Hour, SyscallProbes: probe})
		if err != nil {
			return 0, err
		}
		defer tr.Close()
		if m := tr.Mode(); m.SyscallFentry != (probe == iotrace.SyscallsAuto) {
			return 0, fmt.Errorf("mode %s", m)
		}
	}
	if _, err := stdin.Write([]byte{1}); err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	return strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
}
