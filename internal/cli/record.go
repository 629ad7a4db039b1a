package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/tlskeys"
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

func runRecord(ctx context.Context, stderr io.Writer, o *recordOptions) (err error) {
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
	logDirs := o.logDirs
	if len(logDirs) == 0 {
		if logDirs, err = iotrace.LogDirsOf(pid); err != nil {
			return err
		}
	}

	meta := &recording.Meta{Tool: "kscope record", Kernel: hostinfo.Kernel(), Interface: o.iface, Ports: cfg.Ports,
		Broker: recording.BrokerOf(pid, logDirs)}
	meta.Host, _ = os.Hostname()
	topics := wire.NewTopicNames()
	if ids, err := logdir.TopicIDs(hostinfo.AllSeenBy(pid, logDirs)...); err == nil {
		for id, name := range ids {
			topics.Add(id, name)
		}
	}

	rec, err := recording.Create(o.out)
	if err != nil {
		return badInput(err)
	}
	if o.tlsKeys == "attach" {
		// Before the capture: connections that start after the attach
		// are decrypted. The agent loads into a JVM once: every
		// recording of this broker shares its key log in
		// keylogagent.HostDir, and keeps a copy.
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		o.tlsKeyLog, err = keylogagent.AttachHost(actx, pid)
		cancel()
		if err != nil {
			rec.Close(nil)
			return fmt.Errorf("--tls-keys attach: %w", err)
		}
		if !o.quiet {
			fmt.Fprintf(stderr, "record: key-log agent in pid %d: TLS connections that start from now on are decrypted (keys in %s, mode 0600)\n", pid, output.Escape(o.tlsKeyLog))
		}
	}
	closed := false
	defer func() {
		if !closed {
			rec.Close(nil)
		}
	}()

	ctx, release := untilStopped(ctx, o.duration)
	defer release()

	// The tracer follows the broker across restarts with --pid auto. The
	// first attach happens before anything else starts, so that a tracer
	// that cannot attach ends the command before the capture opens.
	fc := iotrace.FollowConfig{Config: iotrace.Config{PID: pid, LogDirs: o.logDirs, MinLatency: o.minLatency, Journal: true,
		SyscallProbes: o.syscallProbe, Waits: true, WaitMinLatency: o.waitMinLatency, Steal: true, StealOptional: true, StealMin: o.stealMin,
		RunQueue: o.sched, RunQueueMin: o.runqMin, Conns: o.sched, Ports: cfg.Ports}}
	if o.pid == "auto" || o.pid == "" {
		fc.Find = iotrace.FindBroker
	}
	tr, err := startTrace(ctx, stderr, o.quiet, fc, rec)
	if err != nil {
		return err
	}
	var jfrRec *jfr.Recording
	if o.jfr == "start" {
		jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		jfrRec, err = jfr.Start(jctx, pid, "kscope-record", filepath.Join(o.out, recording.JFRFile), time.Millisecond)
		cancel()
		if err != nil {
			return fmt.Errorf("--jfr start: %w", err)
		}
	}

	jfrPath := o.jfr
	if o.jfr == "start" {
		jfrPath = filepath.Join(o.out, recording.JFRFile)
	}
	// The host's USE figures every second into use.jsonl, as kscope use,
	// from before the JVM's log is turned on: jcmd's attach takes
	// seconds on a saturated host, when these figures matter most.
	useDone := make(chan struct{})
	go func() { defer close(useDone); recordUse(ctx, stderr, o.quiet, pid, meta.Broker.LogDirs, rec) }()
	// The capture starts after it: the attach and the VM operation that
	// turns the log on stop the JVM (up to 600 ms seen under load), and
	// with the log not yet on that stop would be in the recording
	// unexplained.
	sched := startSchedSources(ctx, stderr, o.quiet, pid, o.out, o.sched, o.jvmPauses, jfrPath, rec)

	var raw func(link layers.LinkType, ci gopacket.CaptureInfo, data []byte)
	var pcapOut *pcapSink
	if o.pcap {
		pcapOut = &pcapSink{path: filepath.Join(o.out, recording.CaptureFile)}
		if o.tlsKeyLog != "" {
			pcapOut.secrets = tlskeys.NewTail(o.tlsKeyLog)
		}
		raw = pcapOut.write
	}

	meta.Start = time.Now().UTC()
	// meta.json now, so that a recording cut short by a crash is still one.
	if err := rec.Begin(meta); err != nil {
		fmt.Fprintf(stderr, "record: WARNING: %v: a crash would leave the recording unreadable\n", err)
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "record: broker pid %d (Kafka %s), log dirs %s; capturing %s port(s) %v, tracing writes >= %v; Ctrl-C to stop\n",
			pid, output.Escape(orUnknown(meta.Broker.Version)), output.Escape(strings.Join(logDirs, ",")), output.Escape(o.iface), cfg.Ports, o.minLatency)
	}

	var reqErr error
	res, capErr := source.Live(ctx, capture.LiveConfig{Interface: o.iface, Ports: cfg.Ports}, source.Options{Wire: cfg, Topics: topics, TLSKeyLog: o.tlsKeyLog, TLSKeyLogFromBroker: o.tlsKeys == "attach"}, func(r *event.Request) {
		if reqErr == nil {
			reqErr = rec.Request(r)
		}
	}, raw)
	sessions, traceErr := tr.wait()
	<-useDone
	meta.End = time.Now().UTC()

	var errs []error
	errs = append(errs, capErr, traceErr, reqErr)
	var pcapPackets int64
	if pcapOut != nil {
		pcapPackets = pcapOut.packets
		errs = append(errs, pcapOut.close())
	}
	if o.tlsKeyLog != "" {
		errs = append(errs, keepSecrets(o, pcapOut))
	}
	if jfrRec != nil {
		jctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		errs = append(errs, jfrRec.Stop(jctx))
		cancel()
	}
	if jfrPath != "" {
		var err error
		meta.LockWaits, err = recordLockWaits(jfrPath, rec)
		errs = append(errs, err)
	}

	// Counters, losses included.
	meta.Capture = captureCounters(res, pcapPackets)
	st, pids := sessionStats(sessions)
	pauseJFR := jfrPath
	if !o.jvmPauses {
		pauseJFR = ""
	}
	// Without the JVM's pauses the recording still explains the rest:
	// the reason is said, and kept in meta.json.
	var schedErr error
	if meta.Sched, schedErr = sched.stop(st, o.runqMin, pauseJFR, rec); schedErr != nil {
		fmt.Fprintf(stderr, "record: WARNING: no JVM pauses: %s\n", output.Escape(schedErr.Error()))
	}
	meta.Broker.PIDs = pids
	meta.Trace, meta.Clock = traceCounters(st, tr.first(), o)
	closed = true
	errs = append(errs, rec.Close(meta))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	reportRecord(stderr, o, meta, res, st)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
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

