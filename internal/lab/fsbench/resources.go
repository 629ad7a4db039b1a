package fsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/output"
)

// Names inside the work dir.
const (
	stateFile = "state.json" // the resources of the run in progress
	lockFile  = "lock"       // flock'ed by the run in progress
	runDir    = "run"        // images, mount points, broker dirs
)

// Resource kinds. The first five outlive a killed process and are listed
// in the state file; the others end with the process.
const (
	kindImage  = "image"  // Path: an image file
	kindLoop   = "loop"   // Dev: a loop device, Path: its image
	kindMount  = "mount"  // Path: a mount point, Dev: its device
	kindBroker = "broker" // PID, Path: the broker's dir
	kindFrozen = "frozen" // Path: a frozen mount point
	kindDir    = "dir"    // Path: a dir removed at the end
	kindTask   = "task"   // a goroutine of ours (noise, tracer, stalls)
)

func persistent(kind string) bool {
	switch kind {
	case kindImage, kindLoop, kindMount, kindBroker, kindFrozen:
		return true
	}
	return false
}

// item is one resource on the cleanup stack.
type item struct {
	Kind string `json:"kind"`
	Path string `json:"path,omitempty"`
	Dev  string `json:"dev,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Name says what it is in messages.
	Name string `json:"name,omitempty"`
	undo func() error
}

// state is the state file: who runs, and what it holds.
type state struct {
	PID       int       `json:"pid"`
	Started   time.Time `json:"started"`
	Resources []*item   `json:"resources"`
}

// stack is the cleanup stack of a run: resources are pushed as they are
// made and undone in reverse order; the persistent ones are mirrored in
// the state file after every change, so that a run killed at any point
// leaves a list of what to remove (and Cleanup also finds what was made
// but not yet listed, by looking under the work dir).
type stack struct {
	dir     string
	started time.Time
	mu      sync.Mutex
	items   []*item
	// failed are resources whose undo failed: still listed in the state
	// file, for Cleanup.
	failed []*item
}

func newStack(dir string) *stack { return &stack{dir: dir, started: time.Now()} }

// push adds it; for a persistent kind the state file is written before
// push returns.
func (s *stack) push(it *item) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, it)
	if persistent(it.Kind) {
		return s.saveLocked()
	}
	return nil
}

// depth is a mark for unwind.
func (s *stack) depth() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// release undoes it now and removes it from the stack, wherever it is.
func (s *stack) release(it *item) error {
	err := it.undo()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.items, it); i >= 0 {
		s.items = slices.Delete(s.items, i, i+1)
	}
	if err != nil {
		s.failed = append(s.failed, it)
	}
	if persistent(it.Kind) {
		err = errors.Join(err, s.saveLocked())
	}
	return err
}

// unwind undoes every resource above mark, the newest first, and returns
// all their errors. A resource whose undo fails stays listed in the state
// file (Cleanup tries again).
func (s *stack) unwind(mark int) error {
	var errs []error
	for {
		s.mu.Lock()
		if len(s.items) <= mark {
			s.mu.Unlock()
			break
		}
		it := s.items[len(s.items)-1]
		s.items = s.items[:len(s.items)-1]
		s.mu.Unlock()
		if err := it.undo(); err != nil {
			errs = append(errs, fmt.Errorf("cleanup %s: %w", it.describe(), err))
			s.mu.Lock()
			s.failed = append(s.failed, it)
			s.mu.Unlock()
			continue
		}
		if persistent(it.Kind) {
			s.mu.Lock()
			errs = append(errs, s.saveLocked())
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func (s *stack) saveLocked() error {
	st := state{PID: os.Getpid(), Started: s.started, Resources: []*item{}}
	for _, it := range append(slices.Clone(s.failed), s.items...) {
		if persistent(it.Kind) {
			st.Resources = append(st.Resources, it)
		}
	}
	return writeState(s.dir, st)
}

func (it *item) describe() string {
	switch {
	case it.Name != "":
		return it.Kind + " " + it.Name
	case it.Dev != "":
		return it.Kind + " " + it.Dev
	case it.PID != 0:
		return it.Kind + " pid " + strconv.Itoa(it.PID)
	}
	return it.Kind + " " + it.Path
}

// writeState replaces the state file atomically.
func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// lockWorkDir takes the work dir's lock (flock, released when the process
// dies), or fails when another run holds it.
func lockWorkDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		holder := ""
		if st, err := readState(dir); err == nil && st.PID != 0 {
			holder = fmt.Sprintf(" (pid %d)", st.PID)
		}
		return nil, fmt.Errorf("another kscope lab fs%s is using %s", holder, dir)
	}
	return f, nil
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("state file %s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// Leftovers is what Cleanup removed.
type Leftovers struct {
	// PID is the process that left them, from the state file (0: none).
	PID     int      `json:"pid"`
	Thawed  []string `json:"thawed"`
	Brokers []int    `json:"brokers"`
	Mounts  []string `json:"mounts"`
	Loops   []string `json:"loops"`
	Files   []string `json:"files"`
}

// Empty reports whether nothing was left.
func (l *Leftovers) Empty() bool {
	return len(l.Thawed)+len(l.Brokers)+len(l.Mounts)+len(l.Loops)+len(l.Files) == 0
}

func (l *Leftovers) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(l.Thawed), "frozen file system(s) thawed")
	add(len(l.Brokers), "broker(s) killed")
	add(len(l.Mounts), "mount(s) removed")
	add(len(l.Loops), "loop device(s) detached")
	add(len(l.Files), "file(s) or dir(s) removed")
	if len(parts) == 0 {
		return "nothing left behind"
	}
	return strings.Join(parts, ", ")
}

// Cleanup removes what a killed `kscope lab fs` left in workDir: it
// thaws and unmounts every file system mounted under it, kills the broker
// JVMs running from it, detaches the loop devices backed by files in it
// and removes the images and run dirs. It uses the state file and also
// looks for itself (mounts under workDir, loop devices backed by files
// under it, brokers whose working dir is under it), so it also removes
// what was made in the instant before it was listed. It fails when a run
// is in progress in workDir.
func Cleanup(workDir string) (*Leftovers, error) {
	abs, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return &Leftovers{}, nil
	}
	lock, err := lockWorkDir(abs)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	return sweep(abs)
}

// sweep is Cleanup with the lock held: it undoes what the state file
// lists and what is really under dir, in the order that can succeed
// (thaw, brokers, mounts, loop devices, files), and carries on past
// failures, which it returns together.
func sweep(dir string) (*Leftovers, error) {
	s := &sweeper{dir: dir, l: &Leftovers{}}
	st, stErr := readState(dir)
	if stErr == nil {
		s.l.PID = st.PID
	} else if !errors.Is(stErr, os.ErrNotExist) {
		s.errs = append(s.errs, fmt.Errorf("%w (ignored: looking under the dir instead)", stErr))
	}
	s.st = st
	// What the state file lists, and what is really there.
	mounts, err := mountsUnder(dir)
	if err != nil {
		return s.l, err
	}
	for _, r := range st.Resources {
		if r.Kind == kindFrozen && !slices.Contains(mounts, r.Path) && isMounted(r.Path) {
			mounts = append(mounts, r.Path)
		}
	}
	// Thaw first: a broker writing to a frozen file system cannot die,
	// and a frozen one cannot be unmounted.
	for _, m := range mounts {
		if thaw(m) == nil {
			s.l.Thawed = append(s.l.Thawed, m)
		}
	}
	s.killBrokers()
	// An emulated device's FUSE mount goes last: its file backs a loop
	// device that holds it until detached.
	emulators := emulatorMounts(mounts)
	s.unmount(slices.DeleteFunc(mounts, func(m string) bool { return slices.Contains(emulators, m) }))
	s.detachLoops()
	s.unmount(emulators)
	// Files only once nothing is mounted under them.
	if left, _ := mountsUnder(dir); len(left) > 0 {
		s.errs = append(s.errs, fmt.Errorf("still mounted under %s: %s (files kept)", dir, strings.Join(left, ", ")))
	} else {
		s.removeFiles()
	}
	return s.l, errors.Join(s.errs...)
}

// sweeper is one sweep of a work dir: its state file, what it removed
// and the failures so far.
type sweeper struct {
	dir  string
	st   state
	l    *Leftovers
	errs []error
}

// killBrokers kills the brokers running from the dir and those the state
// file lists that still are, and waits for them to be gone.
func (s *sweeper) killBrokers() {
	pids := brokersUnder(s.dir)
	for _, r := range s.st.Resources {
		if r.Kind == kindBroker && !slices.Contains(pids, r.PID) && isBrokerIn(r.PID, r.Path) {
			pids = append(pids, r.PID)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !lab.WaitGone(pid, 30*time.Second) {
			s.errs = append(s.errs, fmt.Errorf("broker pid %d still alive after SIGKILL", pid))
			continue
		}
		s.l.Brokers = append(s.l.Brokers, pid)
	}
}

// unmount unmounts mounts, the deepest first.
func (s *sweeper) unmount(mounts []string) {
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := unmount(m); err != nil {
			s.errs = append(s.errs, err)
			continue
		}
		s.l.Mounts = append(s.l.Mounts, m)
	}
}

// detachLoops detaches the loop devices backed by files in the dir.
func (s *sweeper) detachLoops() {
	loops, err := loopsBackedUnder(s.dir)
	if err != nil {
		s.errs = append(s.errs, err)
	}
	for _, dev := range loops {
		if err := detachLoop(dev); err != nil {
			s.errs = append(s.errs, err)
			continue
		}
		s.l.Loops = append(s.l.Loops, dev)
	}
}

// removeFiles removes the images the state file lists in the dir, what
// is left in the run dir (an orderly run leaves it empty) and the state
// file.
func (s *sweeper) removeFiles() {
	for _, r := range s.st.Resources {
		if r.Kind == kindImage && within(s.dir, r.Path) {
			if err := os.Remove(r.Path); err == nil {
				s.l.Files = append(s.l.Files, r.Path)
			}
		}
	}
	rd := filepath.Join(s.dir, runDir)
	entries, _ := os.ReadDir(rd)
	for _, e := range entries {
		p := filepath.Join(rd, e.Name())
		if err := os.RemoveAll(p); err != nil {
			s.errs = append(s.errs, err)
		} else if !slices.Contains(s.l.Files, p) {
			s.l.Files = append(s.l.Files, p)
		}
	}
	if err := os.Remove(filepath.Join(s.dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.errs = append(s.errs, err)
	}
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// tool finds a system tool on PATH or in the sbin dirs.
func tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return name
}

// run runs a system command, bounded by a minute (it never takes the
// run's context: cleanup must work after an interrupt), and returns its
// stdout; the error carries stderr.
func run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool(args[0]), args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) ([]string, error) {
	ms, err := hostinfo.Mounts(0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if within(dir, m.MountPoint) && !slices.Contains(out, m.MountPoint) {
			out = append(out, m.MountPoint)
		}
	}
	return out, nil
}

// emulatorMounts are those of mounts that are slow-device emulators'
// FUSE file systems.
func emulatorMounts(mounts []string) []string {
	ms, err := hostinfo.Mounts(0)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range ms {
		if isEmulatorMount(m.FSType) && slices.Contains(mounts, m.MountPoint) {
			out = append(out, m.MountPoint)
		}
	}
	return out
}

func isMounted(path string) bool {
	m, err := mountsUnder(path)
	return err == nil && slices.Contains(m, path)
}

// loopsBackedUnder lists the loop devices whose backing file is in dir
// (/sys/block/loopN/loop/backing_file; a deleted file shows as
// "PATH (deleted)").
func loopsBackedUnder(dir string) ([]string, error) {
	files, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // detached meanwhile
		}
		back := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if within(dir, back) {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return out, nil
}

// loopBackingFile is the backing file of a loop device, "" when detached.
func loopBackingFile(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}

// brokersUnder lists the broker JVMs whose working dir is in dir (the
// lab runs a broker in its Dir).
func brokersUnder(dir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !within(dir, strings.TrimSuffix(cwd, " (deleted)")) {
			continue
		}
		if lab.BrokerAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// isBrokerIn reports whether pid is a broker JVM running in dir.
func isBrokerIn(pid int, dir string) bool {
	if !lab.BrokerAlive(pid) {
		return false
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return err == nil && within(dir, strings.TrimSuffix(cwd, " (deleted)"))
}

// thaw runs fsfreeze -u; it fails when the file system was not frozen.
func thaw(mnt string) error {
	_, err := run("fsfreeze", "-u", mnt)
	return err
}

// unmount unmounts mnt, retrying for a while when it is busy (a process
// that just died may still hold it), then removes the mount point.
func unmount(mnt string) error {
	var err error
	for i := 0; i < 50; i++ {
		if !isMounted(mnt) {
			break
		}
		if _, err = run("umount", mnt); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if isMounted(mnt) {
		return fmt.Errorf("unmount %s: %w", mnt, err)
	}
	_ = os.Remove(mnt)
	return nil
}

// detachLoop detaches a loop device (losetup -d).
func detachLoop(dev string) error {
	var err error
	for i := 0; i < 25; i++ {
		if loopBackingFile(dev) == "" {
			return nil
		}
		if _, err = run("losetup", "-d", dev); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// logf writes a progress line.
func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		// Paths and tools' errors go into the lines: escaped.
		fmt.Fprintf(w, "lab fs: %s\n", output.Escape(fmt.Sprintf(format, args...)))
	}
}
