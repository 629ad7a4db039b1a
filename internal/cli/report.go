package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/report"
)

type reportOptions struct {
	out        string
	slow       time.Duration
	percentile float64
	top        int
	maxCols    int
	title      string
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report DIR -o FILE",
		Short: "Draw a recording as one self-contained HTML page",
		Long: `Reads a recording made by 'kscope record' and writes one HTML file that
needs nothing else to open (no network, no scripts): the produce-latency
heatmap over time, p50/p99/p99.9 over time per API, the slowest produce
requests with the cause explain names for each and the share of each
cause, the stalls, a write-latency heatmap per device with its journal
commits, and the slowest journal commits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.ErrOrStderr(), args[0], &o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "", "the HTML file to write (required)")
	f.DurationVar(&o.slow, "slow", 0, "explain produce requests at or above this latency (default: the --percentile)")
	f.Float64Var(&o.percentile, "percentile", 99, "without --slow: the latency percentile that makes a request slow")
	f.IntVar(&o.top, "top", 50, "slowest requests and journal commits listed")
	f.IntVar(&o.maxCols, "columns", 200, "time columns of the charts, at most")
	f.StringVar(&o.title, "title", "", "the page's title (default: from the recording)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runReport(stderr io.Writer, dir string, o *reportOptions) error {
	if o.out == "" {
		return badInput(errors.New("give the HTML file to write with -o"))
	}
	if o.percentile <= 0 || o.percentile > 100 {
		return badInput(fmt.Errorf("--percentile %v: want (0, 100]", o.percentile))
	}
	if o.top <= 0 || o.maxCols < 2 {
		return badInput(errors.New("--top and --columns must be positive (--columns at least 2)"))
	}
	d, err := report.Build(dir, report.Options{
		Explain: explain.Config{Slow: o.slow, Percentile: o.percentile},
		Top:     o.top, MaxCols: o.maxCols, Title: o.title,
	})
	if err != nil {
		return badInput(err)
	}
	// Written next to the target and renamed: never a half-written report.
	tmp, err := os.CreateTemp(filepath.Dir(o.out), ".kscope-report-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := report.WriteHTML(tmp, d); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), o.out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "kscope: wrote %s\n", o.out)
	return nil
}
