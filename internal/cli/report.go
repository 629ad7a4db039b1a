package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/report"
	"github.com/kscope-dev/kscope/internal/safefile"
)

type reportOptions struct {
	slowRequestInputs
	out     string
	top     int
	maxCols int
	title   string
	target  string
	quiet   bool
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report (DIR | --pcap FILE [--io FILE]) -o FILE",
		Short: "Draw a recording or a capture as one self-contained HTML page",
		Long: `Reads a recording made by 'kscope record', or capture files (--pcap) with
the broker's iotrace --format json output (--io), and writes one HTML file
that needs nothing else to open (no network, no scripts): the
produce-latency heatmap over time, p50/p99/p99.9 over time per API, the
slowest produce requests with the cause explain names for each and the
share of each cause, the stalls, a write-latency heatmap per device with
its journal commits, and the slowest journal commits.

Without --io there are no write or journal charts, and explain has no
writes to go on: most slow requests are then 'unexplained'.

Slow means at or above --slow, by default the --percentile of the produce
latencies; for an agent's slow-request log (meta.json's slow_log), the
agent's own threshold, since a percentile of slow requests alone means
nothing (an explicit --percentile is honoured, with a warning).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.percentileSet = cmd.Flags().Changed("percentile")
			return runReport(cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "", "the HTML file to write (required)")
	o.addFlags(f, "capture file(s) instead of a recording", "iotrace --format json output, with --pcap (optional)")
	f.IntVar(&o.top, "top", 50, "slowest requests and journal commits listed")
	f.IntVar(&o.maxCols, "columns", 200, "time columns of the charts, at most")
	f.StringVar(&o.title, "title", "", "the page's title (default: from the recording or the capture files)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no notes on stderr")
	addTargetVersionFlag(f, &o.target)
	check(f, "top", &o.top, positive)
	check(f, "columns", &o.maxCols, atLeast(2))
	return cmd
}

func runReport(stderr io.Writer, args []string, o *reportOptions) error {
	if err := o.check(args); err != nil {
		return badInput(err)
	}
	if err := distinctInputs(o.pcaps, o.ioFiles); err != nil {
		return err
	}
	// The page must not land on a device, a FIFO or any of the inputs:
	// refused before anything is decoded.
	target := safefile.Target{Path: o.out, DefaultName: reportDefaultName, Inputs: o.inputPaths(args)}
	if _, err := checkOutput("-o", target); err != nil {
		return err
	}
	in, logDirs, cleanup, err := o.inputs(stderr, args)
	if err != nil {
		return err
	}
	defer cleanup()
	// The broker's log dirs (from meta.json) are read for message ids:
	// no page inside them either.
	target.Inputs = append(target.Inputs, logDirs...)
	opts := o.explainOptions(stderr, o.quiet)
	opts.LogDirs = logDirs
	clientOpts, err := clientsOptionsFor(o.target)
	if err != nil {
		return err
	}
	d, err := report.BuildFrom(in, report.Options{
		Explain: opts, Clients: clientOpts,
		Top: o.top, MaxCols: o.maxCols, Title: o.title,
	})
	if err != nil {
		return badInput(err)
	}
	warnLeftOut(stderr, d.LeftOut, o.quiet)
	written, err := writeOutput("-o", target, func(w io.Writer) error { return report.WriteHTML(w, d) })
	if err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "kscope: wrote %s\n", output.Escape(written))
	}
	return nil
}

// warnLeftOut prints what reading the inputs left out (a last line cut
// short by a crash, events whose values cannot be true), one warning a
// line unless quiet.
func warnLeftOut(stderr io.Writer, lines []string, quiet bool) {
	if !quiet {
		for _, l := range lines {
			fmt.Fprintf(stderr, "kscope: warning: %s\n", l)
		}
	}
}

// inputPaths are the files and directories the report reads, which its
// page must not replace nor be written into.
func (o *reportOptions) inputPaths(args []string) []string {
	paths := append([]string{}, args...)
	paths = append(paths, o.pcaps...)
	paths = append(paths, o.ioFiles...)
	paths = append(paths, o.logDirs...)
	for _, p := range []string{o.jfrFile, o.tlsKeyLog} {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths
}

// check validates the flags and arguments before anything is read.
func (o *reportOptions) check(args []string) error {
	if (len(args) == 1) == (len(o.pcaps) > 0) {
		return errors.New("give a recording directory, or --pcap (and --io)")
	}
	if len(args) == 1 && len(o.ioFiles) > 0 {
		return errors.New("--io goes with --pcap: a recording has its own I/O trace")
	}
	if o.out == "" {
		return errors.New("give the HTML file to write with -o")
	}
	return nil
}

// inputs names the files to draw: the recording's, or the captures
// decoded into a temporary requests file (removed by cleanup) with the
// --io files. logDirs are --log-dirs, else the recording's.
func (o *reportOptions) inputs(stderr io.Writer, args []string) (in report.Inputs, logDirs []string, cleanup func(), err error) {
	cleanup = func() {}
	logDirs = o.logDirs
	if len(args) == 1 {
		in, err = report.RecordingInputs(args[0])
		if err != nil {
			return in, nil, cleanup, badInput(err)
		}
		if len(logDirs) == 0 {
			for _, d := range in.Meta.Broker.LogDirs {
				logDirs = append(logDirs, d.Path)
			}
		}
	} else {
		dec, done, err := decodeToTempJSONL(captureInput{pcaps: o.pcaps, ports: o.ports, messageIDHeader: o.messageIDHeader, logDirs: logDirs, tlsKeyLog: o.tlsKeyLog}, stderr, o.quiet)
		if err != nil {
			return in, nil, cleanup, err
		}
		in = report.Inputs{Requests: dec.path, IO: o.ioFiles, Captures: o.pcaps, Start: dec.start, End: dec.end}
		cleanup = done
	}
	// --jfr is read instead of the recording's broker.jfr and besides
	// its lockwaits.jsonl, as in explain.
	if o.jfrFile != "" {
		in.JFR = o.jfrFile
	}
	return in, logDirs, cleanup, nil
}
