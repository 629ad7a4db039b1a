package jvmlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/jfr"
)

// Session is a log output that Start added to a running JVM.
type Session struct {
	PID  int
	Path string // absolute; the file the JVM writes
	// output is the output's name as VM.log list shows it, "file=PATH".
	output string
	// before are the names of the outputs the JVM had before Start (the
	// operator's), which Stop checks are still there.
	before  []string
	stopped bool
}

// What, Decorators and OutputOptions are what Start configures: the gc
// and safepoint tag sets at info level, decorated with the wall clock
// (ms) and the monotonic clock (ns) so that ReadPauses can place each line
// to a few µs, and no rotation (the file is one file from Start to Stop;
// it grows by about 200 bytes a safepoint).
const (
	What          = "gc=info,safepoint=info"
	Decorators    = "utctime,timenanos,level,tags"
	OutputOptions = "filecount=0"
)

// Start adds an output to the running JVM pid that logs the gc and
// safepoint tags at info level into path:
//
//	jcmd PID VM.log output=file=PATH output_options=filecount=0 what=gc=info,safepoint=info decorators=utctime,timenanos,level,tags
//
// The JVM creates path, so its directory must be writable by the JVM's
// user; path must not exist yet (the JVM would append to it), and may not
// contain spaces, quotes, commas or '%' (jcmd passes one space-separated
// line; the JVM expands %p and %t). jcmd runs as the JVM's user or root.
// jcmd exits 0 whatever happens, so Start checks with VM.log list that
// the output is there, with what it asked for.
func Start(ctx context.Context, pid int, path string) (*Session, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("jvmlog: start: bad pid %d", pid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("jvmlog: start: %w", err)
	}
	if strings.ContainsAny(abs, " \t\n\r\"',%#=\\") || strings.ContainsFunc(abs, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, fmt.Errorf("jvmlog: start: path %q has a character jcmd VM.log cannot take (space, quote, comma, %%, #, =, \\)", abs)
	}
	if _, err := os.Lstat(abs); err == nil {
		return nil, fmt.Errorf("jvmlog: start: %s already exists (the JVM would append to it)", abs)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("jvmlog: start: %w", err)
	}
	s := &Session{PID: pid, Path: abs, output: "file=" + abs}
	outs, err := s.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("jvmlog: start on pid %d: %w", pid, err)
	}
	for _, o := range outs {
		if o.name == s.output {
			return nil, fmt.Errorf("jvmlog: start on pid %d: the JVM already has an output %s (#%d)", pid, o.name, o.index)
		}
		s.before = append(s.before, o.name)
	}
	out, err := jfr.Jcmd(ctx, pid, "VM.log", "output="+s.output, "output_options="+OutputOptions, "what="+What, "decorators="+Decorators)
	if err != nil {
		return nil, fmt.Errorf("jvmlog: start on pid %d: %w", pid, err)
	}
	outs, err = s.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("jvmlog: start on pid %d: %w", pid, err)
	}
	o, ok := find(outs, s.output)
	if !ok {
		return nil, fmt.Errorf("jvmlog: start on pid %d: no output %s after VM.log: %s", pid, s.output, jfr.JcmdMessage(out))
	}
	if !strings.Contains(o.config, "gc=info") || !strings.Contains(o.config, "safepoint=info") || !strings.Contains(o.config, Decorators) {
		// Not what was asked for: take it away again.
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("jvmlog: start on pid %d: output %s is configured %q, not %s %s", pid, s.output, o.config, What, Decorators)
	}
	if _, err := os.Stat(abs); err != nil {
		_ = s.Stop(ctx)
		return nil, fmt.Errorf("jvmlog: start on pid %d: the JVM logs to %s but it is not to be seen here: %w", pid, abs, err)
	}
	return s, nil
}

// Stop removes the output Start added, and no other:
//
//	jcmd PID VM.log output=file=PATH what=all=off
//
// (the JVM deletes a file output that logs nothing, closing the file).
// `VM.log disable` would remove the operator's outputs too, and
// `VM.log output=#N` may name another output once outputs come and go.
// Stop then checks with VM.log list that the output is gone and that every
// output the JVM had before Start is still there.
func (s *Session) Stop(ctx context.Context) error {
	if s.stopped {
		return fmt.Errorf("jvmlog: stop: output %s on pid %d already stopped", s.output, s.PID)
	}
	out, err := jfr.Jcmd(ctx, s.PID, "VM.log", "output="+s.output, "what=all=off")
	if err != nil {
		if _, serr := os.Stat("/proc/" + strconv.Itoa(s.PID)); errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("jvmlog: stop: pid %d has exited (%s holds what it logged)", s.PID, s.Path)
		}
		return fmt.Errorf("jvmlog: stop output %s on pid %d: %w", s.output, s.PID, err)
	}
	outs, err := s.list(ctx)
	if err != nil {
		return fmt.Errorf("jvmlog: stop output %s on pid %d: %w", s.output, s.PID, err)
	}
	if o, ok := find(outs, s.output); ok {
		return fmt.Errorf("jvmlog: stop: output %s still on pid %d as #%d after VM.log: %s", s.output, s.PID, o.index, jfr.JcmdMessage(out))
	}
	s.stopped = true
	var gone []string
	for _, name := range s.before {
		if _, ok := find(outs, name); !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		return fmt.Errorf("jvmlog: stop: output %s removed, but the JVM's outputs %s that were there before Start are gone too", s.output, strings.Join(gone, ", "))
	}
	return nil
}

// output is one line of VM.log list's "Log output configuration":
//
//	#2: file=/var/log/kafka/kafkaServer-gc.log all=off,gc*=info time,tags filecount=10,filesize=100M,async=false
type output struct {
	index  int
	name   string
	config string // the rest of the line
}

// list runs VM.log list and returns the outputs.
func (s *Session) list(ctx context.Context) ([]output, error) {
	out, err := jfr.Jcmd(ctx, s.PID, "VM.log", "list")
	if err != nil {
		return nil, err
	}
	outs, ok := parseList(out)
	if !ok {
		return nil, fmt.Errorf("VM.log list: %s", jfr.JcmdMessage(out))
	}
	return outs, nil
}

// parseList reads the outputs of VM.log list's output; ok is false when
// the "Log output configuration:" section is missing.
func parseList(out string) ([]output, bool) {
	_, conf, ok := strings.Cut(out, "Log output configuration:\n")
	if !ok {
		return nil, false
	}
	var outs []output
	for _, l := range strings.Split(conf, "\n") {
		l = strings.TrimSpace(l)
		num, rest, ok := strings.Cut(l, ": ")
		if !ok || !strings.HasPrefix(num, "#") {
			continue
		}
		i, err := strconv.Atoi(num[1:])
		if err != nil {
			continue
		}
		name, config, _ := strings.Cut(rest, " ")
		outs = append(outs, output{index: i, name: name, config: config})
	}
	return outs, true
}

func find(outs []output, name string) (output, bool) {
	for _, o := range outs {
		if o.name == name {
			return o, true
		}
	}
	return output{}, false
}
