package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/iotrace/ioout"
	"github.com/kscope-dev/kscope/internal/output"
)

type iotraceOptions struct {
	syscallProbe iotrace.SyscallProbe
	pid          int
	auto         bool
	logDirs      []string
	minLatency   time.Duration
	duration     time.Duration
	allFiles     bool
	format       string
	summary      bool
	journal      bool
	functions    string
	waits        bool
	steal        bool
	pageCache    bool
	runq         bool
	runqMin      time.Duration
	conns        bool
	connPorts    []uint
	quiet        bool
}

func newIotraceCmd() *cobra.Command {
	var o iotraceOptions
	cmd := &cobra.Command{
		Use:   "iotrace (--pid PID | --auto) [flags]",
		Short: "Trace a broker's slow writes and fsyncs (eBPF), per topic-partition",
		Long: `Traces every write, pwrite64, writev, pwritev, pwritev2, fsync and fdatasync
of a Kafka broker on the files of its log directories, with eBPF on the
syscalls tracepoints, and prints the calls that took at least --min-latency:
start and end (wall clock, comparable with packet capture times), latency,
thread, operation, bytes, file offset and the file as topic-partition/segment.
Every call, fast or slow, is counted in in-kernel histograms: --summary
prints them per topic-partition and operation.

With --journal (the default), also per device of the log directories: ext4
jbd2 commits with their phases, ext4 fsyncs, XFS log writes and forces, and
block requests, with the same --min-latency; --summary adds their
percentiles per device.

With --runq, also every wait of the broker's threads for a CPU (run-queue
latency) of at least --runq-min, with the CPU and the task that had it; with
--conns, which broker thread receives on each client connection to the
broker's ports (--conn-ports, default: the ports it listens on).

With --auto it follows the broker across restarts: when the process exits,
it detaches and attaches to the next kafka.Kafka JVM (--summary adds both
up); with --pid it ends when that process exits.

Runs until --duration passes, or SIGINT or SIGTERM; then detaches. Needs
root, or CAP_BPF and CAP_PERFMON (and CAP_SYS_ADMIN if tracefs must be
mounted). See docs/iotrace.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runIotrace(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.pid, "pid", 0, "the broker's process id")
	f.BoolVar(&o.auto, "auto", false, "trace the one JVM running kafka.Kafka")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "the broker's log directories (default: found from its open files)")
	f.DurationVar(&o.minLatency, "min-latency", 10*time.Millisecond, "print calls that took at least this long (0: all)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: at SIGINT or SIGTERM)")
	f.BoolVar(&o.allFiles, "all-files", false, "also index, time index, snapshot and checkpoint files (default: segment .log files only)")
	f.StringVar(&o.format, "format", "table", "output format: table, json (JSON Lines) or csv")
	f.BoolVar(&o.summary, "summary", false, "print counts and latency per topic-partition and operation at the end instead of rows")
	f.BoolVar(&o.journal, "journal", true, "also trace jbd2 commits, ext4 fsyncs, XFS log writes and block requests on the log dirs' devices")
	addSyscallProbeFlag(f, &o.syscallProbe)
	f.StringVar(&o.functions, "functions", "auto", "also time ext4_file_write_iter/xfs_file_write_iter with fentry: auto (where the kernel allows it), on (fail if it does not), off")
	f.BoolVar(&o.waits, "waits", false, "also trace the broker threads' uninterruptible kernel sleeps (D state) with their kernel stacks")
	f.BoolVar(&o.pageCache, "page-cache", false, "also trace the pages the broker adds to the page cache (reads from disk), as runs per thread and file (op page-cache-add; kind page_cache_adds in JSON); without the tracepoint filemap:mm_filemap_add_to_page_cache the mode says so")
	f.BoolVar(&o.steal, "steal", false, "also trace the time the hypervisor takes from each vCPU (steal), per interval between context switches, at --min-latency or more (virtual machines only)")
	f.BoolVar(&o.runq, "runq", false, "also trace the broker threads' run-queue latency: waits for a CPU of at least --runq-min, and who had the CPU")
	f.DurationVar(&o.runqMin, "runq-min", iotrace.DefaultRunQueueMin, "with --runq: report waits for a CPU of at least this long")
	f.BoolVar(&o.conns, "conns", false, "also report which broker thread receives on each client connection")
	f.UintSliceVar(&o.connPorts, "conn-ports", nil, "with --conns: the broker's Kafka ports (default: every TCP port it listens on)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no banner or footer on stderr")
	check(f, "pid", &o.pid, positive)
	check(f, "log-dirs", &o.logDirs, each(notEmpty))
	check(f, "min-latency", &o.minLatency, nonNegative)
	check(f, "duration", &o.duration, nonNegative)
	check(f, "format", &o.format, oneOf("table", "json", "csv"))
	check(f, "functions", &o.functions, functionMode)
	check(f, "runq-min", &o.runqMin, positive)
	check(f, "conn-ports", &o.connPorts, connPorts)
	return cmd
}

func runIotrace(ctx context.Context, stdout, stderr io.Writer, o *iotraceOptions) error {
	fc, writer, err := o.followConfig(stdout)
	if err != nil {
		return badInput(err)
	}

	// Stop on SIGINT and SIGTERM; every tracer is closed before Follow
	// returns.
	ctx, release := untilStopped(ctx, o.duration)
	defer release()
	if !o.quiet {
		fc.OnAttach = func(tr *iotrace.Tracer) { o.printAttach(stderr, tr) }
		fc.OnExit = func(pid int) {
			fmt.Fprintf(stderr, "iotrace: broker pid %d exited; waiting for the next one (kafka.Kafka)\n", pid)
		}
	}

	var h iotrace.Handlers // --summary: none, the histograms count every call
	if writer != nil {
		h = writer.Handlers()
	}
	sessions, err := iotrace.Follow(ctx, fc, h)
	if writer != nil {
		if ferr := writer.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	if n := len(sessions); n > 0 && sessions[n-1].Exited && fc.Find == nil && !o.quiet {
		fmt.Fprintf(stderr, "iotrace: broker pid %d exited\n", sessions[n-1].PID)
	}
	if o.summary {
		if err := o.printSummaries(stdout, stderr, sessions); err != nil {
			return err
		}
	}
	var st iotrace.Stats
	for _, s := range sessions {
		iotrace.AddStats(&st, s.Stats)
	}
	o.printStats(stderr, &st)
	return nil
}

// followConfig checks the options and turns them into the tracer's
// configuration, with the writer of the events (nil with --summary).
func (o *iotraceOptions) followConfig(stdout io.Writer) (iotrace.FollowConfig, ioout.Writer, error) {
	var fc iotrace.FollowConfig
	if o.auto == (o.pid != 0) {
		return fc, nil, errors.New("give exactly one of --pid PID and --auto")
	}
	var writer ioout.Writer
	if !o.summary {
		w, err := ioout.NewWriter(stdout, o.format)
		if err != nil {
			return fc, nil, err
		}
		writer = w
	} else if o.format != "table" && o.format != "json" {
		return fc, nil, fmt.Errorf("--summary prints table or json, not %q", o.format)
	}
	functions, err := iotrace.ParseFunctionMode(o.functions)
	if err != nil {
		return fc, nil, err
	}
	var ports []uint16
	for _, p := range o.connPorts {
		ports = append(ports, uint16(p)) // checked by connPorts
	}
	fc = iotrace.FollowConfig{
		Config: iotrace.Config{PID: o.pid, LogDirs: o.logDirs, MinLatency: o.minLatency, AllFiles: o.allFiles, Journal: o.journal,
			Waits: o.waits, SyscallProbes: o.syscallProbe, Functions: functions, Steal: o.steal, StealMin: o.minLatency,
			RunQueue: o.runq, RunQueueMin: o.runqMin, Conns: o.conns, Ports: ports, PageCache: o.pageCache},
		Summaries: o.summary,
	}
	if o.auto {
		// --auto follows the broker across restarts.
		fc.Find = iotrace.FindBroker
	}
	return fc, writer, nil
}

// printAttach is the banner of each attach: mode, process, journal groups.
func (o *iotraceOptions) printAttach(stderr io.Writer, tr *iotrace.Tracer) {
	fmt.Fprintf(stderr, "iotrace: mode: %s\n", tr.Mode())
	fmt.Fprintf(stderr, "iotrace: tracing pid %d, log dirs %s, calls >= %v (clock conversion ±%v); Ctrl-C to stop\n",
		tr.PID(), output.Escape(strings.Join(tr.LogDirs(), ",")), o.minLatency, tr.ClockUncertainty())
	if o.journal {
		attached, skipped := tr.JournalGroups()
		fmt.Fprintf(stderr, "iotrace: journal and block tracepoints: %s", output.Escape(strings.Join(attached, ",")))
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "; not traced: %s", output.Escape(strings.Join(skipped, "; ")))
		}
		fmt.Fprintln(stderr)
	}
}

// printSummaries prints --summary's tables: per file and operation, and
// with --journal per device.
func (o *iotraceOptions) printSummaries(stdout, stderr io.Writer, sessions []iotrace.Session) error {
	sums, unnamed, devSums := iotrace.MergeSummaries(sessions)
	if err := ioout.WriteSummaries(stdout, o.format, sums); err != nil {
		return err
	}
	if o.journal {
		if o.format == "table" {
			fmt.Fprintln(stdout)
		}
		if err := ioout.WriteDeviceSummaries(stdout, o.format, devSums); err != nil {
			return err
		}
	}
	if unnamed > 0 {
		fmt.Fprintf(stderr, "iotrace: %d calls on files that could not be named (closed and deleted)\n", unnamed)
	}
	return nil
}

// printStats prints what was seen (unless -q) and what was lost (always).
func (o *iotraceOptions) printStats(stderr io.Writer, st *iotrace.Stats) {
	if !o.quiet {
		fmt.Fprintf(stderr, "iotrace: %d calls >= %v seen, %d on reported files, %d on other files, %d on unnamed files; detached\n",
			st.Events, o.minLatency, st.Reported, st.OtherFiles, st.Unnamed)
		if o.journal {
			fmt.Fprintf(stderr, "iotrace: %d journal and block events >= %v\n", st.JournalEvents, o.minLatency)
		}
		if o.runq {
			fmt.Fprintf(stderr, "iotrace: %d run-queue delays and %d wake-ups by another broker thread >= %v\n", st.RunDelayEvents, st.WakeupEvents, o.runqMin)
		}
		if o.conns {
			fmt.Fprintf(stderr, "iotrace: %d connections' threads (%d receives on the ports)\n", st.ConnEvents, st.ConnRecvs)
		}
	}
	if st.RingbufDrops > 0 || st.HistFull > 0 || st.StartFull > 0 {
		fmt.Fprintf(stderr, "iotrace: WARNING: lost %d slow calls (ring buffer full), %d calls not counted (histogram map full), %d calls not timed (start map full)\n",
			st.RingbufDrops, st.HistFull, st.StartFull)
	}
	if st.JournalRingbufDrops > 0 || st.JournalHistFull > 0 || st.JournalStartFull > 0 {
		fmt.Fprintf(stderr, "iotrace: WARNING: journal: lost %d slow events (ring buffer full), %d not counted (histogram map full), %d not timed (start map full)\n",
			st.JournalRingbufDrops, st.JournalHistFull, st.JournalStartFull)
	}
	if st.RunDelayRingbufDrops > 0 || st.RunDelayStartFull > 0 {
		fmt.Fprintf(stderr, "iotrace: WARNING: run queue: lost %d delays (ring buffer full), %d not timed (start map full)\n",
			st.RunDelayRingbufDrops, st.RunDelayStartFull)
	}
	if st.ConnRingbufDrops > 0 {
		fmt.Fprintf(stderr, "iotrace: WARNING: connections: %d not reported at once (ring buffer full; reported at a later receive)\n", st.ConnRingbufDrops)
	}
}

// functionMode is --functions: auto, on or off.
func functionMode(s string) error {
	_, err := iotrace.ParseFunctionMode(s)
	return err
}

// connPorts is --conn-ports: TCP ports, at most as many as the tracer
// has room for.
func connPorts(ports []uint) error {
	if len(ports) > iotrace.MaxPorts {
		return fmt.Errorf("at most %d ports", iotrace.MaxPorts)
	}
	return each(tcpPort)(ports)
}