// pcapSink keeps the raw capture of a recording. The file is created
// with the first packet, whose link type it takes.
type pcapSink struct {
	path    string
	f       *os.File
	buf     *bufio.Writer
	w       *capture.PcapNGWriter
	err     error
	packets int64
	// secrets is the TLS key log whose new lines go into the capture as
	// Decryption Secrets Blocks, read at most every secretsEvery.
	secrets     *tlskeys.Tail
	secretsRead time.Time
	keyLines    []byte
}

// secretsEvery is how often the key log is looked at for new lines while
// packets are written.
const secretsEvery = 10 * time.Millisecond

func (s *pcapSink) write(link layers.LinkType, ci gopacket.CaptureInfo, data []byte) {
	if s.err != nil {
		return
	}
	if s.w == nil {
		if s.f, s.err = os.Create(s.path); s.err != nil {
			return
		}
		s.buf = bufio.NewWriterSize(s.f, 1<<20)
		if s.w, s.err = capture.NewPcapNGWriter(s.buf, link, capture.MaxPacketBytes); s.err != nil {
			return
		}
	}
	if s.secrets != nil && time.Since(s.secretsRead) >= secretsEvery {
		s.writeSecrets()
	}
	if s.err == nil {
		s.err = s.w.WritePacket(ci, data)
	}
	s.packets++
}

