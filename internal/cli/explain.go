package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/explain/explainout"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/traceexport"
)

// slowRequestInputs are what explain and report share: where the
// requests and the broker's I/O come from (a recording, or captures with
// iotrace output), how writes are matched to requests, and what makes a
// request slow.
type slowRequestInputs struct {
	pcaps           []string
	ioFiles         []string
	jfrFile         string
	ports           []uint
	logDirs         []string
	noSegments      bool
	messageIDHeader string
	tlsKeyLog       string
	slow            time.Duration
	percentile      float64

	percentileSet bool // --percentile was given, not defaulted
}

// addFlags registers the inputs' flags; ioHelp says how --io goes with
// --pcap for the command.
func (in *slowRequestInputs) addFlags(f *pflag.FlagSet, pcapHelp, ioHelp string) {
	f.StringSliceVar(&in.pcaps, "pcap", nil, pcapHelp)
	f.StringSliceVar(&in.ioFiles, "io", nil, ioHelp)
	f.StringVar(&in.jfrFile, "jfr", "", "a Java Flight Recorder file of the broker: its jdk.JavaMonitorEnter events are lock-wait evidence")
	f.UintSliceVar(&in.ports, "port", []uint{9092}, "broker port, with --pcap")
	f.StringSliceVar(&in.logDirs, "log-dirs", nil, "the broker's log dirs: topic names and exact matching by message id (default: from meta.json)")
	f.BoolVar(&in.noSegments, "no-segments", false, "do not read segment files: match writes by bytes and time only")
	f.StringVar(&in.messageIDHeader, "message-id-header", "message-id", "record header holding message ids")
	f.StringVar(&in.tlsKeyLog, "tls-keylog", "", "with --pcap: "+tlsKeyLogHelp)
	f.DurationVar(&in.slow, "slow", 0, "explain produce requests at or above this latency (default: the --percentile)")
	f.Float64Var(&in.percentile, "percentile", 99, "without --slow: the latency percentile that makes a request slow")
	check(f, "pcap", &in.pcaps, each(notEmpty))
	check(f, "io", &in.ioFiles, each(notEmpty))
	check(f, "port", &in.ports, each(tcpPort))
	check(f, "log-dirs", &in.logDirs, each(notEmpty))
	check(f, "slow", &in.slow, nonNegative)
	check(f, "percentile", &in.percentile, percentile)
}

// idLookup finds writes' message ids in the segment files of logDirs,
// unless --no-segments or there is nothing to look in.
func (in *slowRequestInputs) idLookup(logDirs []string) explain.IDLookup {
	if in.noSegments || len(logDirs) == 0 || in.messageIDHeader == "" {
		return nil
	}
	return explain.SegmentLookup(logDirs, in.messageIDHeader)
}

type explainOptions struct {
	slowRequestInputs
	share     float64
	stall     time.Duration
	slowWrite time.Duration
	request   string
	format    string
	summary   bool
	top       int
	quiet     bool
	otlp      string
}

