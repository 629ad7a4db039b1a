package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/bench/benchout"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// regressionError is compare's exit status 1: the comparison was printed
// and found a regression, which a CI job should fail on.
func regressionError(rows []compare.Row) error {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = output.Escape(r.Metric) + " " + r.Stat
	}
	noun := "regressions"
	if len(rows) == 1 {
		noun = "regression"
	}
	return &exitError{code: ExitFailure, err: fmt.Errorf("%d %s: %s", len(rows), noun, strings.Join(names, ", "))}
}

// benchFlagError makes flag errors bad input, as the root command does,
// also when the command runs on its own (tests).
func benchFlagError(c *cobra.Command, err error) error {
	return badInput(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
}

// thresholdFlag is --threshold: a percentage ("5%") or a fraction
// ("0.05").
type thresholdFlag float64

func (t *thresholdFlag) String() string {
	return strconv.FormatFloat(float64(*t)*100, 'g', -1, 64) + "%"
}

func (t *thresholdFlag) Type() string { return "percent" }

func (t *thresholdFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	num, percent := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%q: want a percentage (5%%) or a fraction (0.05)", s)
	}
	if percent {
		v /= 100
	} else if v >= 1 {
		// "5" is more likely 5% than 500%: make the user say which.
		return fmt.Errorf("%q: a fraction must be below 1; for a percentage write %s%%", s, s)
	}
	if v == 0 {
		v = 1e-12 // compare.Options reads 0 as the default; this is "any change"
	}
	*t = thresholdFlag(v)
	return nil
}

type benchCompareOptions struct {
	threshold thresholdFlag
	alpha     float64
	format    string
}

func newBenchCompareCmd() *cobra.Command {
	o := benchCompareOptions{threshold: compare.DefaultThreshold}
	cmd := &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Say whether run B is a regression against run A",
		Long: `Compares two results of 'kscope bench run', A the baseline and B the new
run: throughput (msgs/s, MB/s), each latency percentile of every series
both runs have, and the share of requests above a ladder of thresholds
(A's p99 and p99.9, 10, 50, 100 and 500 ms, 1 s): A, B, the change, a 95%
interval of B-A and a verdict.

A verdict of regression or improvement needs the change beyond --threshold
and a test significant at --alpha after Holm's adjustment for all the
tests of the comparison. Each row's test suits what it measures:
throughput and the median by Mann-Whitney over the runs' per-second
samples; p90 to p99.99 by a bootstrap that resamples whole seconds (a
stall's requests are drawn together or not at all); the shares above each
threshold by an exact test of the two counts, divided by the design
effect of A's slow requests clustering in time, so a stall of a few
seconds is seen and ordinary pauses are not called a change. Higher
throughput is better, higher latency worse. Differences between the runs'
workloads or client configs are warned about. docs/compare.md has the
reasoning.

Exit status: 0 no regression, 1 a regression (after printing the
comparison), 2 bad input.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return badInput(fmt.Errorf("want two result files, A.json B.json (got %d)", len(args)))
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchCompare(cmd, args, &o)
		},
	}
	cmd.SetFlagErrorFunc(benchFlagError)
	f := cmd.Flags()
	f.Var(&o.threshold, "threshold", "smallest change that can be a verdict: a percentage (5%) or a fraction (0.05); 0: any significant change")
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the test")
	f.StringVar(&o.format, "format", "table", "output format: table or json")
	check(f, "alpha", &o.alpha, level)
	check(f, "format", &o.format, oneOf("table", "json"))
	return cmd
}

func runBenchCompare(cmd *cobra.Command, args []string, o *benchCompareOptions) error {
	if err := distinctInputs(args); err != nil {
		return err
	}
	a, err := compare.Load(args[0])
	if err != nil {
		return badInput(err)
	}
	b, err := compare.Load(args[1])
	if err != nil {
		return badInput(err)
	}
	c, err := compare.Compare(a, b, compare.Options{Threshold: float64(o.threshold), Alpha: o.alpha})
	if err != nil {
		return badInput(err)
	}
	c.NameA, c.NameB = args[0], args[1]
	if err := benchout.WriteComparison(cmd.OutOrStdout(), c, o.format); err != nil {
		return err
	}
	if regs := c.Regressions(); len(regs) > 0 {
		return regressionError(regs)
	}
	return nil
}

func newBenchReportCmd() *cobra.Command {
	var (
		merged  bool
		htmlOut string
	)
	cmd := &cobra.Command{
		Use:   "report RESULT.json...",
		Short: "Print one or more runs side by side",
		Long: `Prints results of 'kscope bench run' as a table, one column per run: the
workload and client config, where it ran, the achieved rate, the exact
accounting (lost, duplicated), client CPU per message, and the latency
percentiles of every series. With --merged, a last column has the runs'
counts summed and their latency histograms merged. With --html, a page
also draws every series over time, each run's per-second p50, p99 and
maximum on one chart: where a comparison's tail came from.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput(errors.New("want at least one result file"))
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchReport(cmd.OutOrStdout(), args, merged, htmlOut)
		},
	}
	cmd.SetFlagErrorFunc(benchFlagError)
	cmd.Flags().BoolVar(&merged, "merged", false, "add a column for all runs together (latency histograms merged)")
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write an HTML page with each series' latency over time for every run")
	return cmd
}

// runBenchReport prints the runs side by side and, with htmlOut, writes
// their timelines' page; the page's target is checked before any result
// is read.
func runBenchReport(stdout io.Writer, args []string, merged bool, htmlOut string) error {
	if err := distinctInputs(args); err != nil {
		return err
	}
	target := safefile.Target{Path: htmlOut, DefaultName: benchReportDefaultName, Inputs: args}
	if htmlOut != "" {
		if _, err := checkOutput("--html", target); err != nil {
			return err
		}
	}
	runs := make([]benchout.Run, len(args))
	for i, p := range args {
		r, err := compare.Load(p)
		if err != nil {
			return badInput(err)
		}
		runs[i] = benchout.Run{Name: p, Result: r}
	}
	err := benchout.WriteReport(stdout, runs, benchout.ReportOptions{Merged: merged})
	if errors.Is(err, benchout.ErrMerge) {
		return badInput(err)
	}
	if err != nil || htmlOut == "" {
		return err
	}
	_, err = writeOutput("--html", target, func(w io.Writer) error { return benchout.WriteTimeline(w, runs) })
	return err
}
