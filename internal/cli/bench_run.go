package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
)

type benchRunOptions struct {
	cfg      bench.Config
	rate     string
	out      string
	quiet    bool
	idemSet  bool
	lingSet  bool
	topicArg []string
}

// newBenchRunCmd is `kscope bench run`.
func newBenchRunCmd() *cobra.Command {
	var o benchRunOptions
	cmd := &cobra.Command{
		Use:   "run [flags] --out RESULT.json",
		Short: "Open-loop produce and consume load with honest latencies and exact accounting",
		Long: `Produces to a real cluster with franz-go on a fixed open-loop schedule (--rate:
each message has an intended send time; a client that falls behind sends the
overdue messages at once and their lateness shows in the response time) or as
fast as the clients accept (--rate max), while one consumer group reads the
messages back. Prints a line per second on stderr and writes RESULT.json:
the workload, the client settings, the environment, exact totals (every
acknowledged message consumed exactly once, or counted lost or duplicated),
latency percentiles with their HdrHistograms, and a per-second series.

Latencies (µs): service (send to acknowledgement), response (intended send to
acknowledgement: coordinated-omission corrected), end_to_end (send timestamp
header to consumption), and with --sync sync_wait (the acknowledgement read by
the client to the application being told) and broker_rtt.

Ctrl-C ends the run early; the result is still written (interrupted: true).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.idemSet = cmd.Flags().Changed("idempotent")
			o.lingSet = cmd.Flags().Changed("linger")
			return runBenchRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	f := cmd.Flags()
	c := &o.cfg
	f.StringSliceVar(&c.Bootstrap, "bootstrap", []string{"127.0.0.1:9092"}, "HOST:PORT of the cluster (repeatable)")
	f.StringArrayVar(&o.topicArg, "topic", []string{"kscope-bench"}, "topic to produce to and consume (repeatable; created when missing)")
	f.Int32Var(&c.Partitions, "partitions", 0, "partitions of topics created (0: the broker's default)")
	f.Int16Var(&c.ReplicationFactor, "replication-factor", 0, "replication factor of topics created (0: the broker's default)")
	f.IntVar(&c.Producers, "producers", 1, "producing clients")
	f.IntVar(&c.Consumers, "consumers", 1, "members of the consumer group (0: no consumers: no end-to-end latency, no loss check)")
	f.StringVar(&o.rate, "rate", "1000", "messages per second over all producers, on an open-loop schedule; or max")
	f.DurationVar(&c.Duration, "duration", 30*time.Second, "measured part of the run")
	f.DurationVar(&c.Warmup, "warmup", 5*time.Second, "warm-up before it (sent and accounted, not timed)")
	f.BoolVar(&c.Sync, "sync", false, "one message at a time per producer, waiting for its acknowledgement")
	f.StringVar(&c.MessageSize, "message-size", "1024", "payload bytes: N or uniform:MIN-MAX")
	f.StringVar(&c.Keys, "keys", "none", "message keys: none, round-robin, uniform or hot:F (fraction F of the messages on one key)")
	f.IntVar(&c.KeySpace, "key-space", 1024, "distinct keys for round-robin, uniform and hot")
	f.Float64Var(&c.Compressibility, "compressibility", 0, "fraction of each payload that is not random (0..1)")
	f.IntVar(&c.Headers, "headers", 0, "extra record headers per message (besides kscope's id and timestamp)")
	f.StringVar(&c.Acks, "acks", "all", "all, 1 or 0")
	f.StringVar(&c.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	f.DurationVar(&c.Linger, "linger", 5*time.Millisecond, "how long a batch waits for more records (default 0 with --sync)")
	f.IntVar(&c.BatchBytes, "batch-bytes", 0, "maximum batch size in bytes (0: franz-go's 1000012)")
	f.IntVar(&c.MaxInFlight, "max-in-flight", 5, "produce requests in flight per broker (idempotent: at most 5)")
	f.BoolVar(&c.Idempotent, "idempotent", true, "idempotent producer (default true with --acks all, false otherwise)")
	f.DurationVar(&c.DrainTimeout, "drain-timeout", 30*time.Second, "at the end: how long to wait for acknowledgements and for the consumers to see every acknowledged message")
	f.DurationVar(&c.ConnectTimeout, "connect-timeout", 15*time.Second, "how long to wait for the cluster, the topics and the consumer group")
	f.StringVarP(&o.out, "out", "o", "", "write the result here (JSON)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	// The rest is checked by bench.Run before it connects (bench.Config).
	check(f, "bootstrap", &c.Bootstrap, each(hostPort))
	return cmd
}

func runBenchRun(ctx context.Context, stdout, stderr io.Writer, o *benchRunOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c := o.cfg
	if o.out == "" {
		return badInput(errors.New("--out RESULT.json is required"))
	}
	for _, t := range o.topicArg {
		for _, name := range strings.Split(t, ",") {
			if name = strings.TrimSpace(name); name != "" {
				c.Topics = append(c.Topics, name)
			}
		}
	}
	switch strings.ToLower(o.rate) {
	case "max":
		c.RateMax = true
	default:
		r, err := strconv.ParseFloat(o.rate, 64)
		if err != nil {
			return badInput(fmt.Errorf("--rate %q: want messages per second or max", o.rate))
		}
		c.Rate = r
	}
	if !o.idemSet {
		c.Idempotent = c.Acks == "all" || c.Acks == "-1" || c.Acks == ""
	}
	if c.Sync && !o.lingSet {
		c.Linger = 0
	}
	if !o.quiet {
		c.Progress = stderr
	}
	// Refuse a device, a FIFO or an unwritable directory as --out before
	// the run, not after it.
	target := safefile.Target{Path: o.out, DefaultName: benchRunDefaultName}
	if _, err := checkOutput("--out", target); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the process at once
	}()
	res, err := bench.Run(ctx, c)
	if err != nil {
		var ie *bench.InputError
		if errors.As(err, &ie) {
			return badInput(err)
		}
		if errors.Is(err, context.Canceled) {
			return errors.New("interrupted before the load started: no result")
		}
		return err
	}
	written, err := writeOutput("--out", target, func(w io.Writer) error { return bench.WriteResult(w, res) })
	if err != nil {
		return err
	}
	printBenchSummary(stdout, res, written)
	return nil
}

// printBenchSummary prints the headline figures of a result.
func printBenchSummary(w io.Writer, r *bench.Result, path string) {
	t := r.Totals
	state := ""
	if r.Interrupted {
		state = " (interrupted)"
	}
	fmt.Fprintf(w, "%s%s: %.1f s measured, %.0f msg/s, %.2f MB/s, client CPU %.2f µs/msg\n",
		output.Escape(path), state, float64(r.Workload.DurationMs)/1000, t.MsgsPerSec, t.MBPerSec, t.ClientCPUPerMsgUs)
	fmt.Fprintf(w, "messages: sent %d, acked %d, failed %d", t.Sent, t.Acked, t.Failed)
	if r.Workload.Consumers > 0 {
		fmt.Fprintf(w, ", consumed %d, lost %d, duplicated %d", t.Consumed, t.Lost, t.Duplicated)
		if t.ConsumedUnacked > 0 {
			fmt.Fprintf(w, ", consumed but unacknowledged %d", t.ConsumedUnacked)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-11s %10s %10s %10s %10s %10s %10s %10s\n", "latency µs", "count", "p50", "p90", "p99", "p99.9", "p99.99", "max")
	for _, name := range []string{bench.LatencyService, bench.LatencyResponse, bench.LatencyEndToEnd, bench.LatencySyncWait, bench.LatencyBrokerRTT} {
		l := r.Latency[name]
		if l == nil {
			continue
		}
		fmt.Fprintf(w, "%-11s %10d %10d %10d %10d %10d %10d %10d\n", name, l.Count, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.P9999Us, l.MaxUs)
	}
}
