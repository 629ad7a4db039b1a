package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/doctor"
	"github.com/kscope-dev/kscope/internal/findings"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/output"
)

type doctorOptions struct {
	pid          string
	ports        []uint
	iface        string
	out          string
	duration     time.Duration
	profile      time.Duration
	slow         time.Duration
	format       string
	quiet        bool
	syscallProbe iotrace.SyscallProbe
	target       string
}

func newDoctorCmd() *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor [flags]",
		Short: "Look at a live broker for a minute and say what is wrong with it, ranked, with the evidence",
		Long: `Records the broker for --duration (as 'kscope record': its requests from a live
capture, its writes, journal, waits for a CPU and JVM pauses traced with eBPF,
the host's USE figures), explains every produce request of --slow or more
(as 'kscope explain'), and, when the CPU is the problem, profiles the broker's
JVM for the last --profile of it (as 'kscope profile'). Then prints the
findings, the most severe first, each in one sentence with its evidence and
the next command to run for the detail, and writes one self-contained HTML
page (as 'kscope report') into --out with the recording.

An alarm is a cause of produce requests of --slow or more that holds enough
of them to shape the p99.9, a stall of the file system of --slow or more, or
a resource the USE verdicts found saturated a quarter of the time or more.
Exit status 1 when there is an alarm, 0 when there is none (warnings and
notes are printed either way), 2 for bad flags.

The broker is --pid, else the process listening on --port, else the one JVM
running kafka.Kafka. Needs root (as record).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runDoctor(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pid, "pid", "auto", "the broker's pid, or auto: the process listening on --port, else the one JVM running kafka.Kafka")
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable)")
	f.StringVar(&o.iface, "iface", "any", "interface to capture on (any: all)")
	f.StringVar(&o.out, "out", "", "directory to create for the recording, report.html and the profile (default kscope-doctor-DATE-TIME)")
	f.DurationVar(&o.duration, "duration", time.Minute, "how long to look, profile included")
	f.DurationVar(&o.profile, "profile", 10*time.Second, "the part of --duration kept for a CPU profile of the broker's JVM when the CPU is the problem (0: never)")
	f.DurationVar(&o.slow, "slow", 100*time.Millisecond, "produce requests at or above this latency are slow: explained, and cause for alarm")
	f.StringVar(&o.format, "format", "text", "output: text or json (one object: the findings and the latency)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	addTargetVersionFlag(f, &o.target)
	addSyscallProbeFlag(f, &o.syscallProbe)
	check(f, "pid", &o.pid, pidOr("auto"))
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "iface", &o.iface, notEmpty)
	check(f, "duration", &o.duration, atLeast(5*time.Second))
	check(f, "profile", &o.profile, nonNegative)
	check(f, "slow", &o.slow, positive)
	check(f, "format", &o.format, oneOf("text", "json"))
	return cmd
}

func runDoctor(ctx context.Context, stdout, stderr io.Writer, o *doctorOptions) error {
	if o.out == "" {
		o.out = "kscope-doctor-" + time.Now().Format("20060102-150405")
	}
	if err := doctor.CheckOut(o.out); err != nil {
		return badInput(err)
	}
	cfg, err := wireConfig(o.ports, "message-id")
	if err != nil {
		return err
	}
	pid, follow, err := doctorBroker(o.pid, cfg.Ports)
	if err != nil {
		return err
	}
	ctx, release := untilStopped(ctx, 0)
	defer release()
	clientOpts, err := clientsOptionsFor(o.target)
	if err != nil {
		return err
	}
	opts := doctor.Options{Clients: clientOpts, PID: pid, Follow: follow, Wire: cfg, Interface: o.iface, Out: o.out, Duration: o.duration,
		Profile: o.profile, AlarmMs: float64(o.slow) / float64(time.Millisecond), SyscallProbes: o.syscallProbe,
		Notes: stderr, Quiet: o.quiet}
	var bar *progressbar.ProgressBar
	if !o.quiet && isTerminal(stderr) {
		opts.Progress = func(elapsed, total time.Duration) {
			if bar == nil {
				bar = progressbar.NewOptions64(int64(total/time.Second), progressbar.OptionSetWriter(stderr),
					progressbar.OptionSetDescription("recording"), progressbar.OptionClearOnFinish())
			}
			bar.Set64(int64(elapsed / time.Second))
		}
	}
	res, err := doctor.Run(ctx, opts)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return recorderError(err)
	}
	if o.format == "json" {
		err = json.NewEncoder(stdout).Encode(struct {
			Findings []findings.Finding `json:"findings"`
			Latency  findings.Latency   `json:"latency"`
			Report   string             `json:"report"`
		}{res.Findings, res.Latency, res.Report})
	} else {
		err = writeFindings(stdout, res)
	}
	if err != nil {
		return err
	}
	return alarms(res.Findings)
}

// alarms is exit status 1 with a count of the alarms, when there are.
func alarms(fs []findings.Finding) error {
	n := 0
	for _, f := range fs {
		if f.Severity >= findings.Alarm {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	noun := "alarm"
	if n > 1 {
		noun = "alarms"
	}
	return &exitError{code: ExitFailure, err: fmt.Errorf("doctor: %d %s", n, noun)}
}

// doctorBroker resolves --pid: a number, or auto (the listener on a
// port, else the one kafka.Kafka JVM, followed across restarts).
func doctorBroker(s string, ports []uint16) (pid int, follow bool, err error) {
	if s != "auto" {
		pid, err = brokerPID(s)
		return pid, false, err
	}
	for _, p := range ports {
		if pid := hostinfo.ListenerPID(int(p)); pid > 0 {
			return pid, false, nil
		}
	}
	pid, err = iotrace.FindBroker()
	if err != nil {
		return 0, false, fmt.Errorf("no broker listening on port(s) %v, and %w", ports, err)
	}
	return pid, true, nil
}

// writeFindings prints the findings ranked, numbered, each with its
// evidence and next command, then where the report is.
func writeFindings(w io.Writer, res *doctor.Result) error {
	var b strings.Builder
	if len(res.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	for i, f := range res.Findings {
		fmt.Fprintf(&b, "%2d. %-7s %s\n", i+1, strings.ToUpper(f.Severity.String()), output.Escape(f.Title))
		if f.Evidence != "" {
			fmt.Fprintf(&b, "             %s\n", output.Escape(f.Evidence))
		}
		if f.Next != "" {
			fmt.Fprintf(&b, "             next: %s\n", output.Escape(f.Next))
		}
	}
	fmt.Fprintf(&b, "\nreport: %s\nrecording: %s\n", output.Escape(res.Report), output.Escape(res.Recording))
	if res.Flame != "" {
		fmt.Fprintf(&b, "CPU flame graph: %s\n", output.Escape(res.Flame))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
