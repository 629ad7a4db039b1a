package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/benchout"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/lab/fsbench"
	"github.com/kscope-dev/kscope/internal/lab/versions"
	"github.com/kscope-dev/kscope/internal/output"
)

type labVersionsOptions struct {
	kafka     string
	workload  string
	workDir   string
	heapMB    int
	threshold thresholdFlag
	alpha     float64
	format    string
}

func newLabVersionsCmd() *cobra.Command {
	o := labVersionsOptions{threshold: compare.DefaultThreshold}
	cmd := &cobra.Command{
		Use:   "versions --kafka V1,V2[,...] [--workload FILE]",
		Short: "Run one workload against several Kafka releases and compare them",
		Long: `For each release (the first is the baseline): fetches its jars from Maven
Central, starts a fresh single-node KRaft broker of it, runs the workload
(the JSON workload file of 'kscope lab fs'; default 2000 msg/s of 1 KiB,
acks=all, 20 s after 5 s of warm-up) with 'kscope bench run''s open-loop
engine, measures the broker's CPU, and stops it. Then prints each
release's throughput, produce latency and broker CPU per message, and
'kscope bench compare''s verdicts of every release against the first
(change beyond --threshold and Mann-Whitney over per-second samples at
--alpha, Holm-adjusted). Each run's RESULT.json stays in --work-dir for
'kscope bench compare' and 'kscope bench report'.

Releases run one after the other on the same machine: background noise
that changes between them shows up as a difference; run it twice to see
whether a verdict holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runLabVersions(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kafka, "kafka", "", "the releases, comma-separated, the baseline first (e.g. 3.9.1,4.1.2)")
	f.StringVar(&o.workload, "workload", "", "workload JSON file (as for 'kscope lab fs'; default: its default workload)")
	f.StringVar(&o.workDir, "work-dir", "", "directory for the brokers and results (default: a new one under /tmp)")
	f.IntVar(&o.heapMB, "heap-mb", 512, "each broker's heap in MiB")
	f.Var(&o.threshold, "threshold", "smallest change that can be a verdict: a percentage (5%) or a fraction (0.05)")
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the tests")
	f.StringVar(&o.format, "format", "table", "table or json")
	check(f, "kafka", &o.kafka, kafkaReleases)
	check(f, "heap-mb", &o.heapMB, nonNegative)
	check(f, "alpha", &o.alpha, level)
	check(f, "format", &o.format, oneOf("table", "json"))
	return cmd
}

// kafkaReleases is --kafka: two releases or more, each one the lab runs.
func kafkaReleases(spec string) error {
	names := versions.Names(spec)
	if len(names) < 2 {
		return errors.New("give at least two releases, e.g. --kafka 3.9.1,4.1.2")
	}
	for _, v := range names {
		if err := lab.CheckVersion(v); err != nil {
			return err
		}
	}
	return nil
}

func runLabVersions(ctx context.Context, stdout, stderr io.Writer, o *labVersionsOptions) error {
	names := versions.Names(o.kafka)
	if len(names) < 2 {
		return badInput(errors.New("--kafka: give at least two releases, e.g. --kafka 3.9.1,4.1.2"))
	}
	var w fsbench.Workload
	if o.workload != "" {
		var err error
		if w, err = fsbench.LoadWorkload(o.workload); err != nil {
			return badInput(err)
		}
	}
	dir := o.workDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kscope-lab-versions-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := versions.RunAll(ctx, versions.Config{Versions: names, Workload: w, WorkDir: dir, HeapMB: o.heapMB,
		Compare: compare.Options{Threshold: float64(o.threshold), Alpha: o.alpha}, Progress: stderr})
	if err != nil {
		var in *bench.InputError
		if errors.As(err, &in) || res == nil {
			return badInput(err)
		}
		return err
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return writeVersionsTable(stdout, res)
}

func writeVersionsTable(w io.Writer, res *versions.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KAFKA\tMSGS/S\tP50 MS\tP99 MS\tP99.9 MS\tMAX MS\tBROKER CPU S\tCPU µs/MSG\tRESULT")
	for _, r := range res.Runs {
		l := r.Result.Latency[bench.LatencyService]
		if l == nil {
			l = &bench.Latency{}
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%s\n", output.Escape(r.Version), r.Result.Totals.MsgsPerSec,
			usToMs(l.P50Us), usToMs(l.P99Us), usToMs(l.P999Us), usToMs(l.MaxUs), r.BrokerCPUSeconds, r.BrokerCPUPerMsgUs, output.Escape(r.ResultFile))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range res.Comparisons {
		fmt.Fprintln(w)
		if err := benchout.WriteComparison(w, c, "table"); err != nil {
			return err
		}
	}
	return nil
}

func usToMs(us int64) float64 { return float64(us) / 1000 }
