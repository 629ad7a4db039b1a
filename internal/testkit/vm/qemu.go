package vm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/checkout"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

// bootSpec is what boot hands qemu.
type bootSpec struct {
	kernel, initrd, cmdline string
	disks                   []image
	memoryMB                int
	token                   string
}

// kvmUsable reports whether KVM can run the VM: the CPU must have
// hardware virtualization (vmx or svm in /proc/cpuinfo) and /dev/kvm make a
// VM. /dev/kvm alone is not enough: in a VM without nested virtualization
// it may make VMs that qemu then cannot run (qemu aborts on an MSR, or the
// guest crawls).
func kvmUsable() bool {
	if !cpuHasVirt() {
		return false
	}
	fd, err := unix.Open("/dev/kvm", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	const kvmCreateVM = 0xAE01 // _IO(KVMIO, 0x01)
	vm, err := unix.IoctlRetInt(fd, kvmCreateVM)
	if err != nil {
		return false
	}
	unix.Close(vm)
	return true
}

// cpuHasVirt reports whether /proc/cpuinfo lists vmx or svm.
func cpuHasVirt() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, flags, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			for _, f := range strings.Fields(flags) {
				if f == "vmx" || f == "svm" {
					return true
				}
			}
			return false
		}
	}
	return false
}

// qemuArgs is qemu-system-x86_64's command line for s.
func qemuArgs(s bootSpec, accel string) []string {
	args := []string{
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-machine", "pc", "-accel", accel, "-cpu", "max", "-smp", "1",
		"-m", strconv.Itoa(s.memoryMB),
		"-kernel", s.kernel, "-initrd", s.initrd, "-append", s.cmdline,
		"-serial", "stdio", "-monitor", "none",
	}
	for i, d := range s.disks {
		id := fmt.Sprintf("d%d", i)
		args = append(args,
			// cache=unsafe: the images are thrown away after the boot.
			"-drive", fmt.Sprintf("file=%s,if=none,id=%s,format=raw,cache=unsafe", d.path, id),
			"-device", fmt.Sprintf("virtio-blk-pci,drive=%s,serial=%s", id, d.serial))
	}
	return args
}

// console collects qemu's serial output and notices the exit marker.
type console struct {
	mu     sync.Mutex
	buf    []byte
	marker string
	seen   chan struct{} // closed when the marker has been seen
	once   sync.Once
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	from := max(0, len(c.buf)-len(c.marker))
	c.buf = append(c.buf, p...)
	found := bytes.Contains(c.buf[from:], []byte(c.marker))
	c.mu.Unlock()
	if found {
		c.once.Do(func() { close(c.seen) })
	}
	return len(p), nil
}

// escapes are the terminal control sequences SeaBIOS writes (reset, clear
// screen, wrap off).
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_a-z])`)

// String is the output so far, with "\n" line ends and without terminal
// control sequences.
func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return escapes.ReplaceAllString(strings.ReplaceAll(string(c.buf), "\r\n", "\n"), "")
}

// boot runs qemu for s until it ends (or ctx does) and reads the guest's
// exit code from the console.
func boot(ctx context.Context, s bootSpec) (Result, error) {
	res := Result{Accel: "tcg"}
	if kvmUsable() {
		res.Accel = "kvm"
	}
	qemu, err := tool("qemu-system-x86_64")
	if err != nil {
		return res, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("vm: %w", err)
	}
	var stderr bytes.Buffer
	errR, errW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return res, fmt.Errorf("vm: %w", err)
	}
	cmd := exec.Command(qemu, qemuArgs(s, res.Accel)...)
	cmd.Stdout, cmd.Stderr = pw, errW
	exited, err := lab.StartChild(cmd) // never outlives the test binary
	pw.Close()
	errW.Close()
	if err != nil {
		pr.Close()
		errR.Close()
		return res, fmt.Errorf("vm: %w", err)
	}
	con := &console{marker: prefixOf(s.token), seen: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); defer pr.Close(); _, _ = io.Copy(con, pr) }()
	go func() { defer readers.Done(); defer errR.Close(); _, _ = io.Copy(&stderr, errR) }()

	var (
		waitErr error
		why     string
		seen    = con.seen
		grace   <-chan time.Time
	)
wait:
	for {
		select {
		case waitErr = <-exited:
			break wait
		case <-seen:
			seen, grace = nil, time.After(markerGrace)
		case <-grace:
			why = fmt.Sprintf("qemu still running %v after the guest reported its exit code; killed", markerGrace)
			_ = cmd.Process.Kill()
			waitErr = <-exited
			break wait
		case <-ctx.Done():
			why = fmt.Sprintf("%v; qemu killed", context.Cause(ctx))
			_ = cmd.Process.Kill()
			waitErr = <-exited
			break wait
		}
	}
	readers.Wait()
	res.Output = con.String()
	code, ok := guest.ParseMarker(res.Output, s.token)
	if ok {
		res.ExitCode = code
		return res, nil
	}
	if why == "" {
		why = "qemu ended"
		if waitErr != nil {
			why = fmt.Sprintf("qemu: %v", waitErr)
		}
	}
	tail := res.Output
	// /init ended without guest.Exit: what it printed last comes before
	// the kernel's panic and its stack trace.
	const initDied = "Kernel panic - not syncing: Attempted to kill init!"
	if i := strings.Index(tail, initDied); i >= 0 {
		why = "/init exited without guest.Exit, " + why
		if j := strings.IndexByte(tail[i:], '\n'); j >= 0 {
			tail = tail[:i+j]
		}
	}
	msg := fmt.Sprintf("vm: the guest reported no exit code (%s, accel %s)", why, res.Accel)
	if e := strings.TrimSpace(stderr.String()); e != "" {
		msg += "\nqemu stderr:\n" + checkout.LastLines(e, 20)
	}
	return res, fmt.Errorf("%s\nconsole tail:\n%s", msg, checkout.LastLines(tail, 40))
}

// prefixOf is the part of the exit marker that does not depend on the
// code.
func prefixOf(token string) string {
	return strings.TrimSuffix(guest.Marker(token, 0), "0")
}
