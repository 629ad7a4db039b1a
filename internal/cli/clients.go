package cli

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/releases"
)

type clientsOptions struct {
	viewInput
	format string
	target string
	top    int
	rules  bool
}

func newClientsCmd() *cobra.Command {
	var o clientsOptions
	cmd := &cobra.Command{
		Use:   "clients [flags] (CAPTURE... | RECORDING)",
		Short: "Who talks to the cluster and how: software, protocol versions, producer and consumer settings, storms",
		Long: `Reads packet captures (or a recording made by 'kscope record') and prints one
row per client (address, SASL principal, client id) with the software it
announced, the API versions it uses, how it produces (acks, compression,
idempotence, records and bytes per batch, inferred linger, throttling) and
consumes (fetch settings, empty fetches, groups and their protocol), how often
it connects and asks for metadata, and its share of the broker's requests.

--target-version flags every request that Kafka release would reject (4.0
removed the protocol versions of clients before 2.1), per client, with the
first and last time seen. Findings are ranked by a table of rules (--rules).`,
		Args: viewArgs(&o.rules),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.rules {
				return writeRules(cmd.OutOrStdout())
			}
			return runClients(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable); the side of a connection on it is the broker")
	f.StringVar(&o.format, "format", "table", "output format: table, json or csv")
	addTargetVersionFlag(f, &o.target)
	f.IntVar(&o.top, "top", 20, "table: how many clients and findings to show")
	f.IntVar(&o.maxFrame, "max-frame", 100<<20, "largest Kafka frame accepted, in bytes (socket.request.max.bytes)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no footer or progress bar on stderr")
	f.BoolVar(&o.rules, "rules", false, "print the rules findings come from (threshold and source) and exit")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", tlsKeyLogHelp)
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "format", &o.format, oneOf(clients.Formats()...))
	check(f, "top", &o.top, positive)
	check(f, "max-frame", &o.maxFrame, between(minMaxFrame, math.MaxInt32))
	return cmd
}

// addTargetVersionFlag adds --target-version, the release the clients
// view checks requests against (clients, report, doctor, agent).
func addTargetVersionFlag(f *pflag.FlagSet, target *string) {
	f.StringVar(target, "target-version", "", "flag the requests this Kafka release would reject, per client (e.g. 4.0; one of "+strings.Join(releases.Names(), ", ")+")")
	check(f, "target-version", target, func(v string) error {
		if v == "" {
			return nil
		}
		_, err := releases.Lookup(v)
		return err
	})
}

// clientsOptionsFor is the clients view's options for --target-version.
func clientsOptionsFor(target string) (clients.Options, error) {
	if target == "" {
		return clients.Options{}, nil
	}
	rel, err := releases.Lookup(target)
	if err != nil {
		return clients.Options{}, badInput(fmt.Errorf("--target-version: %w", err))
	}
	return clients.Options{Target: rel, TargetName: rel.Name}, nil
}

func runClients(stdout, stderr io.Writer, args []string, o *clientsOptions) error {
	opts, err := clientsOptionsFor(o.target)
	if err != nil {
		return err
	}
	agg := clients.New(opts)
	if err := o.read(stderr, args, agg.Add); err != nil {
		return err
	}
	if err := clients.Write(stdout, agg.Report(), o.format, o.top); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// writeRules prints the rules table.
func writeRules(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tTHRESHOLD\tSOURCE")
	for _, r := range clients.Rules() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Severity, r.Threshold, r.Source)
	}
	return tw.Flush()
}
