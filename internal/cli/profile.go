package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/profile"
	"github.com/kscope-dev/kscope/internal/safefile"
)

type profileOptions struct {
	pid           string
	duration      time.Duration
	out           string
	jfr           string
	top           int
	format        string
	flame         string
	period        time.Duration
	lockThreshold time.Duration
	quiet         bool
}

func newProfileCmd() *cobra.Command {
	var o profileOptions
	cmd := &cobra.Command{
		Use:   "profile [--pid auto|N] [--duration 30s] [--out FILE.jfr] | --jfr FILE",
		Short: "Profile a broker with Java Flight Recorder: CPU by category, top methods and stacks, flame graph, lock contention, hints",
		Long: `Records the broker with Java Flight Recorder through jcmd (part of the JDK:
nothing to install, nothing to restart) for --duration: CPU samples of
threads in Java and in native code every --period, lock waits
(synchronized monitors, java.util.concurrent locks, Object.wait) of
--lock-threshold or longer with stacks, per-thread and JVM CPU load, GC
pauses and the JVM's flags. Or reads an existing recording (--jfr FILE).

Reports:
  - CPU by category, with the frames that decided it: compression per
    codec, checksums (CRC32C, MD5), crypto (AES-GCM, TLS), network, log
    append and index, replication, request handling, GC, JIT, other;
  - the top methods (self and total), the top stacks and the threads;
  - lock contention: monitors by total and worst wait, with the waiting
    threads, the holders and a stack;
  - hints when a known costly pattern shows (a codec the broker
    recompresses to, MD5 or AES without intrinsics, GC), with the numbers.
--flame FILE.svg or FILE.html writes a self-contained flame graph.

Shares are estimates of the JVM's CPU (samples weighed and scaled to each
thread's measured CPU): docs/profile.md says how, and what JFR cannot see.

jcmd must run as the broker's user (or root). Ctrl-C ends the recording
early and reports what was recorded. Exit status: 0, 1 on failure, 2 for
bad input.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return badInput(fmt.Errorf("unexpected argument %q: a recording goes after --jfr", args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runProfile(ctx, cmd, &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pid, "pid", "auto", "the broker's pid, or auto: the one JVM running kafka.Kafka")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long to record")
	f.StringVar(&o.out, "out", "", "keep the recording in this file (the JVM writes it: it must be able to); default: a temporary file")
	f.StringVar(&o.jfr, "jfr", "", "read this recording instead of recording")
	f.IntVar(&o.top, "top", 20, "methods, stacks, threads, monitors and waits to list")
	f.StringVar(&o.format, "format", "table", "output format: table or json")
	f.StringVar(&o.flame, "flame", "", "write a flame graph to FILE.svg or FILE.html")
	f.DurationVar(&o.period, "period", jfr.DefaultSamplePeriod, "JFR sampling period (jdk.ExecutionSample, jdk.NativeMethodSample)")
	f.DurationVar(&o.lockThreshold, "lock-threshold", jfr.DefaultLockThreshold, "record lock waits at least this long")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress notes on stderr")
	check(f, "pid", &o.pid, pidOr("auto"))
	check(f, "duration", &o.duration, positive)
	check(f, "top", &o.top, positive)
	check(f, "format", &o.format, oneOf("table", "json"))
	check(f, "flame", &o.flame, flameFile)
	check(f, "period", &o.period, positive)
	check(f, "lock-threshold", &o.lockThreshold, nonNegative)
	return cmd
}

// flameFile is --flame: FILE.svg or FILE.html.
func flameFile(s string) error {
	switch strings.ToLower(filepath.Ext(s)) {
	case ".svg", ".html", ".htm":
		return nil
	}
	return errors.New("want a FILE.svg or FILE.html")
}

func runProfile(ctx context.Context, cmd *cobra.Command, o *profileOptions) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.jfr != "" && cmd.Flags().Changed("out") {
		return badInput(errors.New("--jfr reads a recording and --out keeps a new one: give one of them"))
	}
	if o.jfr != "" && (cmd.Flags().Changed("duration") || cmd.Flags().Changed("period") || cmd.Flags().Changed("lock-threshold")) {
		return badInput(errors.New("--duration, --period and --lock-threshold are for recording, not with --jfr"))
	}
	flame, err := o.flameTarget()
	if err != nil {
		return err
	}
	notef := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(stderr, "profile: %s\n", output.Escape(fmt.Sprintf(format, args...)))
		}
	}

	path := o.jfr
	var flags map[string]string
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return badInput(fmt.Errorf("--jfr: %w", err))
		}
		// The flags of a running JVM only when asked for one: the file
		// may come from another machine.
		if cmd.Flags().Changed("pid") {
			if pid, err := brokerPID(o.pid); err == nil {
				flags = vmFlags(ctx, pid, notef)
			}
		}
	} else {
		pid, err := brokerPID(o.pid)
		if err != nil {
			return err
		}
		var cleanup func()
		if path, cleanup, err = profilePath(o.out); err != nil {
			return err
		}
		defer cleanup()
		if err := recordProfile(ctx, pid, path, o, notef); err != nil {
			return err
		}
		flags = vmFlags(ctx, pid, notef)
		if o.out != "" {
			notef("recording kept in %s", path)
		}
	}

	pr, err := jfr.ReadProfile(path)
	if err != nil {
		if pr.Stats.Chunks == 0 {
			if o.jfr != "" {
				return badInput(err)
			}
			return err
		}
		// A recording damaged at the end still has its first chunks.
		fmt.Fprintf(stderr, "profile: WARNING: %s; reporting the %d chunks before the damage\n", output.Escape(err.Error()), pr.Stats.Chunks)
	}
	rep := profile.Build(pr, profile.Options{Top: o.top, Flags: flags})
	if o.flame != "" {
		written, err := writeFlame(flame, rep)
		if err != nil {
			return err
		}
		notef("flame graph in %s", written)
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	return profile.WriteText(stdout, rep)
}

// profilePath is where the JVM writes the recording: --out, or a file in
// a new temporary directory that the JVM (perhaps another user) may
// write to, removed by cleanup.
func profilePath(out string) (string, func(), error) {
	if out != "" {
		// The JVM writes the file, as its user: kscope only makes sure it
		// is not a device, a FIFO or a directory's place.
		path, err := safefile.Target{Path: out, DefaultName: profileDefaultName}.Resolve()
		if err != nil {
			return "", nil, badInput(fmt.Errorf("--out: %w", err))
		}
		return absPath(path), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "kscope-profile-")
	if err != nil {
		return "", nil, fmt.Errorf("profile: %w", err)
	}
	// Writable and searchable, not listable, by the JVM's user.
	if err := os.Chmod(dir, 0o733); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("profile: %w", err)
	}
	return filepath.Join(dir, "profile.jfr"), func() { os.RemoveAll(dir) }, nil
}

// recordProfile records pid into path for o.duration, or until SIGINT or
// SIGTERM.
func recordProfile(ctx context.Context, pid int, path string, o *profileOptions, notef func(string, ...any)) error {
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	jctx, cancel := context.WithTimeout(sctx, 30*time.Second)
	rec, err := jfr.StartProfile(jctx, pid, "kscope-profile", path, jfr.ProfileOptions{SamplePeriod: o.period, LockThreshold: o.lockThreshold})
	cancel()
	if err != nil {
		return err
	}
	notef("recording pid %d for %v (CPU samples every %v, lock waits of %v or more); Ctrl-C stops early", pid, o.duration, o.period, o.lockThreshold)
	t := time.NewTimer(o.duration)
	select {
	case <-t.C:
	case <-sctx.Done():
		t.Stop()
		notef("stopping early")
	}
	// Stop even when interrupted: the recording is what was asked for.
	jctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return rec.Stop(jctx)
}

// vmFlags asks the JVM for its flags, for the hints; without them the
// hints say less.
func vmFlags(ctx context.Context, pid int, notef func(string, ...any)) map[string]string {
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	flags, err := jfr.VMFlags(jctx, pid)
	if err != nil {
		notef("no JVM flags for the hints: %v", err)
		return nil
	}
	return flags
}

// flameTarget is --flame's target, checked before anything is recorded
// or read: not a device, a FIFO, the recording read or kept; a directory
// gets flameDefaultName. The format follows the name: .svg or .html.
func (o *profileOptions) flameTarget() (safefile.Target, error) {
	t := safefile.Target{Path: o.flame, DefaultName: flameDefaultName}
	if o.flame == "" {
		return t, nil
	}
	if o.jfr != "" {
		t.Inputs = append(t.Inputs, o.jfr)
	}
	// The recording --out keeps (the file, not its directory: the graph
	// may go beside it); a bad --out is profilePath's to report.
	keep, keepErr := safefile.Target{Path: o.out, DefaultName: profileDefaultName}.Resolve()
	if o.out != "" && keepErr == nil {
		t.Inputs = append(t.Inputs, keep)
	}
	path, err := t.Resolve()
	if err != nil {
		return t, badInput(fmt.Errorf("--flame: %w", err))
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".html", ".htm":
	default:
		return t, badInput(fmt.Errorf("--flame %q: want a FILE.svg or FILE.html", o.flame))
	}
	if o.out != "" && keepErr == nil && absPath(keep) == absPath(path) {
		return t, badInput(fmt.Errorf("--flame %s: it is where --out keeps the recording", o.flame))
	}
	_, err = checkOutput("--flame", t)
	return t, err
}

// absPath is path made absolute, or path when it cannot be.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// writeFlame writes the flame graph, SVG or HTML by the name's extension,
// and returns the path written.
func writeFlame(t safefile.Target, rep *profile.Report) (string, error) {
	path, err := t.Resolve()
	if err != nil {
		return "", badInput(fmt.Errorf("--flame: %w", err))
	}
	write := profile.FlameSVG
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".html" || ext == ".htm" {
		write = profile.FlameHTML
	}
	return writeOutput("--flame", t, func(w io.Writer) error { return write(w, rep) })
}
