package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/report"
)

type consumersOptions struct {
	viewInput
	format               string
	top                  int
	rules                bool
	lagWarning, lagAlarm time.Duration
	groupSessionTimeout  time.Duration
}

func newConsumersCmd() *cobra.Command {
	var o consumersOptions
	cmd := &cobra.Command{
		Use:   "consumers [flags] (CAPTURE... | RECORDING)",
		Short: "What the consumers do: lag in messages and in time from the wire, commits, end-to-end latency, rebalances",
		Long: `Reads packet captures (or a recording made by 'kscope record') and shows, per
consumer group (or client, for a consumer without a group), topic and partition,
how far its fetch position is behind the high watermark, in messages and in
time (the age of the data at its position, from the batch timestamps the broker
returned), how long it has been behind, its committed offset and the gap to its
position, including consumers that never commit; the end-to-end latency of the
messages produced and fetched in the same capture; and every rebalance of every
group, classic and KIP-848: when it started, which member triggered it and how
(joined, left, timed out), how long its join and sync phases took, and who was
the slowest to rejoin. Findings are ranked by a table of rules (--rules).`,
		Args: viewArgs(&o.rules),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.rules {
				return writeConsumerRules(cmd.OutOrStdout())
			}
			return runConsumers(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable); the side of a connection on it is the broker")
	f.StringVar(&o.format, "format", "table", "output format: table or json")
	f.IntVar(&o.top, "top", 20, "table: how many consumers, rebalances and findings to show")
	f.DurationVar(&o.lagWarning, "lag-warning", consumers.DefaultLagWarning, "a consumer this far behind in time is a warning")
	f.DurationVar(&o.lagAlarm, "lag-alarm", consumers.DefaultLagAlarm, "a consumer this far behind in time is an alarm")
	f.DurationVar(&o.groupSessionTimeout, "group-session-timeout", consumers.DefaultGroupSessionTimeout,
		"KIP-848 groups: the brokers' group.consumer.session.timeout.ms (not on the wire), which dates a silent member's removal")
	f.IntVar(&o.maxFrame, "max-frame", 100<<20, "largest Kafka frame accepted, in bytes (socket.request.max.bytes)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no footer or progress bar on stderr")
	f.BoolVar(&o.rules, "rules", false, "print the rules findings come from (threshold and source) and exit")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", tlsKeyLogHelp)
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "format", &o.format, oneOf(consumers.Formats()...))
	check(f, "top", &o.top, positive)
	check(f, "lag-warning", &o.lagWarning, positive)
	check(f, "lag-alarm", &o.lagAlarm, positive)
	check(f, "group-session-timeout", &o.groupSessionTimeout, positive)
	check(f, "max-frame", &o.maxFrame, between(minMaxFrame, math.MaxInt32))
	return cmd
}

func runConsumers(stdout, stderr io.Writer, args []string, o *consumersOptions) error {
	if o.lagAlarm < o.lagWarning {
		return badInput(fmt.Errorf("--lag-alarm %s is below --lag-warning %s", o.lagAlarm, o.lagWarning))
	}
	copts := consumers.Options{LagWarning: o.lagWarning, LagAlarm: o.lagAlarm, GroupSessionTimeout: o.groupSessionTimeout}
	agg := consumers.New(copts)
	if err := o.read(stderr, args, agg.Add); err != nil {
		return err
	}
	rep := agg.Report()
	if dir, ok := recordingDir(args); ok {
		// A recording's traces say why the coordinator was slow.
		if err := report.ExplainRebalances(context.Background(), explain.Input{Dir: dir}, explain.Options{}, rep, copts); err != nil && !o.quiet {
			fmt.Fprintf(stderr, "kscope consumers: %s\n", output.Escape(err.Error()))
		}
	}
	if err := consumers.Write(stdout, rep, o.format, o.top); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// writeConsumerRules prints the consumers rules table.
func writeConsumerRules(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tTHRESHOLD\tSOURCE")
	for _, r := range consumers.Rules() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Threshold, r.Source)
	}
	return tw.Flush()
}
