package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/tlskeys"
	"github.com/kscope-dev/kscope/internal/wire"
)

// Options say what to record and where. The zero value of each field is
// its default unless said otherwise.
type Options struct {
	// Out is the recording directory to create (it must not exist or be
	// empty).
	Out string
	// PID is the broker's pid; Follow, when set, follows the broker
	// (kafka.Kafka) across restarts.
	PID    int
	Follow bool
	// LogDirs are the broker's log dirs (none: found from its open files).
	LogDirs []string
	// Wire is the decoder's configuration: the broker's ports and the
	// message-id header.
	Wire wire.Config
	// Interface is the one to capture on ("any": all).
	Interface string
	// JFR is "start" (a flight recording is started with jcmd and kept),
	// a flight recording FILE whose lock waits are read at the end, or "".
	JFR string
	// MinLatency, WaitMinLatency, StealMin and RunQueueMin are the
	// tracer's thresholds (kscope record's flags of the same names).
	MinLatency, WaitMinLatency, StealMin, RunQueueMin time.Duration
	SyscallProbes                                     iotrace.SyscallProbe
	// Sched records the scheduling evidence (run-queue delays, wake-ups,
	// connection threads, cgroup throttling); JVMPauses the JVM's pauses.
	Sched, JVMPauses bool
	// PCAP keeps the raw capture as capture.pcapng.
	PCAP bool
	// TLSKeyLog is a key log file to decrypt TLS with; TLSKeysAttach
	// loads the key-log agent into the broker instead.
	TLSKeyLog     string
	TLSKeysAttach bool
	// Notes takes the progress notes and warnings, one line each,
	// prefixed by Name (default "record"); Quiet leaves out all but the
	// warnings and losses.
	Notes io.Writer
	Name  string
	Quiet bool
}

// Result is what a recording holds, for the caller's summary.
type Result struct {
	Meta    *recording.Meta
	Capture source.Result
	Trace   iotrace.Stats
}

// InputError is an error of the caller's input (the output directory, a
// key log that cannot be followed): nothing was recorded.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func (o *Options) notef(format string, args ...any) {
	if o.Notes != nil && !o.Quiet {
		fmt.Fprintf(o.Notes, o.Name+": "+format+"\n", args...)
	}
}

func (o *Options) warnf(format string, args ...any) {
	if o.Notes != nil {
		fmt.Fprintf(o.Notes, o.Name+": "+format+"\n", args...)
	}
}

// Run records until ctx ends, then closes the recording cleanly, with
// every source's counters (losses included) in meta.json.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Name == "" {
		o.Name = "record"
	}
	r := &run{o: &o}
	if err := r.start(ctx); err != nil {
		r.abandon()
		return nil, err
	}
	o.notef("broker pid %d (Kafka %s), log dirs %s; capturing %s port(s) %v, tracing writes >= %v; Ctrl-C to stop",
		o.PID, output.Escape(orUnknown(r.meta.Broker.Version)), output.Escape(strings.Join(r.logDirs, ",")), output.Escape(o.Interface), o.Wire.Ports, o.MinLatency)

	var reqErr error
	res, capErr := source.Live(ctx, capture.LiveConfig{Interface: o.Interface, Ports: o.Wire.Ports}, r.sourceOptions(), func(req *event.Request) {
		if reqErr == nil {
			reqErr = r.rec.Request(req)
		}
	}, r.raw())
	return r.finish(res, capErr, reqErr)
}

// run is one recording in progress: its writer and the sources that
// write into it beside the capture.
type run struct {
	o       *Options
	meta    *recording.Meta
	logDirs []string
	topics  *wire.TopicNames
	rec     *recording.Writer
	tr      *traceRun
	jfrPath string
	jfrRec  *jfr.Recording
	useDone chan struct{}
	sched   *schedSources
	pcapOut *pcapSink
}

