package lab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartChild starts cmd so that the kernel SIGKILLs it when this process
// dies (even by SIGKILL or a test timeout), and returns a channel that
// receives cmd.Wait's result. Don't call cmd.Wait yourself; use
// *os.File (not io.Writer) stdout/stderr so Wait has no copying to do.
func StartChild(cmd *exec.Cmd) (<-chan error, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the forking *thread* exits, and Go ends a
		// thread whose goroutine exits while locked to it (network
		// namespace code does that on purpose). So fork from a thread
		// locked here and keep it alive in Wait for the child's lifetime;
		// the thread ends with this goroutine, after the child.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("lab: start %s: %w", cmd.Path, err)
	}
	return done, nil
}

// brokerMainClass identifies a broker JVM in /proc/PID/cmdline.
const brokerMainClass = "kafka.Kafka"

// BrokerAlive reports whether pid is a live (not zombie) broker JVM. The
// cmdline check guards against a recycled pid after the broker died.
func BrokerAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	if stat, err := os.ReadFile(proc + "/stat"); err == nil {
		// Format: "pid (comm) S ..."; comm may contain spaces and ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if arg == brokerMainClass {
			return true
		}
	}
	return false
}

// WaitGone polls until pid is no longer a live broker or d elapses; it
// reports whether the broker is gone.
func WaitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !BrokerAlive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tailFile returns up to the last n lines of path, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
