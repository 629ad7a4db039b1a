// Package doctor is `kscope doctor`: it looks at a live broker for a
// bounded time and says what is wrong with it. It records the broker
// (package recorder: capture, eBPF, the host's USE figures, the JVM's
// pauses), explains the slow produce requests and draws the report
// (package report), and, when the CPU is the problem, profiles the
// broker's JVM for a few seconds (package profile). What it found is a
// ranked list of findings (package findings), each with its evidence and
// the next command to run, and one self-contained HTML page.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/findings"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/recorder"
	"github.com/kscope-dev/kscope/internal/report"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/wire"
)

// File names inside Options.Out.
const (
	RecordingDir = "recording"
	ReportFile   = "report.html"
	ProfileFile  = "profile.jfr"
	FlameFile    = "cpu-flame.html"
)

// Options say which broker to look at, for how long, and where to keep
// what was seen.
type Options struct {
	// PID is the broker's pid; Follow follows kafka.Kafka across
	// restarts (the pid was found, not given).
	PID    int
	Follow bool
	// Wire has the broker's ports.
	Wire wire.Config
	// Interface is the one to capture on ("any": all).
	Interface string
	// Out is the directory to create for the recording, the report and
	// the profile.
	Out string
	// Duration bounds the whole look: the recording, and the profile
	// when there is one.
	Duration time.Duration
	// Profile is the part of Duration kept for a CPU profile of the
	// broker, taken only when the CPU is the problem (0: never).
	Profile time.Duration
	// AlarmMs is the produce latency that is slow: the requests explained
	// and the threshold of alarm (0: findings.DefaultAlarmMs).
	AlarmMs float64
	// SyscallProbes is the tracer's choice of system call probes.
	SyscallProbes iotrace.SyscallProbe
	// Clients says how the clients view is built (its target release).
	Clients clients.Options
	// Notes takes the progress notes, one line each; Quiet keeps only
	// warnings. Progress, when set, is told the recording's elapsed
	// time every second.
	Notes    io.Writer
	Quiet    bool
	Progress func(elapsed, total time.Duration)
}

// Result is what doctor found.
type Result struct {
	// Findings are ranked, the most severe first.
	Findings []findings.Finding
	Latency  findings.Latency
	// Dir is Out; Report, Recording and Flame the paths of what was
	// kept in it (Flame "" without a profile).
	Dir, Report, Recording, Flame string
	Profiled                      bool
}

// Worst is the most severe finding's severity.
func (r *Result) Worst() findings.Severity { return findings.Worst(r.Findings) }

// InputError is an error of the caller's input: nothing was done.
type InputError = recorder.InputError

func (o *Options) notef(format string, args ...any) {
	if o.Notes != nil && !o.Quiet {
		fmt.Fprintf(o.Notes, "doctor: "+format+"\n", args...)
	}
}

// recordFor is the recording's part of Duration.
func (o *Options) recordFor() time.Duration {
	if o.Profile > 0 && o.Duration > 2*o.Profile {
		return o.Duration - o.Profile
	}
	return o.Duration
}

// Run looks at the broker and returns what it found. The recording, the
// report and the profile stay in o.Out.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Out == "" {
		return nil, &InputError{Err: errors.New("doctor: no output directory")}
	}
	res := &Result{Dir: o.Out, Recording: filepath.Join(o.Out, RecordingDir), Report: filepath.Join(o.Out, ReportFile)}
	if err := CheckOut(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if err := o.record(ctx, res.Recording); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// Stopped early (Ctrl-C): what was recorded is still explained.
		ctx = context.WithoutCancel(ctx)
	}
	o.notef("explaining the produce requests of %g ms or more", o.alarmMs())
	d, err := report.Build(res.Recording, report.Options{Explain: o.explainOptions(), AlarmMs: o.AlarmMs, Clients: o.Clients})
	if err != nil {
		return nil, fmt.Errorf("doctor: reading the recording: %w", err)
	}
	if o.Profile > 0 && cpuIsTheProblem(d.Findings) {
		f, err := o.profile(ctx, o.Out)
		if err != nil {
			d.Findings = append(d.Findings, findings.Finding{Severity: findings.Note, Check: "profile",
				Title: "no CPU profile of the broker: " + err.Error()})
		} else {
			res.Profiled, res.Flame = true, filepath.Join(o.Out, FlameFile)
			d.Findings = append(d.Findings, f)
		}
		findings.Rank(d.Findings)
	}
	res.Findings, res.Latency = d.Findings, d.Latency
	if err := writeReport(res.Report, d); err != nil {
		return nil, err
	}
	return res, nil
}

// CheckOut refuses an output directory doctor cannot use: one that
// exists and is not an empty directory (doctor writes only into a
// directory of its own).
func CheckOut(dir string) error {
	if err := safefile.OutputDir(dir); err != nil {
		return &InputError{Err: fmt.Errorf("--out: %w", err)}
	}
	ents, err := os.ReadDir(dir)
	if err == nil && len(ents) > 0 {
		return &InputError{Err: fmt.Errorf("--out: %s is not empty: doctor writes only into a new or empty directory", dir)}
	}
	return nil
}

// writeReport writes the page, as report does.
func writeReport(path string, d *report.Data) error {
	_, err := safefile.Write(safefile.Target{Path: path}, func(w io.Writer) error { return report.WriteHTML(w, d) })
	if err != nil {
		return fmt.Errorf("doctor: writing the report: %w", err)
	}
	return nil
}

func (o *Options) alarmMs() float64 {
	if o.AlarmMs > 0 {
		return o.AlarmMs
	}
	return findings.DefaultAlarmMs
}

// explainOptions make the requests of AlarmMs or more slow.
func (o *Options) explainOptions() explain.Options {
	slow := time.Duration(o.alarmMs() * float64(time.Millisecond))
	return explain.Options{Config: explain.Config{Slow: slow}, Top: 10, MessageIDHeader: o.Wire.MessageIDHeader}
}

// record makes the recording for recordFor, telling Progress.
func (o *Options) record(ctx context.Context, dir string) error {
	d := o.recordFor()
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if o.Progress != nil {
		start := time.Now()
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-rctx.Done():
					return
				case <-t.C:
					o.Progress(time.Since(start), d)
				}
			}
		}()
	}
	o.notef("recording the broker (pid %d) for %v into %s", o.PID, d, dir)
	_, err := recorder.Run(rctx, recorder.Options{Out: dir, PID: o.PID, Follow: o.Follow, Wire: o.Wire, Interface: o.Interface,
		WaitMinLatency: time.Millisecond, StealMin: 100 * time.Microsecond, RunQueueMin: iotrace.DefaultRunQueueMin,
		SyscallProbes: o.SyscallProbes, Sched: true, JVMPauses: true, Notes: o.Notes, Name: "doctor: record", Quiet: o.Quiet})
	return err
}
