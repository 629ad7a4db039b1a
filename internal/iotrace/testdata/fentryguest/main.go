// Command fentryguest is the /init of the VM that tests iotrace's
// function-level timing (TestFunctionsInVM) on a kernel that allows
// fentry: it writes known amounts to a segment file on ext4 and on XFS
// while tracing itself with iotrace.FunctionsOn, checks every write it
// made against the events and histograms, checks that no program is left
// after Close, prints what it found and powers the VM off with exit code
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

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/lab/vm/guest"
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

func run() (failures []string, err error) {
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
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
	tr, err := iotrace.Open(iotrace.Config{PID: os.Getpid(), LogDirs: dirs, Functions: iotrace.FunctionsOn})
	if err != nil {
		return nil, err
	}
	mode := tr.Mode()
	fmt.Println("fentryguest: mode:", mode)
	for _, m := range mounts {
		if !strings.Contains(strings.Join(mode.Functions, ","), m.fn) {
			fail("mode does not time %s: %s", m.fn, mode)
		}
	}
	ids, err := tr.ProgramIDs()
	if err != nil {
		return nil, err
	}
	fmt.Printf("fentryguest: %d programs loaded\n", len(ids))

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
	buf := make([]byte, writeSize)
	for i := range writes {
		for _, f := range files {
			// Alternate write(2) and pwrite64(2), as Kafka's appends
			// and its recovery rewrites do.
			if i%2 == 0 {
				_, err = unix.Write(int(f.Fd()), buf)
			} else {
				_, err = unix.Pwrite(int(f.Fd()), buf, int64(i*writeSize))
				if err == nil {
					_, err = unix.Seek(int(f.Fd()), int64((i+1)*writeSize), 0)
				}
			}
			if err != nil {
				return nil, err
			}
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

	// Per file system: the system calls and the function calls inside
	// them, each writes times, writes*writeSize bytes, on orders-0.
	for _, m := range mounts {
		var sys, fn []*event.Write
		for _, w := range got {
			if !strings.HasPrefix(w.File, "orders-0/") || w.Topic != "orders" || w.Partition != 0 {
				fail("event on %q (topic %q partition %d)", w.File, w.Topic, w.Partition)
				continue
			}
			switch {
			case w.Op == m.fn && w.Dev != "" && onMount(w, m.dir):
				fn = append(fn, w)
			case (w.Op == "write" || w.Op == "pwrite64") && onMount(w, m.dir):
				sys = append(sys, w)
			}
		}
		check := func(what string, ws []*event.Write) {
			var bytes int64
			for _, w := range ws {
				bytes += w.Bytes
			}
			fmt.Printf("fentryguest: %s %s: %d events, %d bytes\n", m.dir, what, len(ws), bytes)
			if len(ws) != writes || bytes != writes*writeSize {
				fail("%s %s: %d events and %d bytes, want %d and %d", m.dir, what, len(ws), bytes, writes, writes*writeSize)
			}
		}
		check("system calls", sys)
		check(m.fn, fn)
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
		var counted uint64
		for _, s := range sums {
			if s.Op == m.fn && s.Topic == "orders" && s.Partition == 0 {
				counted += s.Count
			}
		}
		if counted != writes {
			fail("%s: histograms count %d calls, want %d", m.fn, counted, writes)
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

// onMount reports whether w's device is the file system mounted at dir.
func onMount(w *event.Write, dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	return w.Dev == fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}
