package cli

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// runWithin runs kscope with args, failing the test if it has not
// returned within d (a FIFO opened without a writer blocks forever).
func runWithin(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("kscope %s: still running after %v (blocked?)", strings.Join(args, " "), d)
		return 0, "", ""
	}
}

// fileState is what a refused output must leave as it was: the entry
// itself (inode, type and mode, device number, size, content for a
// regular file) and, for a symbolic link, what it points to; or that
// there is none.
type fileState struct {
	missing   bool
	ino, rdev uint64
	mode      os.FileMode
	size      int64
	sum       [sha256.Size]byte
	target    *fileState
}

func stateOf(t *testing.T, path string, follow bool) fileState {
	t.Helper()
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileState{missing: true}
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	st := fileState{ino: sys.Ino, rdev: uint64(sys.Rdev), mode: fi.Mode(), size: fi.Size()}
	switch {
	case fi.Mode().IsRegular():
		// Never read anything else: a FIFO or a device may block.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		st.sum = sha256.Sum256(b)
	case fi.Mode()&os.ModeSymlink != 0:
		target := stateOf(t, path, true)
		st.target = &target
	}
	return st
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// hostileOutputs makes, in dir, the paths no command may write over: a
// device node (a copy of /dev/null), a FIFO with no reader and a symbolic
// link to the device. Their names end in .html so that no check of the
// extension refuses them first.
func hostileOutputs(t *testing.T, dir string) []namedPath {
	t.Helper()
	dev := filepath.Join(dir, "null.html")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(unixDev(1, 3))); err != nil {
		t.Fatalf("mknod (this test needs root): %v", err)
	}
	fifo := filepath.Join(dir, "fifo.html")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "null-link.html")
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	return []namedPath{{"device node", dev}, {"FIFO", fifo}, {"symlink to a device", link}}
}

// unixDev is the device number of major:minor, as mknod wants it.
func unixDev(major, minor uint32) uint64 {
	return uint64(minor&0xff) | uint64(major&0xfff)<<8 | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

type namedPath struct{ name, path string }

// outputCommand is a command whose output flag is under test: args with
// the output path, the flag its error must name, the paths of its own
// inputs as outputs to refuse, and a check run after each refusal.
type outputCommand struct {
	name   string
	flag   string
	args   func(out string) []string
	inputs []namedPath
	after  func(t *testing.T)
}

// TestOutputsRefused: every command that writes a file refuses a device,
// a FIFO, a symbolic link to a device, /dev/null and its own inputs (and
// anything inside an input recording) as the output, with exit 2 and one
// line naming the flag, before doing the work, and leaves them as they
// were: same inode, type, mode, size and content, no temporary file
// beside them.
func TestOutputsRefused(t *testing.T) {
	dir := t.TempDir()
	hostile := hostileOutputs(t, dir)
	for _, c := range outputCommands(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			targets := append(slices.Clone(hostile), c.inputs...)
			for _, target := range targets {
				t.Run(target.name, func(t *testing.T) { checkRefused(t, c, target.path) })
			}
			// /dev/null itself only once its copy was refused: a failure
			// must not take the machine's /dev/null with it.
			if t.Failed() {
				t.Errorf("not trying /dev/null: the command wrote over, or into, a path it must refuse")
				return
			}
			t.Run("/dev/null", func(t *testing.T) {
				checkRefused(t, c, "/dev/null")
				if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
					t.Fatalf("/dev/null is no longer a character device: %v %v", fi, err)
				}
			})
		})
	}
}

func checkRefused(t *testing.T, c outputCommand, out string) {
	t.Helper()
	before := stateOf(t, out, false)
	names := dirNames(t, filepath.Dir(out))
	code, _, stderr := runWithin(t, 60*time.Second, c.args(out)...)
	if code != ExitBadInput {
		t.Errorf("exit %d, want %d: %s", code, ExitBadInput, stderr)
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.flag+":") {
		t.Errorf("want one line naming %s, got %q", c.flag, stderr)
	}
	if after := stateOf(t, out, false); !sameState(after, before) {
		t.Errorf("%s changed: %+v, was %+v", out, after, before)
	}
	if got := dirNames(t, filepath.Dir(out)); !slices.Equal(got, names) {
		t.Errorf("%s now holds %v, held %v", filepath.Dir(out), got, names)
	}
	if c.after != nil {
		c.after(t)
	}
}

