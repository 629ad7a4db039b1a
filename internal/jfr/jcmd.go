package jfr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/hostinfo"
)

// Recording is a flight recording that Start started on a running JVM.
type Recording struct {
	PID  int
	Name string
	Path string // absolute; where the JVM writes the recording
	// ID is the JVM's number for the recording ("Started recording 2"),
	// which Stop uses: JFR allows several recordings of the same name.
	ID      int
	stopped bool
}

// Settings returns the JFR settings (a .jfc file) Start records with:
// jdk.JavaMonitorEnter and jdk.ThreadPark events at or above threshold,
// without stack traces; and every safepoint and GC pause, for ReadPauses
// (pause.go): jdk.SafepointBegin, jdk.SafepointEnd,
// jdk.SafepointStateSynchronization, jdk.ExecuteVMOperation,
// jdk.GCPhasePause, jdk.GarbageCollection and jdk.G1GarbageCollection,
// all without threshold or stack traces (a few events per safepoint;
// about one safepoint a second on an idle broker, a few a second under
// 100 MB/s of produce load). Nothing else. -XX:StartFlightRecording=settings=FILE takes the
// same file.
func Settings(threshold time.Duration) []byte {
	b := fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="kscope" description="kscope: monitor waits of at least %v, safepoints and GC pauses">
  <event name="jdk.JavaMonitorEnter">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">false</setting>
    <setting name="threshold">%d ns</setting>
  </event>
  <event name="jdk.ThreadPark">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">false</setting>
    <setting name="threshold">%d ns</setting>
  </event>
`, threshold, threshold.Nanoseconds(), threshold.Nanoseconds())
	for _, e := range pauseEvents {
		b = fmt.Appendf(b, `  <event name=%q>
    <setting name="enabled">true</setting>
    <setting name="stackTrace">false</setting>
    <setting name="threshold">0 ns</setting>
  </event>
`, e)
	}
	return append(b, "</configuration>\n"...)
}

var (
	validName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	numeric   = regexp.MustCompile(`^[0-9]+$`)
	started   = regexp.MustCompile(`Started recording ([0-9]+)`)
)

// Start starts a flight recording named name on the JVM pid that records
// jdk.JavaMonitorEnter events of monitorThreshold or longer (0: every
// contended monitor entry), and the safepoints and GC pauses of Settings,
// into path, which Stop completes. It runs
//
//	jcmd PID JFR.start name=NAME settings=JFC filename=PATH dumponexit=true
//
// with JFC a file of Settings in a temporary directory (the JVM reads it
// during the command; it is removed afterwards). A .jfc file works on
// every JDK since 11; JDK 17 also takes jdk.JavaMonitorEnter#threshold=1ms
// on the command line, JDK 11 does not. The JVM creates path at once (so a
// path it cannot write fails here) and, with dumponexit, writes the
// recording there if it exits before Stop.
//
// jcmd must run as the JVM's user (or root), and path must be writable by
// the JVM. Names are letters, digits, '.', '_' and '-', not all digits (JFR
// refuses numeric names); paths may not contain spaces or quotes (jcmd
// passes its arguments to the JVM as one space-separated line).
func Start(ctx context.Context, pid int, name, path string, monitorThreshold time.Duration) (*Recording, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("jfr: start: bad pid %d", pid)
	}
	if !validName.MatchString(name) || numeric.MatchString(name) {
		return nil, fmt.Errorf("jfr: start: bad recording name %q (letters, digits, '.', '_', '-'; not all digits)", name)
	}
	if monitorThreshold < 0 {
		return nil, fmt.Errorf("jfr: start: negative threshold %v", monitorThreshold)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("jfr: start: %w", err)
	}
	if strings.ContainsAny(abs, " \t\n\r\"'") {
		return nil, fmt.Errorf("jfr: start: path %q has a space or quote, which jcmd cannot pass", abs)
	}
	dir, err := os.MkdirTemp("", "kscope-jfr-")
	if err != nil {
		return nil, fmt.Errorf("jfr: start: %w", err)
	}
	defer os.RemoveAll(dir)
	// The JVM may run as another user: let it read the settings.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jfr: start: %w", err)
	}
	jfc := filepath.Join(dir, "kscope.jfc")
	if err := os.WriteFile(jfc, Settings(monitorThreshold), 0o644); err != nil {
		return nil, fmt.Errorf("jfr: start: %w", err)
	}
	out, err := jcmd(ctx, pid, "JFR.start", "name="+name, "settings="+jfc, "filename="+abs, "dumponexit=true")
	if err != nil {
		return nil, fmt.Errorf("jfr: start recording %s on pid %d: %w", name, pid, err)
	}
	m := started.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("jfr: start recording %s on pid %d: %s", name, pid, message(out))
	}
	id, _ := strconv.Atoi(m[1])
	return &Recording{PID: pid, Name: name, Path: abs, ID: id}, nil
}

// Stop stops the recording and has the JVM write it to r.Path:
//
//	jcmd PID JFR.stop name=ID filename=PATH
//
// It returns once the file is there.
func (r *Recording) Stop(ctx context.Context) error {
	if r.stopped {
		return fmt.Errorf("jfr: recording %s on pid %d already stopped", r.Name, r.PID)
	}
	out, err := jcmd(ctx, r.PID, "JFR.stop", "name="+strconv.Itoa(r.ID), "filename="+r.Path)
	if err != nil {
		if _, serr := os.Stat(fmt.Sprintf("/proc/%d", r.PID)); errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("jfr: stop recording %s: pid %d has exited (a JVM that exits normally writes the recording to %s itself)", r.Name, r.PID, r.Path)
		}
		return fmt.Errorf("jfr: stop recording %s on pid %d: %w", r.Name, r.PID, err)
	}
	if !strings.Contains(out, "Stopped recording") {
		return fmt.Errorf("jfr: stop recording %s on pid %d: %s", r.Name, r.PID, message(out))
	}
	r.stopped = true
	fi, err := os.Stat(r.Path)
	if err != nil {
		return fmt.Errorf("jfr: stop recording %s on pid %d: %w", r.Name, r.PID, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() < headerSize {
		return fmt.Errorf("jfr: stop recording %s on pid %d: %s holds no recording (%d bytes)", r.Name, r.PID, r.Path, fi.Size())
	}
	return nil
}

// jcmd runs jcmd PID ARGS... and returns its output. jcmd exits 0 when
// the command itself fails (it prints why), so callers look for the
// success message; an error here means jcmd could not reach the JVM.
func jcmd(ctx context.Context, pid int, args ...string) (string, error) {
	bin, err := jcmdPath()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{strconv.Itoa(pid)}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("jcmd: %w", ctx.Err())
	}
	if err != nil {
		return "", fmt.Errorf("jcmd: %v: %s", err, message(string(out)))
	}
	return string(out), nil
}

// jcmdPath finds jcmd next to $JAVA_HOME/bin/java, else on PATH.
func jcmdPath() (string, error) { return hostinfo.JDKTool("jcmd") }

// message is the gist of jcmd's output on one line: without the "PID:"
// line jcmd starts with, or for an exception, its first line.
func message(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "at ") || numericColon.MatchString(l) {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "no output"
	}
	return oneLine(strings.Join(lines, " "))
}

var numericColon = regexp.MustCompile(`^[0-9]+:$`)
