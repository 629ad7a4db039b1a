package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/explain/explainout"
	"github.com/kscope-dev/kscope/internal/output"
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
	f.DurationVar(&in.slow, "slow", 0, "produce requests at or above this latency are slow, and explained (default: the --percentile; for an agent's slow log, its own threshold)")
	f.Float64Var(&in.percentile, "percentile", 99, "without --slow: the latency percentile that makes a request slow")
	check(f, "pcap", &in.pcaps, each(notEmpty))
	check(f, "io", &in.ioFiles, each(notEmpty))
	check(f, "port", &in.ports, each(tcpPort))
	check(f, "log-dirs", &in.logDirs, each(notEmpty))
	check(f, "slow", &in.slow, nonNegative)
	check(f, "percentile", &in.percentile, percentile)
}

// explainOptions are explain.Run's options from the inputs' flags:
// what makes a request slow, where message ids are read from, and what
// to say on stderr (notes, and the lines left out of what Run reads
// itself, unless quiet; warnings always).
func (in *slowRequestInputs) explainOptions(stderr io.Writer, quiet bool) explain.Options {
	opts := explain.Options{
		Config:          explain.Config{Slow: in.slow, Percentile: in.percentile, PercentileGiven: in.percentileSet},
		LogDirs:         in.logDirs,
		MessageIDHeader: in.messageIDHeader,
		Warn:            func(msg string) { fmt.Fprintf(stderr, "kscope: warning: %s\n", msg) },
	}
	if in.noSegments {
		opts.MessageIDHeader = ""
	}
	if !quiet {
		opts.Note = func(msg string) { fmt.Fprintf(stderr, "kscope: %s\n", msg) }
	}
	return opts
}

// explainError is a failed explain.Run's error for the exit status: the
// output's as it is, the inputs' as bad input.
func explainError(err error) error {
	if isOutputError(err) {
		return err
	}
	return badInput(err)
}

// isOutputError reports whether explain.Run failed to write, not to read.
func isOutputError(err error) bool {
	var oe *explain.OutputError
	return errors.As(err, &oe)
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
	api       string
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

` + explain.CauseHelp("  ", 15) + `  unexplained    nothing accounts for at least --share of its latency,
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
pauses, or the fetch waiting in the leader.
With --api fetch, the consumer fetches are explained instead: each fetch's
time is split into purgatory (waiting for data that was not there, as its
max_wait_ms and min_bytes asked: normal), the rest of the broker's wait,
reading (the network thread asleep on page-cache misses: disk-read) and
sending; a fetch is slow by the part that was not purgatory.
With --api group, the group coordinator's requests are explained (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, ConsumerGroupHeartbeat): each
one's time at the coordinator is split into the group protocol's hold (a
JoinGroup waits for the other members, a follower's SyncGroup for the leader's
assignment) and the coordinator's own part (storing the assignment or the
offsets in __consumer_offsets, answering), which is what is explained; slow from
100 ms unless --slow or --percentile says otherwise. kscope consumers names the request of a
rebalance in which the coordinator itself was slow. See docs/explain.md.`,
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
	f.StringVar(&o.api, "api", explain.APIProduce, "what to explain: produce, fetch (consumer fetches slow beyond their purgatory, the wait for data they asked for), or group (the group coordinator's requests slow beyond the group protocol's holds); --slow and --percentile apply to the part that is not waiting")
	f.StringVar(&o.otlp, "otlp-endpoint", "", "also send each slow request's explanation as an OpenTelemetry trace to this OTLP/HTTP endpoint (host:port or http(s)://host:port)")
	check(f, "share", &o.share, share)
	check(f, "stall", &o.stall, positive)
	check(f, "slow-write", &o.slowWrite, positive)
	check(f, "request", &o.request, requestID)
	check(f, "format", &o.format, oneOf("table", "json"))
	check(f, "api", &o.api, oneOf(explain.APIs()...))
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
	inputs, cleanup, err := o.inputs(stderr, args)
	if err != nil {
		return err
	}
	defer cleanup()
	opts := o.explainOptions(stderr, o.quiet)
	opts.Share, opts.StallMin, opts.SlowWrite = o.share, o.stall, o.slowWrite
	opts.Request, opts.Top, opts.API = only, o.top, o.api
	if only != nil {
		return explainRequest(stdout, inputs, opts, o.format)
	}
	w, tracesDone, err := o.writer(stdout)
	if err != nil {
		return err
	}
	err = explain.Run(context.Background(), inputs, opts, w)
	if err != nil && !isOutputError(err) {
		return badInput(err)
	}
	// What was written is flushed, even when writing failed on the way.
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = &explain.OutputError{Err: ferr}
	}
	if err != nil {
		return err
	}
	return tracesDone()
}

// inputs are explain's inputs: the recordings, or the captures decoded
// into a temporary requests file (removed by cleanup) with the --io
// files.
func (o *explainOptions) inputs(stderr io.Writer, dirs []string) (inputs []explain.Input, cleanup func(), err error) {
	if len(dirs) > 0 {
		for _, d := range dirs {
			inputs = append(inputs, explain.Input{Dir: d, JFR: o.jfrFile})
		}
		return inputs, func() {}, nil
	}
	dec, cleanup, err := decodeToTempJSONL(captureInput{pcaps: o.pcaps, ports: o.ports, messageIDHeader: o.messageIDHeader, logDirs: o.logDirs, tlsKeyLog: o.tlsKeyLog}, stderr, o.quiet)
	if err != nil {
		return nil, nil, err
	}
	return []explain.Input{{Requests: dec.path, IO: o.ioFiles, JFR: o.jfrFile}}, cleanup, nil
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
	if len(args) > 1 && (o.request != "" || len(o.logDirs) > 0 || o.jfrFile != "" || o.api == explain.APIFetch || o.api == explain.APIGroup) {
		return nil, errors.New("--request, --log-dirs, --jfr and --api fetch or group go with one recording, not several")
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

// explainRequest prints the timeline (or JSON) of the one request asked
// for.
func explainRequest(stdout io.Writer, inputs []explain.Input, opts explain.Options, format string) error {
	var found *explain.Finding
	out := explain.OutputFuncs{OnFinding: func(f *explain.Finding) error { found = f; return nil }}
	if err := explain.Run(context.Background(), inputs, opts, out); err != nil {
		return explainError(err)
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