func sameState(a, b fileState) bool {
	if (a.target == nil) != (b.target == nil) {
		return false
	}
	if a.target != nil && *a.target != *b.target {
		return false
	}
	a.target, b.target = nil, nil
	return a == b
}

// outputCommands are report (of a recording and of a capture), bench
// report --html, bench run --out and lab fs -o, with inputs of their own
// in dir.
func outputCommands(t *testing.T, dir string) []outputCommand {
	rec := filepath.Join(dir, "rec")
	writeSlowLog(t, rec)
	capture := copyFile(t, realCapture, filepath.Join(dir, "x.pcapng"))
	hardLink := filepath.Join(dir, "hard.pcapng")
	if err := os.Link(capture, hardLink); err != nil {
		t.Fatal(err)
	}
	result := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	workload := filepath.Join(dir, "workload.json")
	if err := os.WriteFile(workload, []byte(`{"rate": 100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// lab fs's work dir cannot be made (it would be under a regular
	// file): should the refusal fail, the run still cannot start anything.
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	broker := countingListener(t)
	return []outputCommand{
		{name: "report DIR", flag: "-o", args: func(out string) []string { return []string{"report", rec, "-q", "-o", out} },
			inputs: []namedPath{{"a file of the recording", filepath.Join(rec, "requests.jsonl")},
				{"a new file in the recording", filepath.Join(rec, "new.html")}, {"the recording", rec}}},
		{name: "report --pcap", flag: "-o", args: func(out string) []string { return []string{"report", "--pcap", capture, "-q", "-o", out} },
			inputs: []namedPath{{"the capture", capture}, {"a hard link to the capture", hardLink}}},
		{name: "bench report --html", flag: "--html", args: func(out string) []string { return []string{"bench", "report", result, "--html", out} },
			inputs: []namedPath{{"the result", result}}},
		{name: "bench run", flag: "--out", args: func(out string) []string {
			return []string{"bench", "run", "-q", "--bootstrap", broker.addr, "--connect-timeout", "2s", "--duration", "1s", "--warmup", "0s", "--out", out}
		}, after: func(t *testing.T) {
			if n := broker.accepted.Load(); n != 0 {
				t.Errorf("bench run connected to the cluster %d times before refusing", n)
			}
		}},
		{name: "lab fs", flag: "-o", args: func(out string) []string {
			return []string{"lab", "fs", "--work-dir", filepath.Join(blocker, "work"), "--workload", workload, "-o", out}
		}, inputs: []namedPath{{"the workload", workload}}},
	}
}

// idleProcess is the pid of a process that is no JVM, for --pid: should
// a command get as far as attaching to it, nothing of the host's is
// touched.
func idleProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return strconv.Itoa(cmd.Process.Pid)
}

type listener struct {
	addr     string
	accepted atomic.Int64
}

// countingListener is a TCP port that counts the connections made to it.
func countingListener(t *testing.T) *listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &listener{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

func copyFile(t *testing.T, from, to string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestOutputIntoDirectory: an output flag naming a directory writes into
// it under the command's default name.
func TestOutputIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	writeSlowLog(t, rec)
	result := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	for _, c := range []struct {
		name, file string
		args       func(out string) []string
		prefix     string
	}{
		{"report", reportDefaultName, func(out string) []string { return []string{"report", rec, "-o", out} }, "<!DOCTYPE html>"},
		{"bench report", benchReportDefaultName, func(out string) []string { return []string{"bench", "report", result, "--html", out} }, "<!DOCTYPE html>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name)
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, c.args(out)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(out, c.file))
			if err != nil || !bytes.HasPrefix(b, []byte(c.prefix)) {
				t.Fatalf("%s: %v %.40q", c.file, err, b)
			}
			if names := dirNames(t, out); len(names) != 1 {
				t.Errorf("%s holds %v", out, names)
			}
		})
	}
}

// TestOutputDirsRefused: record --out and agent --out, directories
// kscope makes, refuse a file, a device or a FIFO in their place, before
// looking for the broker, and without blocking on the FIFO.
func TestOutputDirsRefused(t *testing.T) {
	dir := t.TempDir()
	hostile := hostileOutputs(t, dir)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := append(hostile, namedPath{"regular file", file})
	for _, cmd := range [][]string{
		// --pid and --log-dirs: nothing left to find before the
		// recording directory is made.
		{"record", "--pid", idleProcess(t), "--log-dirs", dir, "--duration", "1s", "--out"},
		{"agent", "--pid", idleProcess(t), "--listen", "127.0.0.1:0", "--no-trace", "--duration", "1s", "--out"},
		// doctor refuses an existing file or a directory that is not
		// empty before it looks for the broker.
		{"doctor", "--pid", idleProcess(t), "--duration", "5s", "--out"},
	} {
		for _, target := range targets {
			t.Run(cmd[0]+" "+target.name, func(t *testing.T) {
				before := stateOf(t, target.path, false)
				code, _, stderr := runWithin(t, 30*time.Second, append(slices.Clone(cmd), target.path)...)
				if code != ExitBadInput || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("exit %d, want %d and one line: %q", code, ExitBadInput, stderr)
				}
				if after := stateOf(t, target.path, false); !sameState(after, before) {
					t.Errorf("%s changed", target.path)
				}
			})
		}
	}
}

// TestProfileOutputsRefused: profile --flame and --out (the JVM writes
// that one) refuse a device, a FIFO and a symbolic link to a device.
func TestProfileOutputsRefused(t *testing.T) {
	dir := t.TempDir()
	jfrFile := busyJFR(t, dir)
	pid := idleProcess(t)
	for _, target := range hostileOutputs(t, dir) {
		for _, c := range []struct {
			flag string
			args []string
		}{
			{"--flame", []string{"profile", "--jfr", jfrFile, "-q", "--flame", target.path}},
			{"--out", []string{"profile", "--pid", pid, "--duration", "1s", "--out", target.path}},
		} {
			t.Run(c.flag+" "+target.name, func(t *testing.T) {
				before := stateOf(t, target.path, false)
				code, _, stderr := runWithin(t, 60*time.Second, c.args...)
				if code != ExitBadInput || !strings.Contains(stderr, c.flag+":") {
					t.Errorf("exit %d, want %d naming %s: %q", code, ExitBadInput, c.flag, stderr)
				}
				if after := stateOf(t, target.path, false); !sameState(after, before) {
					t.Errorf("%s changed", target.path)
				}
			})
		}
	}
	// The flame graph may not replace the recording it is drawn from.
	page := filepath.Join(dir, "busy.html")
	if err := os.Link(jfrFile, page); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "profile", "--jfr", jfrFile, "-q", "--flame", page); code != ExitBadInput || !strings.Contains(stderr, "input") {
		t.Errorf("--flame over the recording: exit %d: %q", code, stderr)
	}
}

// TestProfileFlameBesideRecording: --flame may go in the directory --out
// keeps the recording in, not over the recording itself.
func TestProfileFlameBesideRecording(t *testing.T) {
	dir := t.TempDir()
	o := profileOptions{out: dir, flame: filepath.Join(dir, "flame.svg")}
	if _, err := o.flameTarget(); err != nil {
		t.Errorf("--out %s --flame %s: %v", o.out, o.flame, err)
	}
	o = profileOptions{out: filepath.Join(dir, "x.html"), flame: filepath.Join(dir, "x.html")}
	if _, err := o.flameTarget(); err == nil || !strings.Contains(err.Error(), "keeps the recording") {
		t.Errorf("--out and --flame the same file: %v", err)
	}
}
