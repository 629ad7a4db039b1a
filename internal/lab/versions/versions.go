// Package versions runs one workload against several Apache Kafka
// releases (`kscope lab versions`): for each release a fresh broker from
// the Maven Central jars (internal/lab), the same open-loop load
// (internal/bench, the workload file of `lab fs`), the broker's CPU over
// the run; then `bench compare`'s verdicts of every release against the
// first. It answers "did the upgrade cost throughput or latency" before
// the upgrade, the way the seed's Kafka 0.9 → 0.10 benchmark did after.
package versions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/lab/fsbench"
	"github.com/kscope-dev/kscope/internal/output"
)

// Config is a versions run.
type Config struct {
	// Versions are the releases, the first the baseline (at least two).
	Versions []string
	// Workload is the load of every run (fsbench.DefaultWorkload when
	// zero; its topic defaults to kscope-versions).
	Workload fsbench.Workload
	// WorkDir holds each release's broker and RESULT.json
	// (WorkDir/<version>/...); it must be empty or not exist.
	WorkDir string
	// HeapMB is each broker's heap (default 512).
	HeapMB int
	// Compare sets the verdicts' threshold and significance.
	Compare compare.Options
	// Progress receives a line per step (nil: none).
	Progress io.Writer
}

// Run is one release's run.
type Run struct {
	Version string `json:"version"`
	// Detected is the release the running broker reported (its jars).
	Detected string `json:"detected"`
	// ResultFile is the run's `kscope bench run` result, for `bench
	// compare` and `bench report`.
	ResultFile string        `json:"result_file"`
	Result     *bench.Result `json:"-"`
	// BrokerCPUSeconds is the broker process's CPU time over the load
	// (warm-up included), and per acknowledged message.
	BrokerCPUSeconds  float64 `json:"broker_cpu_seconds"`
	BrokerCPUPerMsgUs float64 `json:"broker_cpu_per_msg_us"`
}

// Result is a whole versions run.
type Result struct {
	Workload fsbench.Workload `json:"workload"`
	Runs     []Run            `json:"runs"`
	// Comparisons are every release against the first, in order.
	Comparisons []*compare.Comparison `json:"comparisons"`
}

// RunAll starts each release's broker in turn, runs the workload, stops
// the broker, and compares. A failure of one release ends the run: the
// comparison would be incomplete.
func RunAll(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Versions) < 2 {
		return nil, errors.New("versions: give at least two releases to compare")
	}
	seen := map[string]bool{}
	for _, v := range cfg.Versions {
		if err := lab.CheckVersion(v); err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, fmt.Errorf("versions: %s given twice", v)
		}
		seen[v] = true
	}
	if cfg.Workload == (fsbench.Workload{}) {
		cfg.Workload = fsbench.DefaultWorkload()
		cfg.Workload.Topic = ""
	}
	if cfg.Workload.Topic == "" {
		cfg.Workload.Topic = "kscope-versions"
	}
	if _, err := cfg.Workload.BenchConfig("127.0.0.1:9092"); err != nil {
		return nil, fmt.Errorf("versions: workload: %w", err)
	}
	if ents, err := os.ReadDir(cfg.WorkDir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("versions: work dir %s is not empty", cfg.WorkDir)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	res := &Result{Workload: cfg.Workload}
	for _, v := range cfg.Versions {
		r, err := runOne(ctx, cfg, v)
		if err != nil {
			return res, fmt.Errorf("versions: Kafka %s: %w", v, err)
		}
		res.Runs = append(res.Runs, *r)
	}
	base := res.Runs[0]
	for _, r := range res.Runs[1:] {
		c, err := compare.Compare(base.Result, r.Result, cfg.Compare)
		if err != nil {
			return res, fmt.Errorf("versions: compare %s with %s: %w", base.Version, r.Version, err)
		}
		c.NameA, c.NameB = "Kafka "+base.Version, "Kafka "+r.Version
		res.Comparisons = append(res.Comparisons, c)
	}
	return res, nil
}

func (cfg Config) logf(format string, args ...any) {
	if cfg.Progress != nil {
		// Paths and the broker's errors go into the lines: escaped.
		fmt.Fprintf(cfg.Progress, "lab versions: %s\n", output.Escape(fmt.Sprintf(format, args...)))
	}
}

// runOne runs the workload against a fresh broker of release v.
func runOne(ctx context.Context, cfg Config, v string) (*Run, error) {
	dir := filepath.Join(cfg.WorkDir, v)
	cfg.logf("Kafka %s: fetching the jars and starting a broker in %s", v, dir)
	libs, err := lab.EnsureLibsVersion(ctx, v)
	if err != nil {
		return nil, err
	}
	b, err := lab.StartBroker(ctx, lab.BrokerConfig{Dir: filepath.Join(dir, "broker"), Version: v, LibsDir: libs, HeapMB: cfg.HeapMB})
	if err != nil {
		return nil, err
	}
	defer b.Stop()
	run := &Run{Version: v}
	run.Detected, _ = hostinfo.BrokerVersion(b.PID())
	if run.Detected != "" && run.Detected != v {
		return nil, fmt.Errorf("the broker runs Kafka %s, not %s", run.Detected, v)
	}
	bc, err := cfg.Workload.BenchConfig(b.Addr())
	if err != nil {
		return nil, err
	}
	cfg.logf("Kafka %s: broker pid %d on %s; %v of load (%v warm-up) at %g msg/s", v, b.PID(), b.Addr(),
		time.Duration(cfg.Workload.Duration), time.Duration(cfg.Workload.Warmup), cfg.Workload.Rate)
	cpu0, err := hostinfo.ProcessCPU(b.PID())
	if err != nil {
		return nil, err
	}
	r, err := bench.Run(ctx, bc)
	if err != nil {
		return nil, err
	}
	cpu1, err := hostinfo.ProcessCPU(b.PID())
	if err != nil {
		return nil, err
	}
	run.Result = r
	run.BrokerCPUSeconds = (cpu1 - cpu0).Seconds()
	if r.Totals.Acked > 0 {
		run.BrokerCPUPerMsgUs = run.BrokerCPUSeconds / float64(r.Totals.Acked) * 1e6
	}
	run.ResultFile = filepath.Join(dir, "result.json")
	if err := writeResult(run.ResultFile, r); err != nil {
		return nil, err
	}
	if r.Interrupted {
		return nil, errors.New("the load was interrupted")
	}
	cfg.logf("Kafka %s: %.0f msg/s acknowledged, broker CPU %.1f s", v, r.Totals.MsgsPerSec, run.BrokerCPUSeconds)
	return run, nil
}

func writeResult(path string, r *bench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := bench.WriteResult(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// Names lists the releases of a comma-separated flag value.
func Names(spec string) []string {
	var out []string
	for _, v := range strings.Split(spec, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
