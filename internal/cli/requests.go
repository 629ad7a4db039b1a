package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/cluster"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/wire"
)

type requestsOptions struct {
	ports           []uint
	format          string
	apis, topics    []string
	clients         []string
	slow            time.Duration
	summary         bool
	top             int
	messageIDHeader string
	logDirs         []string
	bootstrap       []string
	maxFrame        int
	quiet           bool
	tlsKeyLog       string
}

func newRequestsCmd() *cobra.Command {
	var o requestsOptions
	cmd := &cobra.Command{
		Use:   "requests [flags] CAPTURE...",
		Short: "List every Kafka request and its latency, decoded from packet captures",
		Long: `Reads pcap and pcapng files and prints one row per request, paired with its
response: arrival time (first byte of the request seen), end time (last byte
of the response seen), latency, API, client, and for produce and fetch the
topic-partitions, record counts and message ids.

Several files are read as one capture, in the order given (rotated files).
Counters of everything that could not be decoded are printed on stderr.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRequests(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable); the side of a connection on it is the broker")
	f.StringVar(&o.format, "format", "table", "output format: table, json (JSON Lines) or csv")
	f.StringSliceVar(&o.apis, "api", nil, "only these APIs, by name or key (e.g. produce,fetch)")
	f.StringSliceVar(&o.topics, "topic", nil, "only requests naming these topics (and only their partitions)")
	f.StringSliceVar(&o.clients, "client", nil, "only requests from these clients (ip, ip:port or client id)")
	f.DurationVar(&o.slow, "slow", 0, "a filter: show only answered requests at or above this latency (e.g. 100ms)")
	f.BoolVar(&o.summary, "summary", false, "print latency percentiles per API and topic and the slowest requests instead of rows")
	f.IntVar(&o.top, "top", 10, "with --summary: how many of the slowest requests to list")
	f.StringVar(&o.messageIDHeader, "message-id-header", "message-id", "record header holding message ids (empty: none, and no decompression)")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "broker log dirs: name topics by id from partition.metadata (Produce/Fetch v13+)")
	f.StringSliceVar(&o.bootstrap, "bootstrap", nil, "HOST:PORT of the cluster: name topics by id by asking it")
	f.IntVar(&o.maxFrame, "max-frame", 100<<20, "largest Kafka frame accepted, in bytes (socket.request.max.bytes)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no footer or progress bar on stderr")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", tlsKeyLogHelp)
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "format", &o.format, oneOf("table", "json", "csv"))
	check(f, "api", &o.apis, each(knownAPI))
	check(f, "topic", &o.topics, each(notEmpty))
	check(f, "client", &o.clients, each(notEmpty))
	check(f, "slow", &o.slow, nonNegative)
	check(f, "top", &o.top, positive)
	check(f, "log-dirs", &o.logDirs, each(notEmpty))
	check(f, "bootstrap", &o.bootstrap, each(hostPort))
	check(f, "max-frame", &o.maxFrame, between(minMaxFrame, math.MaxInt32))
	return cmd
}

// minMaxFrame is the smallest --max-frame: below it, ordinary requests
// would count as oversized.
const minMaxFrame = 1024

func runRequests(ctx context.Context, stdout, stderr io.Writer, files []string, o *requestsOptions) error {
	cfg, err := wireConfig(o.ports, o.messageIDHeader)
	if err != nil {
		return err
	}
	cfg.MaxFrameBytes = o.maxFrame
	// Files are read as one capture: one given twice would give every
	// request twice.
	if err := distinctInputs(files); err != nil {
		return err
	}
	cfg.MaxKeepBytes = min(cfg.MaxKeepBytes, o.maxFrame)
	topics, err := topicNames(ctx, o.logDirs, o.bootstrap)
	if err != nil {
		return err
	}
	summaryTop := 0
	if o.summary {
		summaryTop = o.top
	}
	filter := event.RequestFilter{APIs: o.apis, Topics: o.topics, Slow: o.slow, Clients: o.clients}
	sink, err := output.NewRequestSink(stdout, o.format, filter, summaryTop)
	if err != nil {
		return badInput(err)
	}
	opts := source.Options{Wire: cfg, Topics: topics, TLSKeyLog: o.tlsKeyLog}
	var finishBar func()
	if !o.quiet && isTerminal(stderr) {
		opts.Progress, finishBar = progressBar(stderr)
	}
	res, err := source.ReadFiles(files, opts, sink.Add)
	if finishBar != nil {
		finishBar()
	}
	if err != nil {
		// ReadFiles fails only on files it cannot use as captures.
		return badInput(err)
	}
	writeErr := sink.Close()
	if !o.quiet {
		printCaptureWarnings(stderr, res)
		printFooter(stderr, res)
	}
	if writeErr != nil {
		return fmt.Errorf("writing output: %w", writeErr)
	}
	return nil
}

// topicNames names topics by id, for the requests that give ids only
// (Produce and Fetch v13+): from the partition.metadata files of the
// broker log dirs (--log-dirs: unreadable ones are bad input) and by
// asking the cluster (--bootstrap).
func topicNames(ctx context.Context, logDirs, bootstrap []string) (*wire.TopicNames, error) {
	topics := wire.NewTopicNames()
	if len(logDirs) > 0 {
		ids, err := logdir.TopicIDs(logDirs...)
		if err != nil {
			return nil, badInput(fmt.Errorf("--log-dirs: %w", err))
		}
		for id, name := range ids {
			topics.Add(id, name)
		}
	}
	if len(bootstrap) > 0 {
		if ctx == nil {
			ctx = context.Background()
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		ids, err := cluster.TopicIDs(cctx, bootstrap...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("--bootstrap: %w", err)
		}
		for id, name := range ids {
			topics.Add(id, name)
		}
	}
	return topics, nil
}

// progressBar is a progress bar on the terminal stderr for the capture
// files read, and the function that finishes it.
func progressBar(stderr io.Writer) (progress func(file string, done, total int64), finish func()) {
	var bar *progressbar.ProgressBar
	progress = func(file string, done, total int64) {
		if bar == nil || bar.GetMax64() != total {
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr),
				progressbar.OptionSetDescription(output.Escape(file)), progressbar.OptionShowBytes(true),
				progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(200*time.Millisecond))
		}
		bar.Set64(done)
	}
	finish = func() {
		if bar != nil {
			bar.Finish()
		}
	}
	return progress, finish
}

// wireConfig is the wire decoder's default configuration with the
// --port and --message-id-header flags applied.
func wireConfig(ports []uint, messageIDHeader string) (wire.Config, error) {
	cfg := wire.DefaultConfig()
	cfg.Ports = cfg.Ports[:0]
	for _, p := range ports {
		if p == 0 || p > 65535 {
			return cfg, badInput(fmt.Errorf("--port %d is not a TCP port", p))
		}
		cfg.Ports = append(cfg.Ports, uint16(p))
	}
	cfg.MessageIDHeader = messageIDHeader
	return cfg, nil
}
