package jfr

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ProfileOptions say what StartProfile records.
type ProfileOptions struct {
	// SamplePeriod is the period of jdk.ExecutionSample (threads running
	// Java code) and jdk.NativeMethodSample (threads in native code, such
	// as zstd-jni); default 10 ms.
	SamplePeriod time.Duration
	// LockThreshold is the threshold of jdk.JavaMonitorEnter,
	// jdk.JavaMonitorWait and jdk.ThreadPark; default 1 ms.
	LockThreshold time.Duration
}

// DefaultSamplePeriod and DefaultLockThreshold are ProfileOptions'
// defaults. 10 ms is the JDK's own "profile" setting for execution
// samples.
const (
	DefaultSamplePeriod  = 10 * time.Millisecond
	DefaultLockThreshold = time.Millisecond
)

func (o ProfileOptions) withDefaults() ProfileOptions {
	if o.SamplePeriod <= 0 {
		o.SamplePeriod = DefaultSamplePeriod
	}
	if o.LockThreshold <= 0 {
		o.LockThreshold = DefaultLockThreshold
	}
	return o
}

// ProfileSettings returns the .jfc settings StartProfile records with:
//
//   - jdk.ExecutionSample and jdk.NativeMethodSample every SamplePeriod,
//     with stack traces: where the broker's threads spend CPU;
//   - jdk.JavaMonitorEnter, jdk.JavaMonitorWait and jdk.ThreadPark at or
//     above LockThreshold, with stack traces: lock contention;
//   - jdk.CPULoad and jdk.ThreadCPULoad every second: how busy the JVM
//     and each thread was, to weigh the samples;
//   - jdk.GarbageCollection: GC pauses (GC threads are not Java threads,
//     so JFR never samples them);
//   - jdk.BooleanFlag at each chunk's start: the JVM's flags, such as
//     UseAESIntrinsics, for the hints;
//   - jdk.ActiveSetting: the settings in effect, so that a reader knows
//     the sampling periods.
//
// The same file works with -XX:StartFlightRecording=settings=FILE.
func ProfileSettings(o ProfileOptions) []byte {
	o = o.withDefaults()
	period := func(d time.Duration) string {
		return strconv.FormatInt(max(1, d.Milliseconds()), 10) + " ms"
	}
	threshold := strconv.FormatInt(o.LockThreshold.Nanoseconds(), 10) + " ns"
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="kscope profile" description="kscope profile: CPU samples every %v, lock waits of at least %v">
`, o.SamplePeriod, o.LockThreshold)
	event := func(name string, settings ...string) {
		fmt.Fprintf(&b, "  <event name=%q>\n    <setting name=\"enabled\">true</setting>\n", name)
		for i := 0; i+1 < len(settings); i += 2 {
			fmt.Fprintf(&b, "    <setting name=%q>%s</setting>\n", settings[i], settings[i+1])
		}
		b.WriteString("  </event>\n")
	}
	event("jdk.ExecutionSample", "period", period(o.SamplePeriod))
	event("jdk.NativeMethodSample", "period", period(o.SamplePeriod))
	for _, e := range []string{"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark"} {
		event(e, "stackTrace", "true", "threshold", threshold)
	}
	event("jdk.CPULoad", "period", "1000 ms")
	event("jdk.ThreadCPULoad", "period", "1000 ms")
	event("jdk.GarbageCollection", "threshold", "0 ms")
	event("jdk.BooleanFlag", "period", "beginChunk")
	event("jdk.ActiveSetting")
	b.WriteString("</configuration>\n")
	return []byte(b.String())
}

// StartProfile starts a flight recording with ProfileSettings on the JVM
// pid, into path; Recording.Stop ends it. Names and paths follow Start's
// rules.
func StartProfile(ctx context.Context, pid int, name, path string, o ProfileOptions) (*Recording, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("jfr: start profile: bad pid %d", pid)
	}
	if !validName.MatchString(name) || numeric.MatchString(name) {
		return nil, fmt.Errorf("jfr: start profile: bad recording name %q (letters, digits, '.', '_', '-'; not all digits)", name)
	}
	if o.SamplePeriod < 0 || o.LockThreshold < 0 {
		return nil, fmt.Errorf("jfr: start profile: negative period %v or threshold %v", o.SamplePeriod, o.LockThreshold)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("jfr: start profile: %w", err)
	}
	if strings.ContainsAny(abs, " \t\n\r\"'") {
		return nil, fmt.Errorf("jfr: start profile: path %q has a space or quote, which jcmd cannot pass", abs)
	}
	dir, err := os.MkdirTemp("", "kscope-jfr-")
	if err != nil {
		return nil, fmt.Errorf("jfr: start profile: %w", err)
	}
	defer os.RemoveAll(dir)
	// The JVM may run as another user: let it read the settings.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jfr: start profile: %w", err)
	}
	jfc := filepath.Join(dir, "kscope-profile.jfc")
	if err := os.WriteFile(jfc, ProfileSettings(o), 0o644); err != nil {
		return nil, fmt.Errorf("jfr: start profile: %w", err)
	}
	out, err := jcmd(ctx, pid, "JFR.start", "name="+name, "settings="+jfc, "filename="+abs, "dumponexit=true")
	if err != nil {
		return nil, fmt.Errorf("jfr: start profile %s on pid %d: %w", name, pid, err)
	}
	m := started.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("jfr: start profile %s on pid %d: %s", name, pid, message(out))
	}
	id, _ := strconv.Atoi(m[1])
	return &Recording{PID: pid, Name: name, Path: abs, ID: id}, nil
}

var (
	flagLine = regexp.MustCompile(`^\s*\S+\s+([A-Za-z0-9_]+)\s+:?=\s*(\S*)`)
	xxFlag   = regexp.MustCompile(`^-XX:([+-]?)([A-Za-z0-9_]+)(?:=(.*))?$`)
)

// VMFlags asks the JVM pid for its flags with jcmd: VM.flags -all (the
// product flags, such as UseAES) and, from VM.command_line, the -XX flags
// it was started with, which include diagnostic ones (such as
// -XX:-UseAESIntrinsics) that VM.flags leaves out unless unlocked.
// Booleans are "true" or "false".
func VMFlags(ctx context.Context, pid int) (map[string]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("jfr: flags: bad pid %d", pid)
	}
	out, err := jcmd(ctx, pid, "VM.flags", "-all")
	if err != nil {
		return nil, fmt.Errorf("jfr: flags of pid %d: %w", pid, err)
	}
	flags := parseVMFlags(out)
	if len(flags) == 0 {
		return nil, fmt.Errorf("jfr: flags of pid %d: %s", pid, message(out))
	}
	if cl, err := jcmd(ctx, pid, "VM.command_line"); err == nil {
		for name, v := range parseCommandLineFlags(cl) {
			flags[name] = v
		}
	}
	return flags, nil
}

// parseVMFlags reads `jcmd PID VM.flags -all`: "bool UseAES = true {product} {default}".
func parseVMFlags(out string) map[string]string {
	flags := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil {
			v := m[2]
			if strings.HasPrefix(v, "{") { // an empty value, then the kind
				v = ""
			}
			flags[m[1]] = v
		}
	}
	return flags
}

// parseCommandLineFlags reads the -XX flags of `jcmd PID VM.command_line`
// ("jvm_args: -Xmx1g -XX:-UseAESIntrinsics").
func parseCommandLineFlags(out string) map[string]string {
	flags := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		args, ok := strings.CutPrefix(strings.TrimSpace(l), "jvm_args:")
		if !ok {
			continue
		}
		for _, a := range strings.Fields(args) {
			m := xxFlag.FindStringSubmatch(a)
			if m == nil {
				continue
			}
			switch {
			case m[1] == "+":
				flags[m[2]] = "true"
			case m[1] == "-":
				flags[m[2]] = "false"
			case m[3] != "":
				flags[m[2]] = m[3]
			}
		}
	}
	return flags
}