func newExplainCmd() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain (DIR... | --pcap FILE --io FILE) [flags]",
		Short: "Name the root cause of every slow produce request",
		Long: `Explains every produce request at or above --slow (default: the p99 of the
recording's produce latencies; for an agent's slow-request log, the agent's
threshold, since a percentile of slow requests alone means nothing): joins
it with the broker's writes to its partitions, the journal commits on their
devices and, with a JFR file, the handler threads' lock waits, and names
one cause with its evidence:

  slow-write     its own append to the partition log took most of its time
  lock-wait      it waited while another append to the same partition log
                 was in progress (on the partition lock, or behind the
                 previous request on its connection)
  replication    acks=all: appended early, answered late (followers)
  throttle       the response's throttle time accounts for it
  response-send  the response took most of the time to leave
  network        its bytes were slow to arrive: retransmissions, zero
                 windows, a slow link (the capture's TCP evidence)
  network-thread-blocked
                 the network thread serving its connection was stuck
                 elsewhere (a consumer's fetch read from disk by sendfile)
  cpu-starved    the broker threads carrying it (its handler, the network
                 thread of its connection, the threads holding a lock they
                 slept on) waited in a run queue for a CPU
  park-wait      its handler slept until a broker thread that is not a
                 handler let it go (the log flusher holding an index lock)
  request-queue  every request handler was busy while it waited for one
  gc-pause       the broker's JVM stood still for a garbage collection
  safepoint      the broker's JVM stood still for another VM operation
  cpu-steal      the hypervisor took the CPU from the broker's threads
  unexplained    nothing accounts for at least --share of its latency,
                 alone or together with other causes placed in time

A slow write that overlapped a jbd2 commit or XFS log write on the same
device for most of its time has root "journal". Writes are matched to a
request exactly by message id when the segment files are readable (the log
dirs in meta.json, or --log-dirs), else by byte count and time.

DIR is a recording made by 'kscope record'. Without one, give a capture
(--pcap) and iotrace JSON output (--io).

With the recordings of several brokers of one cluster (one per broker, made
at the same time), their clocks are aligned from the replica Fetch requests
both ends captured (NTP-style; the offsets and their error bounds are
printed first), and each broker's slow requests are explained in turn. A
leader's wait for its followers (replication) then names the follower whose
fetch ended it and what the follower's part went to (follower_cause): its
own appends (slow-write, with the journal or a frozen file system), the
network between the two, its fetcher thread's waits for a CPU, its JVM's
pauses, or the fetch waiting in the leader. See docs/explain.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.percentileSet = cmd.Flags().Changed("percentile")
			return runExplain(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	o.addFlags(f, "capture file(s) instead of a recording (with --io)", "iotrace --format json output (with --pcap)")
	f.Float64Var(&o.share, "share", 0.5, "part of a request's latency a cause must account for")
	f.DurationVar(&o.stall, "stall", 50*time.Millisecond, "writes at least this long are grouped into stalls per device")
	f.DurationVar(&o.slowWrite, "slow-write", 10*time.Millisecond, "appends at least this long are listed with the journal commits that overlapped them")
	f.StringVar(&o.request, "request", "", "show the timeline of one request, CLIENT/CORRELATION_ID (client ip:port or port)")
	f.StringVar(&o.format, "format", "table", "output format: table or json (JSON Lines: one object per slow request, then {\"summary\":...})")
	f.BoolVar(&o.summary, "summary", false, "print only the summary")
	f.IntVar(&o.top, "top", 10, "rows in the summary's worst-of lists")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no notes on stderr")
	f.StringVar(&o.otlp, "otlp-endpoint", "", "also send each slow request's explanation as an OpenTelemetry trace to this OTLP/HTTP endpoint (host:port or http(s)://host:port)")
	check(f, "share", &o.share, share)
	check(f, "stall", &o.stall, positive)
	check(f, "slow-write", &o.slowWrite, positive)
	check(f, "request", &o.request, requestID)
	check(f, "format", &o.format, oneOf("table", "json"))
	check(f, "top", &o.top, positive)
	check(f, "otlp-endpoint", &o.otlp, otlpEndpoint)
	return cmd
}

// requestID is --request: CLIENT/CORRELATION_ID.
func requestID(s string) error {
	_, err := explain.ParseRequestID(s)
	return err
}

func runExplain(stdout, stderr io.Writer, args []string, o *explainOptions) error {
	only, err := o.validate(args)
	if err != nil {
		return badInput(err)
	}
	if err := distinctInputs(args, o.pcaps, o.ioFiles); err != nil {
		return err
	}
	if len(args) > 1 {
		return runExplainCluster(stdout, stderr, args, o)
	}
	var (
		scan     *explain.Scan
		idx      *explain.Index
		logDirs  = o.logDirs
		jfrPath  = o.jfrFile
		slow     = o.slow
		slowFrom string
		missing  []string
	)
	if len(args) == 1 {
		rec, err := explain.LoadRecording(args[0], only)
		if err != nil {
			return badInput(err)
		}
		slow, slowFrom = slowLogThreshold(stderr, args[0], rec.Meta, o.slow, o.percentileSet)
		missing = append(rec.Meta.MissingEvidence(), warnLeftOut(stderr, rec.Tally.Warnings(), o.quiet)...)
		if len(logDirs) == 0 {
			logDirs = rec.LogDirs()
		}
		if jfrPath == "" {
			jfrPath = rec.JFR
		}
		scan, idx = rec.Scan, rec.Index
	} else {
		dec, cleanup, err := decodeToTempJSONL(captureInput{pcaps: o.pcaps, ports: o.ports, messageIDHeader: o.messageIDHeader, logDirs: logDirs, tlsKeyLog: o.tlsKeyLog}, stderr, o.quiet)
		if err != nil {
			return err
		}
		defer cleanup()
		var scanErr error
		scanned := make(chan struct{})
		tally := &recording.Tally{}
		go func() {
			defer close(scanned)
			scan, scanErr = explain.ScanRequestsWith(recording.Reader{Tally: tally}, dec.path, only)
		}()
		idx = explain.NewIndex()
		// --io may be a pipe: it is read once.
		err = explain.LoadIOWith(recording.Reader{Tally: tally, Mode: safefile.Stream}, idx, o.ioFiles...)
		<-scanned
		if err = errors.Join(err, scanErr); err != nil {
			return badInput(err)
		}
		missing = warnLeftOut(stderr, tally.Warnings(), o.quiet)
	}
	if err := readLockWaits(stderr, idx, jfrPath, o.quiet); err != nil {
		return err
	}
	e := explain.New(o.config(slow), idx, o.idLookup(logDirs))
	if only != nil {
		return explainOne(stdout, e, scan, o.format)
	}
	w, tracesDone, err := o.writer(stdout)
	if err != nil {
		return err
	}
	sum, writeErr, err := runExplainer(e, scan, o.top, w)
	if err != nil {
		return badInput(err)
	}
	if slowFrom != "" {
		sum.ThresholdFrom = slowFrom
	}
	sum.MissingEvidence = missing
	if writeErr == nil {
		writeErr = w.Summary(sum)
	}
	if ferr := w.Flush(); writeErr == nil {
		writeErr = ferr
	}
	if writeErr != nil {
		return fmt.Errorf("writing output: %w", writeErr)
	}
	return tracesDone()
}

// validate checks the options against the arguments, and parses
// --request.
func (o *explainOptions) validate(args []string) (*explain.RequestID, error) {
	if (len(args) >= 1) == (len(o.pcaps) > 0) {
		return nil, errors.New("give recording directories, or --pcap and --io")
	}
	if len(o.pcaps) > 0 && len(o.ioFiles) == 0 {
		return nil, errors.New("--pcap needs --io (the broker's iotrace --format json output)")
	}
	if len(args) > 1 && (o.request != "" || len(o.logDirs) > 0 || o.jfrFile != "") {
		return nil, errors.New("--request, --log-dirs and --jfr go with one recording, not several")
	}
	if o.request == "" {
		return nil, nil
	}
	id, err := explain.ParseRequestID(o.request)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

func (o *explainOptions) config(slow time.Duration) explain.Config {
	return explain.Config{Slow: slow, Percentile: o.percentile, Share: o.share, StallMin: o.stall, SlowWrite: o.slowWrite}
}

// readLockWaits adds a JFR file's lock waits to idx ("" : none).
func readLockWaits(stderr io.Writer, idx *explain.Index, jfrPath string, quiet bool) error {
	if jfrPath == "" {
		return nil
	}
	st, err := jfr.ReadLockWaits(jfrPath, func(l *event.LockWait) error { idx.AddLockWait(l); return nil })
	if err != nil {
		return badInput(err)
	}
	if !quiet {
		fmt.Fprintf(stderr, "kscope: %s: %d lock waits\n", output.Escape(jfrPath), st.LockWaits)
	}
	return nil
}

// explainOne prints the timeline (or JSON) of the one request asked for.
func explainOne(stdout io.Writer, e *explain.Explainer, scan *explain.Scan, format string) error {
	var found *explain.Finding
	if _, err := e.Run(scan, explain.RunOptions{}, func(f *explain.Finding) error { found = f; return nil }); err != nil {
		return badInput(err)
	}
	if format == "json" {
		j := output.NewJSONLines(stdout)
		if err := j.Encode(found); err != nil {
			return err
		}
		return j.Flush()
	}
	return explainout.WriteTimeline(stdout, found)
}

// tracesWriter also exports every finding as a trace.
type tracesWriter struct {
	explainout.Writer
	x *traceexport.Exporter
}

func (t tracesWriter) Finding(f *explain.Finding) error {
	t.x.Finding(f)
	return t.Writer.Finding(f)
}

// writer is the findings' writer for --format, which also exports them
// to --otlp-endpoint when given; done flushes and stops the exporter.
func (o *explainOptions) writer(stdout io.Writer) (w explainout.Writer, done func() error, err error) {
	if w, err = explainout.NewWriter(stdout, o.format, !o.summary); err != nil {
		return nil, nil, badInput(err)
	}
	if o.otlp == "" {
		return w, func() error { return nil }, nil
	}
	x, err := traceexport.New(context.Background(), traceexport.Config{Endpoint: o.otlp})
	if err != nil {
		return nil, nil, badInput(err)
	}
	return tracesWriter{w, x}, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := x.Shutdown(ctx); err != nil {
			return fmt.Errorf("exporting traces to %s: %w", o.otlp, err)
		}
		return nil
	}, nil
}

// runExplainer writes each finding to w and returns the summary; the
// first write error is returned apart, the run goes on.
func runExplainer(e *explain.Explainer, scan *explain.Scan, top int, w explainout.Writer) (*explain.Summary, error, error) {
	var writeErr error
	sum, err := e.Run(scan, explain.RunOptions{Top: top}, func(f *explain.Finding) error {
		if writeErr == nil {
			writeErr = w.Finding(f)
		}
		return nil
	})
	return sum, writeErr, err
}

// runExplainCluster explains several brokers' recordings together: their
// clocks are aligned from the replica fetches both ends captured, and
// each broker's slow requests are explained with the others as its
// peers, so that a wait for a follower names the follower's cause.
func runExplainCluster(stdout, stderr io.Writer, dirs []string, o *explainOptions) error {
	recs := make([]*explain.Recording, len(dirs))
	for i, d := range dirs {
		rec, err := explain.LoadRecording(d, nil)
		if err != nil {
			return badInput(err)
		}
		warnLeftOut(stderr, rec.Tally.Warnings(), o.quiet)
		if err := readLockWaits(stderr, rec.Index, rec.JFR, o.quiet); err != nil {
			return err
		}
		recs[i] = rec
	}
	cl, err := explain.NewCluster(recs)
	if err != nil {
		return badInput(err)
	}
	w, tracesDone, err := o.writer(stdout)
	if err != nil {
		return err
	}
	if err := w.Clocks(cl); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	for i, rec := range recs {
		if !cl.Aligned[i] && !o.quiet {
			fmt.Fprintf(stderr, "kscope: warning: %s (broker %d) shares no replica fetch with the others: its clock is not aligned, its followers are not followed\n", output.Escape(rec.Dir), rec.NodeID)
		}
		slow, slowFrom := slowLogThreshold(stderr, rec.Dir, rec.Meta, o.slow, o.percentileSet)
		e := explain.New(o.config(slow), rec.Index, o.idLookup(rec.LogDirs()))
		e.SetPeers(cl.Peers(i))
		if err := w.Broker(rec.NodeID, rec.Dir); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		sum, writeErr, err := runExplainer(e, rec.Scan, o.top, w)
		if err != nil {
			return badInput(err)
		}
		if slowFrom != "" {
			sum.ThresholdFrom = slowFrom
		}
		id := rec.NodeID
		sum.MissingEvidence, sum.NodeID, sum.Clock = append(rec.Meta.MissingEvidence(), rec.Tally.Warnings()...), &id, cl.Shift(i)
		if writeErr == nil {
			writeErr = w.Summary(sum)
		}
		if writeErr != nil {
			return fmt.Errorf("writing output: %w", writeErr)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return tracesDone()
}

// warnLeftOut prints what reading the inputs left out (a last line cut
// short by a crash, events whose values cannot be true), one warning a
// line unless quiet, and returns the lines for the summary.
func warnLeftOut(stderr io.Writer, lines []string, quiet bool) []string {
	if !quiet {
		for _, l := range lines {
			fmt.Fprintf(stderr, "kscope: warning: %s\n", l)
		}
	}
	return lines
}

// slowLogFrom names the slow threshold when it is an agent slow log's.
const slowLogFrom = "agent slow log"

// slowLogThreshold returns the slow threshold for the recording at src:
// --slow when given; else, when the recording is an agent's slow-request
// log, the agent's own threshold (with slowLogFrom), since a percentile
// of a file that holds only slow requests ranks those, not the broker's
// requests. An explicit --percentile is still honoured, with a warning.
// Otherwise 0: the percentile decides.
func slowLogThreshold(stderr io.Writer, src string, meta *recording.Meta, slow time.Duration, percentileSet bool) (time.Duration, string) {
	// A slow log without a threshold kept every request: its percentiles
	// are the broker's.
	if slow > 0 || meta == nil || meta.SlowLog == nil || meta.SlowLog.ThresholdMs <= 0 {
		return slow, ""
	}
	sl := meta.SlowLog
	if percentileSet {
		fmt.Fprintf(stderr, "kscope: warning: %s is an agent slow-request log (requests of %s ms and more only): the percentile ranks those, not all of the broker's requests\n",
			output.Escape(src), strconv.FormatFloat(sl.ThresholdMs, 'f', -1, 64))
		return 0, ""
	}
	return time.Duration(sl.ThresholdMs * float64(time.Millisecond)), slowLogFrom
}
