package fsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/slowdisk"
)

// Config is one `kscope lab fs`.
type Config struct {
	// Variants are compared against the first.
	Variants []Variant
	// Trials is the number of runs of each variant (default 3).
	Trials   int
	Workload Workload
	Noise    *Noise // nil: none
	Stall    *Stall // nil: none
	// SLO is the produce latency whose share is counted (default 65 ms).
	SLO time.Duration
	// WorkDir holds the images, mount points, broker dirs and the state
	// file (default DefaultWorkDir).
	WorkDir string
	// ImageSize is the size of each sparse image (default 3 GiB).
	ImageSize int64
	// LibsDir and Version choose the Kafka jars (see lab.BrokerConfig).
	LibsDir string
	Version string
	// HeapMB is the broker's heap (default 512).
	HeapMB int
	// Device puts every run's file system on an emulated slow device
	// with this profile (package slowdisk; nil: the image's own loop
	// device); DeviceSeed seeds its latency draws.
	Device     *slowdisk.Profile
	DeviceSeed uint64
	// Port is the brokers' client port on 127.0.0.1 (0: a free one); the
	// runs are one at a time, so each broker takes it in turn.
	Port int
	// Threshold and Alpha tune the verdicts as in compare.Options
	// (defaults 5% and 0.05).
	Threshold float64
	Alpha     float64
	// Record, when set, is a directory (absent or empty) where the
	// recorder of `kscope record` keeps a recording of the recorded
	// trials, one directory per run: Record/<variant>-<trial>, which
	// `kscope explain` reads; RecordTrials says which trials
	// (RecordFirst, the default, or RecordAll).
	Record       string
	RecordTrials string
	// Progress receives a line per step (nil: none); BenchProgress the
	// load generator's line per second (nil: none).
	Progress      io.Writer
	BenchProgress io.Writer
}

// DefaultWorkDir is where images and mounts go without Config.WorkDir: on
// the root disk (not a tmpfs), and kept across reboots so that a run's
// leftovers are found.
const DefaultWorkDir = "/var/tmp/kscope-lab-fs"