// start creates the recording and starts every source but the capture.
func (r *run) start(ctx context.Context) (err error) {
	o := r.o
	if r.logDirs = o.LogDirs; len(r.logDirs) == 0 {
		if r.logDirs, err = iotrace.LogDirsOf(o.PID); err != nil {
			return err
		}
	}
	r.meta = &recording.Meta{Tool: "kscope record", Kernel: hostinfo.Kernel(), Interface: o.Interface, Ports: o.Wire.Ports,
		Broker: recording.BrokerOf(o.PID, r.logDirs)}
	r.meta.Host, _ = os.Hostname()
	r.topics = wire.NewTopicNames()
	if ids, err := logdir.TopicIDs(hostinfo.AllSeenBy(o.PID, r.logDirs)...); err == nil {
		for id, name := range ids {
			r.topics.Add(id, name)
		}
	}
	if r.rec, err = recording.Create(o.Out); err != nil {
		return &InputError{err}
	}
	if o.TLSKeysAttach {
		// Before the capture: connections that start after the attach
		// are decrypted. The agent loads into a JVM once: every
		// recording of this broker shares its key log in
		// keylogagent.HostDir, and keeps a copy.
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		o.TLSKeyLog, err = keylogagent.AttachHost(actx, o.PID)
		cancel()
		if err != nil {
			return fmt.Errorf("--tls-keys attach: %w", err)
		}
		o.notef("key-log agent in pid %d: TLS connections that start from now on are decrypted (keys in %s, mode 0600)", o.PID, output.Escape(o.TLSKeyLog))
	}
	// The tracer follows the broker across restarts with Follow. The
	// first attach happens before anything else starts, so that a tracer
	// that cannot attach ends the recording before the capture opens.
	if r.tr, err = startTrace(ctx, o, o.traceConfig(), r.rec); err != nil {
		return err
	}
	if r.jfrPath, r.jfrRec, err = o.startJFR(ctx); err != nil {
		return err
	}
	// The host's USE figures every second into use.jsonl, as kscope use,
	// from before the JVM's log is turned on: jcmd's attach takes
	// seconds on a saturated host, when these figures matter most.
	r.useDone = make(chan struct{})
	go func() { defer close(r.useDone); recordUse(ctx, o, r.meta.Broker.LogDirs, r.rec) }()
	// The capture starts after it: the attach and the VM operation that
	// turns the log on stop the JVM (up to 600 ms seen under load), and
	// with the log not yet on that stop would be in the recording
	// unexplained.
	r.sched = startSchedSources(ctx, o, r.jfrPath, r.rec)
	r.meta.Start = time.Now().UTC()
	// meta.json now, so that a recording cut short by a crash is still one.
	if err := r.rec.Begin(r.meta); err != nil {
		o.warnf("WARNING: %v: a crash would leave the recording unreadable", err)
	}
	return nil
}

// abandon closes a recording that could not start.
func (r *run) abandon() {
	if r.rec != nil {
		r.rec.Close(nil)
	}
}

// sourceOptions are the capture's decoding options.
func (r *run) sourceOptions() source.Options {
	return source.Options{Wire: r.o.Wire, Topics: r.topics, TLSKeyLog: r.o.TLSKeyLog, TLSKeyLogFromBroker: r.o.TLSKeysAttach}
}

// raw is the capture's raw packet sink: capture.pcapng with PCAP.
func (r *run) raw() func(link layers.LinkType, ci gopacket.CaptureInfo, data []byte) {
	if !r.o.PCAP {
		return nil
	}
	r.pcapOut = &pcapSink{path: filepath.Join(r.o.Out, recording.CaptureFile)}
	if r.o.TLSKeyLog != "" {
		r.pcapOut.secrets = tlskeys.NewTail(r.o.TLSKeyLog)
	}
	return r.pcapOut.write
}