// writeSecrets copies the key log's new lines into the capture.
func (s *pcapSink) writeSecrets() {
	s.secretsRead = time.Now()
	s.keyLines = s.keyLines[:0]
	if err := s.secrets.Next(func(line []byte, _ int) { s.keyLines = append(s.keyLines, line...) }); err != nil {
		s.err = err
		return
	}
	s.err = s.w.WriteSecrets(s.keyLines)
}

func (s *pcapSink) close() error {
	if s.w == nil {
		return s.err
	}
	if s.secrets != nil && s.err == nil {
		s.writeSecrets()
	}
	return errors.Join(s.err, s.w.Flush(), s.buf.Flush(), s.f.Close())
}

// keepSecrets puts the key log's secrets into the recording: all of them
// at the start of the capture, for one-pass readers such as Wireshark (the
// blocks written as it went came after the first packets of the
// connections they are for), and, with --tls-keys attach (the broker's key
// log is outside the recording), a copy of mode 0600 beside it.
func keepSecrets(o *recordOptions, pcapOut *pcapSink) error {
	if pcapOut == nil && o.tlsKeys != "attach" {
		return nil
	}
	data, err := readKeyLogCopy(o.tlsKeyLog)
	if err != nil {
		return fmt.Errorf("TLS key log: %w", err)
	}
	if pcapOut != nil && pcapOut.w != nil {
		if err := capture.InjectSecrets(pcapOut.path, data); err != nil {
			return err
		}
	}
	if o.tlsKeys == "attach" {
		if err := os.WriteFile(filepath.Join(o.out, recording.TLSKeyLogFile), data, 0o600); err != nil {
			return fmt.Errorf("copying the TLS key log: %w", err)
		}
	}
	return nil
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

// attachInfo is what one attach of the tracer to a broker said.
type attachInfo struct {
	pid               int
	offset, uncertain time.Duration
	attached, skipped []string
	mode              string
}

// traceRun is the tracer following the broker into rec.
type traceRun struct {
	mu       sync.Mutex
	attaches []attachInfo
	done     chan struct{}
	sessions []iotrace.Session
	err      error
}

// startTrace starts following the broker with fc, its events into rec,
// and returns once the tracer has attached the first time, or its error
// when it ended before that.
func startTrace(ctx context.Context, stderr io.Writer, quiet bool, fc iotrace.FollowConfig, rec *recording.Writer) (*traceRun, error) {
	t := &traceRun{done: make(chan struct{})}
	firstAttach := make(chan struct{})
	fc.OnAttach = func(tr *iotrace.Tracer) {
		a, s := tr.JournalGroups()
		t.mu.Lock()
		t.attaches = append(t.attaches, attachInfo{tr.PID(), tr.ClockOffset(), tr.ClockUncertainty(), a, s, tr.Mode().String()})
		n := len(t.attaches)
		t.mu.Unlock()
		if n == 1 {
			close(firstAttach)
		} else if !quiet {
			fmt.Fprintf(stderr, "record: tracing the new broker, pid %d\n", tr.PID())
		}
	}
	fc.OnExit = func(pid int) {
		if !quiet {
			fmt.Fprintf(stderr, "record: broker pid %d exited\n", pid)
		}
	}
	go func() {
		defer close(t.done)
		t.sessions, t.err = iotrace.Follow(ctx, fc, rec.Handlers())
	}()
	select {
	case <-firstAttach:
		return t, nil
	case <-t.done:
		if t.err == nil {
			t.err = errors.New("record: ended before the tracer attached")
		}
		return nil, t.err
	}
}

// wait waits for the tracer to end (its context done) and returns its
// sessions, one per broker process it followed.
func (t *traceRun) wait() ([]iotrace.Session, error) {
	<-t.done
	return t.sessions, t.err
}

// first is the first attach's report.
func (t *traceRun) first() attachInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attaches[0]
}

// recordLockWaits copies the lock waits of the JFR file at path into rec
// and counts them; a read error is kept in the counters too.
func recordLockWaits(path string, rec *recording.Writer) (*recording.LockWaitCounters, error) {
	lw := &recording.LockWaitCounters{Source: path}
	st, err := jfr.ReadLockWaits(path, rec.LockWait)
	lw.LockWaits = st.LockWaits
	if err != nil {
		lw.Error = err.Error()
	}
	return lw, err
}

