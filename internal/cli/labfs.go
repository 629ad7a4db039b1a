package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/lab/fsbench"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/slowdisk"
)

type labFSOptions struct {
	variants  string
	workload  string
	trials    int
	stall     string
	noise     string
	slo       time.Duration
	out       string
	format    string
	workDir   string
	imageSize string
	libs      string
	version   string
	heapMB    int
	port      int
	commit    string
	record    string
	recordOf  string
	threshold thresholdFlag
	alpha     float64
	cleanup   bool
	verbose   bool
	device    string
	seed      uint64
}

// newLabFSCmd is `kscope lab fs`.
func newLabFSCmd() *cobra.Command {
	o := labFSOptions{threshold: compare.DefaultThreshold}
	cmd := &cobra.Command{
		Use:   "fs [flags]",
		Short: "Compare file systems under a real broker: produce latency, writes and journal commits, with verdicts",
		Long: `For each variant (ext4, ext4-writeback, ext4-fastcommit, xfs) and trial, makes
the file system afresh on a loop device backed by a sparse image in --work-dir,
starts a real Kafka broker with its log dir there, adds the --noise (a writer
that fsyncs in a loop on the same file system, and/or one that dirties page
cache for the kernel's writeback) and --stall (fsfreeze) if asked,
runs the open-loop load of 'kscope bench run' with the broker's writes and the
journal commits traced (eBPF), and tears it all down. Variants are interleaved
within each trial round.

With --record DIR, keeps a recording of each variant's first trial (or every
trial) in DIR/<variant>-<trial>, made by kscope record's recorder while the
load runs, and reports what kscope explain says of each.

Prints, per variant, the mean and 95% confidence interval over trials of
produce latency p50/p99/p99.9/max, the share of messages over --slo, write
latency p99, journal commit latency p99 and rate; per metric a verdict against
the first variant (Mann–Whitney on the per-second samples pooled over trials,
Holm-adjusted); and every run. -o writes an HTML page. See docs/labfs.md.

Needs root (loop devices, mount, eBPF). Ctrl-C stops at once and removes
everything the run made; what a killed run left is removed by the next run,
or by --cleanup.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLabFS(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	f := cmd.Flags()
	f.StringVar(&o.variants, "variants", fsbench.DefaultVariants, "variants to compare, the first the baseline; mount options after colons, e.g. ext4:commit=30,xfs:logbsize=256k (docs/labfs.md lists those taken)")
	f.StringVar(&o.commit, "commit-interval", "", "ext4's journal commit interval (commit=) for every ext4 variant without its own, whole seconds 1s..300s (default the kernel's 5s)")
	f.StringVar(&o.record, "record", "", "keep a recording (kscope record's format) of each variant's recorded trials in DIR/<variant>-<trial>, and report what kscope explain says of each; DIR must not exist or be empty")
	f.StringVar(&o.recordOf, "record-trials", fsbench.RecordFirst, "with --record, the trials recorded: first (trial 1 of each variant) or all")
	f.IntVar(&o.port, "port", 0, "the brokers' client port on 127.0.0.1 (default a free one)")
	f.StringVar(&o.workload, "workload", "", "JSON file of the load: rate, producers, message_size, duration, warmup, acks, linger, partitions, ... (default 2000 msg/s of 1 KiB, acks=all, 20 s)")
	f.IntVar(&o.trials, "trials", 3, "runs of each variant")
	f.StringVar(&o.stall, "stall", "", "inject stalls: fsfreeze:DURATION@everyPERIOD, e.g. fsfreeze:300ms@every10s")
	f.StringVar(&o.noise, "noise", "", "noisy neighbours on the same file system, comma-separated: fsync-writer[:SIZE] (SIZE written per fsync, default 256KiB), dirty-writer[:RATE] (RATE per second dirtied without fsync and handed to the kernel's writeback, default 32MiB)")
	f.DurationVar(&o.slo, "slo", 65*time.Millisecond, "produce latency SLO: the share of messages above it is reported")
	f.StringVarP(&o.out, "out", "o", "", "write an HTML report here")
	f.StringVar(&o.format, "format", "table", "table or json")
	f.StringVar(&o.workDir, "work-dir", fsbench.DefaultWorkDir, "where images, mount points, broker dirs and the state file go")
	f.StringVar(&o.imageSize, "image-size", "3GiB", "size of each sparse image")
	f.StringVar(&o.libs, "libs", "", "Kafka jars dir (default: resolved for --version)")
	f.StringVar(&o.version, "version", "", "Apache Kafka release of the brokers (default the lab's)")
	f.IntVar(&o.heapMB, "heap-mb", 0, "broker heap in MiB (default 512)")
	f.Var(&o.threshold, "threshold", "smallest change that can be a verdict: a percentage (5%) or a fraction (0.05)")
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the tests (Holm-adjusted)")
	f.StringVar(&o.device, "device", "", "put every variant on an emulated slow device: a profile ("+strings.Join(slowdisk.Names(), ", ")+"), a profile JSON file, or a 'kscope iotrace --summary --format json' file[#DEV] (docs/slowdisk.md)")
	f.Uint64Var(&o.seed, "device-seed", 1, "seed of the emulated device's latency draws")
	f.BoolVar(&o.cleanup, "cleanup", false, "only remove what a killed run left in --work-dir (mounts, loop devices, brokers, images), and exit")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "also print the load generator's line per second")
	check(f, "variants", &o.variants, func(s string) error { _, err := fsbench.ParseVariants(s); return err })
	check(f, "commit-interval", &o.commit, func(s string) error { _, err := fsbench.ParseCommitInterval(s); return err })
	check(f, "port", &o.port, portOrAny)
	check(f, "record-trials", &o.recordOf, oneOf(fsbench.RecordFirst, fsbench.RecordAll))
	check(f, "trials", &o.trials, positive)
	check(f, "stall", &o.stall, func(s string) error { _, err := fsbench.ParseStall(s); return err })
	check(f, "noise", &o.noise, func(s string) error { _, err := fsbench.ParseNoise(s); return err })
	check(f, "slo", &o.slo, positive)
	check(f, "format", &o.format, oneOf("table", "json"))
	check(f, "work-dir", &o.workDir, notEmpty)
	check(f, "image-size", &o.imageSize, func(s string) error { _, err := fsbench.ParseSize(s); return err })
	check(f, "version", &o.version, optional(lab.CheckVersion))
	check(f, "heap-mb", &o.heapMB, nonNegative)
	check(f, "alpha", &o.alpha, level)
	return cmd
}

func runLabFS(ctx context.Context, stdout, stderr io.Writer, o *labFSOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.cleanup {
		left, err := fsbench.Cleanup(o.workDir)
		if left != nil {
			fmt.Fprintf(stdout, "%s: %s\n", output.Escape(o.workDir), output.Escape(fmt.Sprint(left)))
		}
		return err
	}
	cfg, err := labFSConfig(o, stderr)
	if err != nil {
		return err
	}
	// Refused before anything is started: brokers, loop devices, mounts.
	target := safefile.Target{Path: o.out, DefaultName: labFSDefaultName, Inputs: o.inputPaths()}
	if o.out != "" {
		if _, err := checkOutput("-o", target); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return badInput(errors.New("lab fs needs root: loop devices, mount, fsfreeze and eBPF"))
	}
	ctx, stop := stopOnSignal(ctx, stderr, "lab fs")
	defer stop()
	res, runErr := fsbench.Run(ctx, cfg)
	if res == nil {
		return runErr
	}
	if len(res.Runs) > 0 {
		if err := writeLabFSResult(stdout, stderr, o, target, res); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// labFSConfig is the run the flags ask for: the variants, the workload
// (a file, or the default), the noise, the stalls and the image size
// parsed; the progress on stderr.
func labFSConfig(o *labFSOptions, stderr io.Writer) (fsbench.Config, error) {
	cfg := fsbench.Config{Trials: o.trials, SLO: o.slo, WorkDir: o.workDir, LibsDir: o.libs, Version: o.version,
		HeapMB: o.heapMB, Port: o.port, Record: o.record, RecordTrials: o.recordOf, Threshold: float64(o.threshold), Alpha: o.alpha, Progress: stderr}
	var err error
	if cfg.Variants, err = fsbench.ParseVariants(o.variants); err != nil {
		return cfg, badInput(fmt.Errorf("--variants: %w", err))
	}
	if o.record != "" {
		if err := fsbench.CheckRecordDir(o.record, o.workDir, o.inputPaths()...); err != nil {
			return cfg, badInput(err)
		}
	}
	interval, err := fsbench.ParseCommitInterval(o.commit)
	if err != nil {
		return cfg, badInput(err)
	}
	if cfg.Variants, err = fsbench.WithCommitInterval(cfg.Variants, interval); err != nil {
		return cfg, badInput(err)
	}
	cfg.Workload = fsbench.DefaultWorkload()
	if o.workload != "" {
		if cfg.Workload, err = fsbench.LoadWorkload(o.workload); err != nil {
			return cfg, badInput(err)
		}
	}
	if cfg.Noise, err = fsbench.ParseNoise(o.noise); err != nil {
		return cfg, badInput(err)
	}
	if cfg.Stall, err = fsbench.ParseStall(o.stall); err != nil {
		return cfg, badInput(err)
	}
	if cfg.ImageSize, err = fsbench.ParseSize(o.imageSize); err != nil {
		return cfg, badInput(fmt.Errorf("--image-size: %w", err))
	}
	if o.device != "" {
		p, err := slowdisk.Resolve(o.device)
		if err != nil {
			return cfg, badInput(fmt.Errorf("--device: %w", err))
		}
		cfg.Device, cfg.DeviceSeed = &p, o.seed
	}
	if o.verbose {
		cfg.BenchProgress = stderr
	}
	return cfg, nil
}

// writeLabFSResult prints the result in --format and writes the HTML
// page to -o when asked.
func writeLabFSResult(stdout, stderr io.Writer, o *labFSOptions, target safefile.Target, res *fsbench.Result) error {
	switch o.format {
	case "json":
		if err := fsbench.WriteJSON(stdout, res); err != nil {
			return err
		}
	default:
		if err := fsbench.WriteTable(stdout, res); err != nil {
			return err
		}
	}
	if o.out == "" {
		return nil
	}
	written, err := writeOutput("-o", target, func(w io.Writer) error { return fsbench.WriteHTML(w, res) })
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "lab fs: report written to %s\n", output.Escape(written))
	return nil
}

// inputPaths are the files and directories the run reads, which its page
// must not replace nor be written into.
func (o *labFSOptions) inputPaths() []string {
	var paths []string
	device := o.device
	if _, named := slowdisk.Named(device); named {
		device = ""
	} else if i := strings.LastIndexByte(device, '#'); i >= 0 {
		device = device[:i]
	}
	for _, p := range []string{o.workload, o.libs, device} {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths
}