// finish waits for the sources to end, reads what is read at the end
// (lock waits, JVM pauses), and closes the recording with its counters.
func (r *run) finish(res source.Result, capErr, reqErr error) (*Result, error) {
	o, meta := r.o, r.meta
	sessions, traceErr := r.tr.wait()
	<-r.useDone
	meta.End = time.Now().UTC()

	errs := []error{capErr, traceErr, reqErr}
	var pcapPackets int64
	if r.pcapOut != nil {
		pcapPackets = r.pcapOut.packets
		errs = append(errs, r.pcapOut.close())
	}
	if o.TLSKeyLog != "" {
		errs = append(errs, keepSecrets(o, r.pcapOut))
	}
	if r.jfrRec != nil {
		jctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		errs = append(errs, r.jfrRec.Stop(jctx))
		cancel()
	}
	if r.jfrPath != "" {
		var err error
		meta.LockWaits, err = recordLockWaits(r.jfrPath, r.rec)
		errs = append(errs, err)
	}

	// Counters, losses included.
	meta.Capture = captureCounters(res, pcapPackets)
	st, pids := sessionStats(sessions)
	pauseJFR := r.jfrPath
	if !o.JVMPauses {
		pauseJFR = ""
	}
	// Without the JVM's pauses the recording still explains the rest:
	// the reason is said, and kept in meta.json.
	var schedErr error
	if meta.Sched, schedErr = r.sched.stop(st, o.RunQueueMin, pauseJFR, r.rec); schedErr != nil {
		o.warnf("WARNING: no JVM pauses: %s", output.Escape(schedErr.Error()))
	}
	meta.Broker.PIDs = pids
	meta.Trace, meta.Clock = traceCounters(st, r.tr.first(), o)
	errs = append(errs, r.rec.Close(meta))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := &Result{Meta: meta, Capture: res, Trace: st}
	o.report(out)
	return out, nil
}

// traceConfig is the tracer's configuration for these options.
func (o *Options) traceConfig() iotrace.FollowConfig {
	fc := iotrace.FollowConfig{Config: iotrace.Config{PID: o.PID, LogDirs: o.LogDirs, MinLatency: o.MinLatency, Journal: true,
		SyscallProbes: o.SyscallProbes, Waits: true, WaitMinLatency: o.WaitMinLatency, Steal: true, StealOptional: true, StealMin: o.StealMin,
		RunQueue: o.Sched, RunQueueMin: o.RunQueueMin, Conns: o.Sched, Ports: o.Wire.Ports,
		// The pages the broker reads from disk: a consumer fetch's
		// data from disk (explain --api fetch). Optional: a kernel
		// without the tracepoint records without it.
		PageCache: true}}
	if o.Follow {
		fc.Find = iotrace.FindBroker
	}
	return fc
}

// startJFR starts the flight recording of JFR "start", and returns the
// flight recording whose lock waits (and pauses) are read at the end.
func (o *Options) startJFR(ctx context.Context) (string, *jfr.Recording, error) {
	if o.JFR != "start" {
		return o.JFR, nil, nil
	}
	path := filepath.Join(o.Out, recording.JFRFile)
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := jfr.Start(jctx, o.PID, "kscope-record", path, time.Millisecond)
	if err != nil {
		return "", nil, fmt.Errorf("--jfr start: %w", err)
	}
	return path, r, nil
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

// report prints what was recorded, and always the losses.
func (o *Options) report(r *Result) {
	meta, res, st := r.Meta, r.Capture, r.Trace
	o.notef("%s: %d requests (%d answered), %d writes, %d journal/block events in %s",
		output.Escape(o.Out), res.Wire.Requests, res.Wire.Responses, st.Reported, st.JournalEvents, meta.End.Sub(meta.Start).Round(time.Millisecond))
	if sc := meta.Sched; sc != nil {
		o.notef("%d run-queue delays and %d wake-ups >= %v, %d connection threads, %d CPU-quota throttle samples of %d, %d JVM pauses (%s)",
			sc.RunDelays, sc.Wakeups, o.RunQueueMin, sc.ConnThreads, sc.Throttles, sc.ThrottleSamples, sc.JVMPauses, orNone(sc.JVMPauseSource))
	}
	// Losses are always reported.
	if st.RunDelayRingbufDrops > 0 || st.RunDelayStartFull > 0 || st.ConnRingbufDrops > 0 {
		o.warnf("WARNING: lost %d run-queue delays and %d connection threads (ring buffers full), %d waits not timed (start map full)",
			st.RunDelayRingbufDrops, st.ConnRingbufDrops, st.RunDelayStartFull)
	}
	if res.Capture.KernelDrops > 0 || st.RingbufDrops > 0 || st.JournalRingbufDrops > 0 {
		o.warnf("WARNING: lost %d packets in the kernel, %d writes and %d journal events (ring buffers full)",
			res.Capture.KernelDrops, st.RingbufDrops, st.JournalRingbufDrops)
	}
}
