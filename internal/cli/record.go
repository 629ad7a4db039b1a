package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/recorder"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/wire"
)

type recordOptions struct {
	syscallProbe    iotrace.SyscallProbe
	ports           []uint
	iface           string
	pid             string
	logDirs         []string
	jfr             string
	out             string
	duration        time.Duration
	minLatency      time.Duration
	waitMinLatency  time.Duration
	stealMin        time.Duration
	runqMin         time.Duration
	sched           bool
	jvmPauses       bool
	pcap            bool
	messageIDHeader string
	quiet           bool
	tlsKeyLog       string
	tlsKeys         string
}

func newRecordCmd() *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record --out DIR [flags]",
		Short: "Record a broker's requests (live capture) and its writes and journal (eBPF) together",
		Long: `Captures the broker's Kafka traffic live (AF_PACKET, no libpcap) and decodes
every request, while tracing the broker's writes, fsyncs, journal commits
and block requests with eBPF, into a recording directory that
'kscope explain' reads:

  requests.jsonl  one line per request (as 'kscope requests --format json')
  writes.jsonl    the broker's writes to its segment files (as 'kscope iotrace --format json')
  journal.jsonl   jbd2 commits, XFS log writes, ext4 fsyncs, block requests,
                  the broker threads' kernel waits, hypervisor steal
  sched.jsonl     the broker threads' run-queue delays (with the task that
                  held the CPU), which network thread serves each
                  connection, CPU-quota throttling of the broker's cgroup,
                  the JVM's stop-the-world pauses (GC and safepoints)
  jvm.log         the JVM's log of those pauses (without --jfr; turned on
                  with jcmd VM.log for the recording's duration, then off)
  lockwaits.jsonl lock waits from JFR (with --jfr)
  capture.pcapng  the raw capture (with --pcap)
  meta.json       host, kernel, broker pid and version, log dirs with their
                  file systems and mount options, clocks, loss counters

Every write is recorded (--min-latency 0) so that each slow request's own
append can be found. Runs until --duration passes, or Ctrl-C (SIGINT) or
SIGTERM, then closes the recording cleanly. Needs root (or CAP_NET_RAW,
CAP_BPF and CAP_PERFMON).

--jfr start   starts a flight recording on the broker with jcmd (monitor
              waits of 1 ms and more), stops it at the end and keeps it as
              broker.jfr; its lock waits go to lockwaits.jsonl.
--jfr FILE    reads the lock waits of a flight recording you made, at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runRecord(ctx, cmd.ErrOrStderr(), &o)
		},
	}
	f := cmd.Flags()
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable)")
	f.StringVar(&o.iface, "iface", "any", "interface to capture on (any: all)")
	f.StringVar(&o.pid, "pid", "auto", "the broker's pid, or auto: the one JVM running kafka.Kafka")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "the broker's log dirs (default: found from its open files)")
	f.StringVar(&o.jfr, "jfr", "", "lock waits from Java Flight Recorder: start (kscope records one with jcmd) or a FILE")
	f.StringVar(&o.out, "out", "", "recording directory to create (must not exist or be empty)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: at Ctrl-C)")
	f.DurationVar(&o.minLatency, "min-latency", 0, "record only writes and journal events at least this long (0: all)")
	f.DurationVar(&o.waitMinLatency, "wait-min-latency", time.Millisecond, "record the broker threads' uninterruptible kernel waits at least this long")
	f.DurationVar(&o.stealMin, "steal-min", 100*time.Microsecond, "record intervals between context switches with at least this much hypervisor steal (virtual machines)")
	addSyscallProbeFlag(f, &o.syscallProbe)
	f.BoolVar(&o.sched, "sched", true, "record the scheduling evidence in sched.jsonl: run-queue delays, wake-ups, connection threads, cgroup CPU throttling")
	f.DurationVar(&o.runqMin, "runq-min", iotrace.DefaultRunQueueMin, "record the broker threads' waits for a CPU (run-queue latency) at least this long")
	f.BoolVar(&o.jvmPauses, "jvm-pauses", true, "record the JVM's GC and safepoint pauses (from --jfr, else from the JVM's log turned on with jcmd)")
	f.BoolVar(&o.pcap, "pcap", false, "also keep the raw capture as capture.pcapng")
	f.StringVar(&o.messageIDHeader, "message-id-header", "message-id", "record header holding message ids")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress notes on stderr")
	f.StringVar(&o.tlsKeys, "tls-keys", "", "attach: load the extract-tls-secrets Java agent into the broker (jcmd; once per JVM, its key log in "+keylogagent.HostDir+") and decrypt its TLS listeners; the key log is copied to DIR/"+recording.TLSKeyLogFile+" (mode 0600); only connections that start after the first attach can be decrypted")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", tlsKeyLogHelp+"; it may still be growing, and with --pcap its new lines go into capture.pcapng as Decryption Secrets Blocks")
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "iface", &o.iface, notEmpty)
	check(f, "pid", &o.pid, pidOr("auto"))
	check(f, "log-dirs", &o.logDirs, each(notEmpty))
	check(f, "duration", &o.duration, nonNegative)
	check(f, "min-latency", &o.minLatency, nonNegative)
	check(f, "wait-min-latency", &o.waitMinLatency, positive)
	check(f, "steal-min", &o.stealMin, nonNegative)
	check(f, "runq-min", &o.runqMin, positive)
	check(f, "tls-keys", &o.tlsKeys, tlsKeysWay)
	return cmd
}

func runRecord(ctx context.Context, stderr io.Writer, o *recordOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := checkFollowedKeyLog(o.tlsKeyLog); err != nil {
		return err
	}
	cfg, err := wireConfig(o.ports, o.messageIDHeader)
	if err != nil {
		return err
	}
	pid, err := brokerPID(o.pid)
	if err != nil {
		return err
	}
	ctx, release := untilStopped(ctx, o.duration)
	defer release()
	_, err = recorder.Run(ctx, o.recorderOptions(stderr, pid, cfg))
	return recorderError(err)
}

// recorderOptions are record's flags for the recorder.
func (o *recordOptions) recorderOptions(stderr io.Writer, pid int, cfg wire.Config) recorder.Options {
	return recorder.Options{Out: o.out, PID: pid, Follow: o.pid == "auto" || o.pid == "", LogDirs: o.logDirs, Wire: cfg,
		Interface: o.iface, JFR: o.jfr, MinLatency: o.minLatency, WaitMinLatency: o.waitMinLatency, StealMin: o.stealMin,
		RunQueueMin: o.runqMin, SyscallProbes: o.syscallProbe, Sched: o.sched, JVMPauses: o.jvmPauses, PCAP: o.pcap,
		TLSKeyLog: o.tlsKeyLog, TLSKeysAttach: o.tlsKeys == "attach", Notes: stderr, Quiet: o.quiet}
}

// recorderError gives the recorder's input errors exit status 2.
func recorderError(err error) error {
	var ie *recorder.InputError
	if errors.As(err, &ie) {
		return badInput(err)
	}
	return err
}

// brokerPID resolves --pid: a number, or auto.
func brokerPID(s string) (int, error) {
	if s == "auto" || s == "" {
		return iotrace.FindBroker()
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, badInput(fmt.Errorf("--pid %q: want a process id or auto", s))
	}
	return pid, nil
}

// validate checks the options that do not depend on the host.
func (o *recordOptions) validate() error {
	if o.out == "" {
		return badInput(errors.New("--out DIR is required"))
	}
	// Before the broker is looked for: a file, a device or a FIFO where
	// the recording directory goes is refused at once, not after the
	// broker and its log dirs were found.
	if err := safefile.OutputDir(o.out); err != nil {
		return badInput(fmt.Errorf("--out: %w", err))
	}
	if err := checkJFRFile(o.jfr); err != nil {
		return err
	}
	if o.tlsKeys != "" && o.tlsKeyLog != "" {
		return badInput(errors.New("--tls-keys attach and --tls-keylog: one or the other"))
	}
	return nil
}

// checkJFRFile refuses --jfr FILE when FILE is there and is not a regular
// file: it is read only at the end of the recording, which a FIFO would
// otherwise block, or fail, after the whole recording was made. It may
// not exist yet (a flight recording dumped when it stops).
func checkJFRFile(path string) error {
	if path == "" || path == "start" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return badInput(fmt.Errorf("--jfr: %s: %w (%s)", path, safefile.ErrNotRegular, safefile.Describe(st.Mode())))
	}
	return nil
}

// tlsKeysWay is --tls-keys: attach, or "" for none.
func tlsKeysWay(s string) error {
	if s != "" && s != "attach" {
		return errors.New("the only way is attach")
	}
	return nil
}