func (c Config) withDefaults() (Config, error) {
	if len(c.Variants) == 0 {
		return c, errors.New("no variants")
	}
	if c.Trials == 0 {
		c.Trials = 3
	}
	if c.Trials < 1 || c.Trials > 100 {
		return c, fmt.Errorf("trials must be 1..100, not %d", c.Trials)
	}
	if c.SLO == 0 {
		c.SLO = 65 * time.Millisecond
	}
	if c.SLO < 0 {
		return c, errors.New("the SLO must be positive")
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	dir, err := filepath.Abs(c.WorkDir)
	if err != nil {
		return c, err
	}
	c.WorkDir = dir
	if c.ImageSize == 0 {
		c.ImageSize = 3 << 30
	}
	if c.ImageSize < 512<<20 {
		return c, errors.New("the image must be at least 512 MiB (XFS needs 300 MiB)")
	}
	if c.Threshold == 0 {
		c.Threshold = compare.DefaultThreshold
	}
	if c.RecordTrials == "" {
		c.RecordTrials = RecordFirst
	}
	if c.RecordTrials != RecordFirst && c.RecordTrials != RecordAll {
		return c, fmt.Errorf("record trials %q: want %s or %s", c.RecordTrials, RecordFirst, RecordAll)
	}
	if c.Record != "" {
		if err := CheckRecordDir(c.Record, c.WorkDir); err != nil {
			return c, err
		}
		if c.Record, err = filepath.Abs(c.Record); err != nil {
			return c, err
		}
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("port %d is not a TCP port", c.Port)
	}
	if c.Alpha == 0 {
		c.Alpha = compare.DefaultAlpha
	}
	if _, err := c.Workload.BenchConfig("127.0.0.1:9092"); err != nil {
		return c, fmt.Errorf("workload: %w", err)
	}
	return c, nil
}

// Result is what a lab run measured: every run's figures, and per variant
// the summary over trials and the verdicts against the first variant.
type Result struct {
	Tool        string    `json:"tool"` // "kscope lab fs"
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Interrupted bool      `json:"interrupted"`
	Host        string    `json:"host"`
	Kernel      string    `json:"kernel"`
	CPUs        int       `json:"cpus"`
	Kafka       string    `json:"kafka"`
	// Device names the emulated device's profile and its source (absent:
	// none, the image's own loop device).
	Device *DeviceProfile `json:"device,omitempty"`
	// LoopDirectIO: the loop devices did direct I/O to their images
	// (losetup --direct-io=on), so the page cache is not counted twice.
	LoopDirectIO bool      `json:"loop_direct_io"`
	ImageBytes   int64     `json:"image_bytes"`
	Variants     []Variant `json:"variants"`
	Trials       int       `json:"trials"`
	Workload     Workload  `json:"workload"`
	Noise        *Noise    `json:"noise"`
	Stall        *Stall    `json:"stall"`
	SLOMs        float64   `json:"slo_ms"`
	// BucketEdgesMs are the latency bucket edges of the runs'
	// JournalBuckets and of the HTML's heatmaps (bucketEdgesMs).
	BucketEdgesMs []float64 `json:"bucket_edges_ms,omitempty"`
	Threshold     float64   `json:"threshold"`
	Alpha         float64   `json:"alpha"`
	// Runs in the order they ran (trial rounds, variants interleaved).
	Runs      []*RunResult  `json:"runs"`
	Summary   []*Summary    `json:"summary"`
	Verdicts  []*Comparison `json:"verdicts"`
	Warnings  []string      `json:"warnings"`
	Leftovers *Leftovers    `json:"leftovers_removed,omitempty"`
}

// RunResult is one run of one variant.
type RunResult struct {
	Variant string    `json:"variant"`
	Trial   int       `json:"trial"`
	Start   time.Time `json:"start"` // of the measured part
	// Device and MountOptions as the kernel shows them; Features is
	// dumpe2fs's feature list for ext4.
	Device string `json:"device"`
	// Emulated is the emulated slow device under Device (--device) and
	// what it served in the whole run (mkfs and teardown included);
	// absent on a plain loop device.
	Emulated     *EmulatedDevice `json:"emulated,omitempty"`
	MountOptions string          `json:"mount_options"`
	Features     string          `json:"features,omitempty"`
	BrokerPID    int             `json:"broker_pid"`

	// Produce latency: bench's service latency (send to acknowledgement)
	// of the measured part, in ms.
	Acked      int64   `json:"acked"`
	Failed     int64   `json:"failed"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	P50Ms      float64 `json:"produce_p50_ms"`
	P99Ms      float64 `json:"produce_p99_ms"`
	P999Ms     float64 `json:"produce_p999_ms"`
	MaxMs      float64 `json:"produce_max_ms"`
	// OverSLO is the number of acknowledged messages slower than the SLO
	// (at the histogram's precision, 3 significant digits), OverSLOPct
	// their share in percent.
	OverSLO    int64   `json:"over_slo"`
	OverSLOPct float64 `json:"over_slo_pct"`

	// The broker's write calls on its log segments (iotrace), in ms.
	Writes     int64   `json:"writes"`
	WriteP99Ms float64 `json:"write_p99_ms"`
	WriteMaxMs float64 `json:"write_max_ms"`
	// The file system's journal commits: jbd2 commits on ext4, iclog
	// writes on XFS (JournalKind), in ms; JournalPerSec is their rate.
	JournalKind   string  `json:"journal_kind"`
	Journal       int64   `json:"journal_commits"`
	JournalPerSec float64 `json:"journal_per_sec"`
	JournalP99Ms  float64 `json:"journal_p99_ms"`
	JournalMaxMs  float64 `json:"journal_max_ms"`
	// JournalBuckets counts the commits by latency, in the buckets of
	// Result.BucketEdgesMs (below the first edge first).
	JournalBuckets []int64 `json:"journal_buckets,omitempty"`
	// ext4's fast commits (a file system made with -O fast_commit), in
	// ms, apart from the jbd2 commits above: each is run by the thread
	// whose fsync asked for it. FastCommitsFellBack counts those that
	// fell back to a full jbd2 commit; FastCommitBuckets as
	// JournalBuckets.
	FastCommits         int64   `json:"fast_commits,omitempty"`
	FastCommitsFellBack int64   `json:"fast_commits_fell_back,omitempty"`
	FastCommitP99Ms     float64 `json:"fast_commit_p99_ms,omitempty"`
	FastCommitMaxMs     float64 `json:"fast_commit_max_ms,omitempty"`
	FastCommitBuckets   []int64 `json:"fast_commit_buckets,omitempty"`
	// TraceLost is events the kernel dropped (ring buffer full).
	TraceLost uint64 `json:"trace_lost"`

	// The noise writer's fsyncs in the measured part, and stalls made.
	NoiseFsyncs   int64   `json:"noise_fsyncs"`
	NoiseFsyncP99 float64 `json:"noise_fsync_p99_ms"`
	// The dirty writer's bytes dirtied in the measured part, and the p99
	// of its write calls (throttled by the kernel's dirty limits or held
	// by the journal when slow).
	NoiseDirtyBytes    int64   `json:"noise_dirty_bytes,omitempty"`
	NoiseDirtyWriteP99 float64 `json:"noise_dirty_write_p99_ms,omitempty"`
	Freezes            int     `json:"freezes"`

	// Recording is the run's recording (--record), Explain what explain
	// says of it.
	Recording string          `json:"recording,omitempty"`
	Explain   *ExplainSummary `json:"explain,omitempty"`

	// Seconds are the per-second samples of the measured part, the unit
	// of evidence of the verdicts.
	Seconds []SecondSample `json:"seconds"`
	// Load is the load generator's whole result (what `kscope bench run`
	// writes): the produce latency verdicts and the shares above
	// thresholds are computed from its histograms.
	Load *bench.Result `json:"load,omitempty"`
}

// SecondSample is one second of a run. Latencies in ms; a field is null
// when the second had none of it.
type SecondSample struct {
	MsgsPerSec     float64  `json:"msgs_per_sec"`
	P50Ms          *float64 `json:"produce_p50_ms"`
	P99Ms          *float64 `json:"produce_p99_ms"`
	MaxMs          *float64 `json:"produce_max_ms"`
	WriteP99Ms     *float64 `json:"write_p99_ms"`
	JournalCommits int64    `json:"journal_commits"`
	JournalP99Ms   *float64 `json:"journal_p99_ms"`
}

// Run runs the lab: cfg.Trials rounds of every variant, then the summary
// and verdicts. Cancelling ctx (Ctrl-C) stops at once: what was made is
// removed and the runs finished so far are returned with Interrupted set,
// along with an error. Leftovers of an earlier killed run in the work dir
// are removed first.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	res := &Result{
		Tool: "kscope lab fs", Start: time.Now(), Variants: cfg.Variants, Trials: cfg.Trials,
		Workload: cfg.Workload, Noise: cfg.Noise, Stall: cfg.Stall, SLOMs: ms(cfg.SLO), BucketEdgesMs: bucketEdgesMs(ms(cfg.SLO)),
		Threshold: cfg.Threshold, Alpha: cfg.Alpha, ImageBytes: cfg.ImageSize,
		CPUs: runtime.NumCPU(), Runs: []*RunResult{}, Warnings: []string{}, LoopDirectIO: true,
	}
	if cfg.Device != nil {
		res.Device = &DeviceProfile{Name: cfg.Device.Name, Source: cfg.Device.Source, Seed: cfg.DeviceSeed}
	}
	res.Host, _ = os.Hostname()
	res.Kernel = hostinfo.Kernel()
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockWorkDir(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	left, err := sweep(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("removing what an earlier run left in %s: %w", cfg.WorkDir, err)
	}
	if !left.Empty() {
		res.Leftovers = left
		logf(cfg.Progress, "removed what an earlier run (pid %d) left in %s: %s", left.PID, cfg.WorkDir, left)
	}
	r := &runner{cfg: cfg, res: res, st: newStack(cfg.WorkDir), dir: filepath.Join(cfg.WorkDir, runDir)}
	if cfg.Record != "" {
		// Made by this run: the recorder makes a directory per run in it.
		if err := os.Mkdir(cfg.Record, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("--record: %w", err)
		}
		// Checked again once it is there: what took its place since the
		// first check (a link elsewhere, files) is refused.
		if err := CheckRecordDir(cfg.Record, cfg.WorkDir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	err = r.all(ctx)
	err = errors.Join(err, r.st.unwind(0))
	// A last look under the work dir: nothing may be left.
	if left, serr := sweep(cfg.WorkDir); serr != nil {
		err = errors.Join(err, serr)
	} else if !left.Empty() && ctx.Err() == nil {
		err = errors.Join(err, fmt.Errorf("left behind after cleanup (now removed): %s", left))
	}
	res.End = time.Now()
	if ctx.Err() != nil {
		res.Interrupted = true
		err = errors.Join(fmt.Errorf("interrupted after %d of %d runs; everything it made was removed", len(res.Runs), cfg.Trials*len(cfg.Variants)), err)
	}
	if len(res.Runs) > 0 {
		summarize(res)
	}
	return res, err
}

type runner struct {
	cfg Config
	res *Result
	st  *stack
	dir string
}

func (r *runner) all(ctx context.Context) error {
	n := r.cfg.Trials * len(r.cfg.Variants)
	for trial := 1; trial <= r.cfg.Trials; trial++ {
		for _, v := range r.cfg.Variants {
			if ctx.Err() != nil {
				return nil
			}
			logf(r.cfg.Progress, "[%d/%d] %s trial %d/%d", len(r.res.Runs)+1, n, v.Name, trial, r.cfg.Trials)
			rr, err := r.one(ctx, v, trial)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s trial %d: %w", v.Name, trial, err)
			}
			r.res.Runs = append(r.res.Runs, rr)
			logf(r.cfg.Progress, "%s trial %d: %.0f msg/s, produce p50 %.2f p99 %.2f p99.9 %.2f max %.1f ms, %.3f%% over %v; write p99 %.3f ms; %d %s p99 %.2f ms",
				v.Name, trial, rr.MsgsPerSec, rr.P50Ms, rr.P99Ms, rr.P999Ms, rr.MaxMs, rr.OverSLOPct, r.cfg.SLO,
				rr.WriteP99Ms, rr.Journal, rr.JournalKind, rr.JournalP99Ms)
		}
	}
	return nil
}

// task is an in-process job on the stack whose stop runs once, whether
// called in order or by the unwinding.
func (r *runner) task(name string, stop func() error) (*item, func() error) {
	var once sync.Once
	var err error
	f := func() error {
		once.Do(func() { err = stop() })
		return err
	}
	it := &item{Kind: kindTask, Name: name, undo: f}
	return it, f
}

// one runs variant v once: the file system under test, the broker on it,
// the measured load, and the teardown (the unwinding of everything it
// pushed, on every path).
func (r *runner) one(ctx context.Context, v Variant, trial int) (rr *RunResult, err error) {
	mark := r.st.depth()
	defer func() {
		if uerr := r.st.unwind(mark); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	tag := v.FileName() + "-" + strconv.Itoa(trial)
	rr = &RunResult{Variant: v.Name, Trial: trial}

	dev, err := r.loopDevice(tag, rr)
	if err != nil {
		return nil, err
	}
	rr.Device = dev
	mnt, err := r.fileSystem(v, dev, tag)
	if err != nil {
		return nil, err
	}
	rr.MountOptions = mountOptions(mnt)
	if v.FS == "ext4" {
		rr.Features = ext4Features(dev)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	logDir := filepath.Join(mnt, "kafka-logs")
	ok := false // until set, the unwinding keeps the broker's output
	b, err := r.broker(ctx, v, trial, tag, logDir, &ok)
	if err != nil {
		return nil, err
	}
	rr.BrokerPID = b.PID()
	r.res.Kafka = b.Version()
	logf(r.cfg.Progress, "%s trial %d: broker pid %d on %s, log dir %s on %s (%s %s)", v.Name, trial, b.PID(), b.Addr(), logDir, dev, v.FS, rr.MountOptions)

	if err := r.measure(ctx, v, trial, b, logDir, mnt, rr); err != nil {
		return nil, err
	}
	ok = true
	return rr, nil
}

// loopDevice makes the run's sparse image, fresh, and attaches it to a
// loop device (with direct I/O where the backing file system takes it);
// both are on the stack. It returns the device. On an emulated slow
// device, rr (when not nil) gets what the emulator served once it is
// closed.
func (r *runner) loopDevice(tag string, rr *RunResult) (string, error) {
	img := filepath.Join(r.dir, tag+".img")
	if err := r.st.push(&item{Kind: kindImage, Path: img, undo: func() error { return removeFile(img) }}); err != nil {
		return "", err
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return "", err
	}
	if err := os.Truncate(img, r.cfg.ImageSize); err != nil {
		return "", err
	}
	if r.cfg.Device != nil {
		return r.slowLoopDevice(img, tag, rr)
	}
	out, err := run("losetup", "--find", "--show", "--direct-io=on", img)
	if err != nil {
		// Not every backing file system takes direct I/O.
		r.res.LoopDirectIO = false
		if out, err = run("losetup", "--find", "--show", img); err != nil {
			return "", err
		}
	}
	dev := strings.TrimSpace(out)
	if err := r.st.push(&item{Kind: kindLoop, Dev: dev, Path: img, undo: func() error {
		if loopBackingFile(dev) != img {
			return nil // gone already
		}
		return detachLoop(dev)
	}}); err != nil {
		return "", err
	}
	return dev, nil
}

// fileSystem makes v's file system on dev and mounts it on a fresh
// directory, the mount on the stack. It returns the mount point.
func (r *runner) fileSystem(v Variant, dev, tag string) (string, error) {
	if _, err := run(v.MkfsCommand(dev)...); err != nil {
		return "", err
	}
	mnt := filepath.Join(r.dir, tag)
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", err
	}
	if err := r.st.push(&item{Kind: kindMount, Path: mnt, Dev: dev, undo: func() error {
		_ = thaw(mnt)
		return unmount(mnt)
	}}); err != nil {
		return "", err
	}
	if _, err := run(v.MountCommand(dev, mnt)...); err != nil {
		return "", err
	}
	return mnt, nil
}

// broker starts the run's broker with its log dir on the file system
// under test (its config and logs stay on the root disk); its directory
// and its process are on the stack. Unless *ok is set by then, the
// unwinding keeps the broker's output of the failed run in the work dir
// (the run dir goes).
func (r *runner) broker(ctx context.Context, v Variant, trial int, tag, logDir string, ok *bool) (*lab.Broker, error) {
	cfg := r.cfg
	bdir := filepath.Join(r.dir, "broker-"+tag)
	if err := r.st.push(&item{Kind: kindDir, Path: bdir, undo: func() error {
		if !*ok && ctx.Err() == nil {
			if b, err := os.ReadFile(filepath.Join(bdir, lab.OutFile)); err == nil {
				kept := filepath.Join(cfg.WorkDir, "failed-"+tag+"-"+lab.OutFile)
				if os.WriteFile(kept, b, 0o644) == nil {
					logf(cfg.Progress, "%s trial %d failed: the broker's output is kept in %s", v.Name, trial, kept)
				}
			}
		}
		return os.RemoveAll(bdir)
	}}); err != nil {
		return nil, err
	}
	b, err := lab.StartBroker(ctx, lab.BrokerConfig{
		Dir: bdir, LogDirs: []string{logDir}, LibsDir: cfg.LibsDir, Version: cfg.Version, HeapMB: cfg.HeapMB, Port: cfg.Port,
		ExtraProps: map[string]string{"num.partitions": strconv.Itoa(int(cfg.Workload.Partitions))},
	})
	if err != nil {
		return nil, err
	}
	if err := r.st.push(&item{Kind: kindBroker, PID: b.PID(), Path: bdir, undo: b.Stop}); err != nil {
		return nil, err
	}
	return b, nil
}

// measure runs the load on broker b with the tracing, then the noise,
// started first and the stalls started with the load's measured part;
// it stops them all and fills rr's figures.
func (r *runner) measure(ctx context.Context, v Variant, trial int, b *lab.Broker, logDir, mnt string, rr *RunResult) error {
	win := &window{}
	tr, err := startTracing(b.PID(), logDir, win)
	if err != nil {
		return err
	}
	var lost uint64
	trItem, stopTrace := r.task("tracer", func() error {
		var err error
		lost, err = tr.stop()
		return err
	})
	if err := r.st.push(trItem); err != nil {
		return err
	}
	noise, stopNoise, err := r.noise(ctx, mnt, win)
	if err != nil {
		return err
	}
	bc, err := r.cfg.Workload.BenchConfig(b.Addr())
	if err != nil {
		return err
	}
	bc.Progress = r.cfg.BenchProgress
	stalls := &runStalls{}
	bc.OnStart = func(_, measureStart time.Time) {
		win.set(measureStart, bc.Duration)
		stalls.start(ctx, r, mnt, measureStart)
	}
	recs := &runRecorder{}
	if err := recs.start(ctx, r, v, trial, b, logDir, bc.Topics[0], bc.Partitions); err != nil {
		return err
	}
	others := otherBrokers(b.PID())
	br, berr := bench.Run(ctx, bc)
	others = append(others, otherBrokers(b.PID())...)
	serr := stalls.stop()
	rec, recErr := recs.stop()
	nerr := stopNoise()
	terr := stopTrace()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if berr != nil {
		return fmt.Errorf("load: %w", berr)
	}
	if err := errors.Join(serr, nerr, terr); err != nil {
		return err
	}
	if noise != nil && noise.err != nil {
		return noise.err
	}
	rr.Start, _ = win.get()
	rr.TraceLost = lost
	rr.Freezes = stalls.freezes()
	if err := r.figures(rr, br, tr, noise); err != nil {
		return err
	}
	r.explainRun(ctx, rr, rec, recErr, rr.Start)
	if len(others) > 0 {
		slices.Sort(others)
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%s trial %d: other Kafka brokers ran on this machine during the load (pids %v): they compete for CPU and disk", v.Name, trial, slices.Compact(others)))
	}
	return nil
}

// noise starts the configured noise writer in a directory of the file
// system under test, its stop on the stack. Without noise configured it
// returns no stats and a stop that does nothing.
func (r *runner) noise(ctx context.Context, mnt string, win *window) (*noiseStats, func() error, error) {
	if r.cfg.Noise == nil {
		return nil, func() error { return nil }, nil
	}
	dir := filepath.Join(mnt, "noise")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	ns, stop, err := startNoise(ctx, r.cfg.Noise, dir, win)
	if err != nil {
		return nil, nil, err
	}
	it, stopNoise := r.task("noise", func() error { stop(); return nil })
	if err := r.st.push(it); err != nil {
		return nil, nil, err
	}
	return ns, stopNoise, nil
}

// explainRun keeps where the run's recording is and what explain says
// of it; a recording that failed is a warning (the run's figures stand)
// and its explain line says why.
func (r *runner) explainRun(ctx context.Context, rr *RunResult, rec *runRecording, recErr error, measureStart time.Time) {
	if rec == nil {
		return
	}
	rr.Recording = rec.dir
	if late := rec.began.Sub(measureStart); recErr == nil && late > 0 {
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%s trial %d: the recording began %v into the measured part (a longer warm-up covers the recorder's start)",
			rr.Variant, rr.Trial, late.Round(time.Millisecond)))
	}
	if recErr != nil {
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%s trial %d: recording %s: %v", rr.Variant, rr.Trial, rec.dir, recErr))
		rr.Explain = &ExplainSummary{Error: "no recording: " + recErr.Error()}
		return
	}
	rr.Explain = explainRecording(ctx, rec.dir)
	logf(r.cfg.Progress, "%s trial %d: explain %s: %s", rr.Variant, rr.Trial, rec.dir, rr.Explain.Line())
}

// runStalls is a run's staller, started from the load's OnStart (on the
// load's goroutine) when the measured part begins, when stalls are
// configured, and stopped after the load.
type runStalls struct {
	mu    sync.Mutex
	stl   *staller
	stopF func() error // nil until started
}

// start starts freezing mnt half a period into the measured part, the
// stalls on r's stack.
func (s *runStalls) start(ctx context.Context, r *runner, mnt string, measureStart time.Time) {
	if r.cfg.Stall == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stl = startStaller(ctx, r.st, mnt, *r.cfg.Stall, measureStart.Add(r.cfg.Stall.Period/2))
	var it *item
	it, s.stopF = r.task("stalls", s.stl.stop)
	_ = r.st.push(it)
}

// stop stops the stalls if they started.
func (s *runStalls) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopF == nil {
		return nil
	}
	return s.stopF()
}

// freezes is the number of freezes made (0 without stalls).
func (s *runStalls) freezes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stl == nil {
		return 0
	}
	return s.stl.freeze
}

// figures fills rr from the load's result, the trace and the noise.
func (r *runner) figures(rr *RunResult, br *bench.Result, tr *tracing, noise *noiseStats) error {
	svc := br.Latency[bench.LatencyService]
	if svc == nil || svc.Count == 0 {
		return errors.New("the load has no produce latencies (nothing acknowledged)")
	}
	rr.Load = br
	rr.Acked, rr.Failed, rr.MsgsPerSec = br.Totals.Acked, br.Totals.Failed, br.Totals.MsgsPerSec
	rr.P50Ms, rr.P99Ms, rr.P999Ms, rr.MaxMs = usMs(svc.P50Us), usMs(svc.P99Us), usMs(svc.P999Us), usMs(svc.MaxUs)
	h, err := bench.DecodeHistogram(svc.Histogram)
	if err != nil {
		return err
	}
	rr.OverSLO = countAbove(h, r.cfg.SLO.Microseconds())
	rr.OverSLOPct = 100 * float64(rr.OverSLO) / float64(h.TotalCount())

	tr.mu.Lock()
	defer tr.mu.Unlock()
	rr.Writes = tr.writes.all.TotalCount()
	rr.WriteP99Ms, rr.WriteMaxMs = nsMs(tr.writes.all.ValueAtQuantile(99)), nsMs(tr.writes.all.Max())
	r.journalFigures(rr, tr)
	secs := len(br.Series)
	if secs > 0 {
		rr.JournalPerSec = float64(rr.Journal) / float64(secs)
	}
	for i, s := range br.Series {
		ss := SecondSample{MsgsPerSec: s.MsgsPerSec}
		if l, ok := s.Latency[bench.LatencyService]; ok && l.Count > 0 {
			ss.P50Ms, ss.P99Ms, ss.MaxMs = ptr(usMs(l.P50Us)), ptr(usMs(l.P99Us)), ptr(usMs(l.MaxUs))
		}
		if w := tr.writes.secs[i]; w != nil {
			ss.WriteP99Ms = ptr(nsMs(w.ValueAtQuantile(99)))
		}
		if c := tr.commits.secs[i]; c != nil {
			ss.JournalCommits = c.TotalCount()
			ss.JournalP99Ms = ptr(nsMs(c.ValueAtQuantile(99)))
		}
		rr.Seconds = append(rr.Seconds, ss)
	}
	if noise != nil {
		noise.mu.Lock()
		rr.NoiseFsyncs = noise.fsyncs.TotalCount()
		rr.NoiseFsyncP99 = usMs(noise.fsyncs.ValueAtQuantile(99))
		rr.NoiseDirtyBytes = noise.dirtyBytes
		rr.NoiseDirtyWriteP99 = usMs(noise.dirtyWrites.ValueAtQuantile(99))
		noise.mu.Unlock()
	}
	return nil
}

// journalFigures sets rr's journal commits and fast commits from tr
// (locked by the caller).
func (r *runner) journalFigures(rr *RunResult, tr *tracing) {
	rr.Journal = tr.commits.all.TotalCount()
	rr.JournalP99Ms, rr.JournalMaxMs = nsMs(tr.commits.all.ValueAtQuantile(99)), nsMs(tr.commits.all.Max())
	rr.JournalKind = journalKind(tr.kinds)
	rr.JournalBuckets = make([]int64, len(r.res.BucketEdgesMs)+1)
	addToBuckets(rr.JournalBuckets, r.res.BucketEdgesMs, tr.commits.all, 1e6) // ns
	if fc := tr.fastCommits.all; fc.TotalCount() > 0 {
		rr.FastCommits, rr.FastCommitsFellBack = fc.TotalCount(), tr.fellBack
		rr.FastCommitP99Ms, rr.FastCommitMaxMs = nsMs(fc.ValueAtQuantile(99)), nsMs(fc.Max())
		rr.FastCommitBuckets = make([]int64, len(r.res.BucketEdgesMs)+1)
		addToBuckets(rr.FastCommitBuckets, r.res.BucketEdgesMs, fc, 1e6) // ns
	}
}

// countAbove counts the values of h above limit (µs), at h's precision:
// a bucket counts when its lowest equivalent value is above the limit.
func countAbove(h *hdrhistogram.Histogram, limit int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From > limit {
			n += b.Count
		}
	}
	return n
}

func journalKind(kinds map[string]int64) string {
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "-"
	}
	if len(names) > 1 {
		return strings.Join(names, "+")
	}
	return names[0]
}

func ptr(v float64) *float64 { return &v }

func usMs(us int64) float64 { return float64(us) / 1000 }

func nsMs(ns int64) float64 { return float64(ns) / 1e6 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// mountOptions returns the super block options mnt was mounted with.
func mountOptions(mnt string) string {
	ms, err := hostinfo.Mounts(0)
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.MountPoint == mnt {
			return m.SuperOptions
		}
	}
	return ""
}

// ext4Features is the feature list of an ext4 file system (dumpe2fs -h).
func ext4Features(dev string) string {
	out, err := run("dumpe2fs", "-h", dev)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Filesystem features:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// otherBrokers lists the broker JVMs on this machine other than ours.
func otherBrokers(ours int) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && pid != ours && lab.BrokerAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