// captureCounters is meta.json's account of the capture, losses included.
func captureCounters(res source.Result, pcapPackets int64) recording.CaptureCounters {
	w := res.Wire
	return recording.CaptureCounters{Packets: res.Capture.Packets, KernelDrops: res.Capture.KernelDrops,
		Requests: w.Requests, Answered: w.Responses, Unanswered: w.Unanswered, SkippedBytes: w.SkippedBytes, Gaps: w.Gaps,
		DecodeErrors: w.DecodeErrors, PcapPackets: pcapPackets, FooterSummary: res.FormatFooter()}
}

// sessionStats sums the tracer's sessions' counters and lists their
// brokers' pids.
func sessionStats(sessions []iotrace.Session) (iotrace.Stats, []int) {
	var st iotrace.Stats
	var pids []int
	for _, se := range sessions {
		iotrace.AddStats(&st, se.Stats)
		pids = append(pids, se.PID)
	}
	return st, pids
}

// traceCounters is meta.json's account of the tracer, losses included,
// and of the clocks its events were put on (first: its first attach).
func traceCounters(st iotrace.Stats, first attachInfo, o *recordOptions) (recording.TraceCounters, recording.Clock) {
	return recording.TraceCounters{Writes: int64(st.Reported), JournalEvents: int64(st.JournalEvents),
			KernelWaits: int64(st.WaitEvents), WaitRingbufDrops: int64(st.WaitRingbufDrops),
			StealIntervals: int64(st.StealEvents), StealRingbufDrops: int64(st.StealRingbufDrops), MinStealNs: int64(o.stealMin),
			OtherFiles: int64(st.OtherFiles), Unnamed: int64(st.Unnamed), RingbufDrops: int64(st.RingbufDrops),
			JournalRingbufDrops: int64(st.JournalRingbufDrops), HistFull: int64(st.HistFull), StartFull: int64(st.StartFull),
			MinLatencyNs: int64(o.minLatency), JournalAttached: first.attached, JournalSkipped: first.skipped,
			Mode: first.mode},
		recording.Clock{CaptureClock: "CLOCK_REALTIME (kernel packet timestamps)",
			TraceClock:         "CLOCK_MONOTONIC, converted to CLOCK_REALTIME",
			TraceClockOffsetNs: int64(first.offset), TraceClockUncertaintyNs: int64(first.uncertain)}
}

// reportRecord prints what was recorded, and always the losses.
func reportRecord(stderr io.Writer, o *recordOptions, meta *recording.Meta, res source.Result, st iotrace.Stats) {
	if !o.quiet {
		fmt.Fprintf(stderr, "record: %s: %d requests (%d answered), %d writes, %d journal/block events in %s\n",
			output.Escape(o.out), res.Wire.Requests, res.Wire.Responses, st.Reported, st.JournalEvents, meta.End.Sub(meta.Start).Round(time.Millisecond))
	}
	if sc := meta.Sched; !o.quiet && sc != nil {
		fmt.Fprintf(stderr, "record: %d run-queue delays and %d wake-ups >= %v, %d connection threads, %d CPU-quota throttle samples of %d, %d JVM pauses (%s)\n",
			sc.RunDelays, sc.Wakeups, o.runqMin, sc.ConnThreads, sc.Throttles, sc.ThrottleSamples, sc.JVMPauses, orNone(sc.JVMPauseSource))
	}
	// Losses are always reported.
	if st.RunDelayRingbufDrops > 0 || st.RunDelayStartFull > 0 || st.ConnRingbufDrops > 0 {
		fmt.Fprintf(stderr, "record: WARNING: lost %d run-queue delays and %d connection threads (ring buffers full), %d waits not timed (start map full)\n",
			st.RunDelayRingbufDrops, st.ConnRingbufDrops, st.RunDelayStartFull)
	}
	if res.Capture.KernelDrops > 0 || st.RingbufDrops > 0 || st.JournalRingbufDrops > 0 {
		fmt.Fprintf(stderr, "record: WARNING: lost %d packets in the kernel, %d writes and %d journal events (ring buffers full)\n",
			res.Capture.KernelDrops, st.RingbufDrops, st.JournalRingbufDrops)
	}
}
