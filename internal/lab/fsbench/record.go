package fsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recorder"
	"github.com/kscope-dev/kscope/internal/wire"
)

// Which trials --record keeps a recording of.
const (
	RecordFirst = "first" // trial 1 of each variant
	RecordAll   = "all"   // every trial
)

// ExplainSummary is what `kscope explain` says of a run's recording: how
// many produce requests it found slow and their causes, most first.
type ExplainSummary struct {
	// ThresholdMs is what made a request slow, ThresholdFrom where it
	// came from (explain's default: the recording's p99).
	ThresholdMs   float64 `json:"threshold_ms"`
	ThresholdFrom string  `json:"threshold_from"`
	Produce       int64   `json:"produce_requests"`
	Slow          int64   `json:"slow_requests"`
	// Causes are explain's causes of the slow requests, most first.
	Causes []ExplainCause `json:"causes"`
	// JournalRoot counts the slow requests whose root cause is a journal
	// commit; SlowWrites the appends of at least explain's slow-write
	// threshold, SlowWritesUnderCommit those a journal commit overlapped.
	JournalRoot           int64 `json:"journal_root"`
	SlowWrites            int64 `json:"slow_writes"`
	SlowWritesUnderCommit int64 `json:"slow_writes_under_commit"`
	// Error is why there is no summary: the recording or explain failed.
	Error string `json:"error,omitempty"`
}

// ExplainCause is one cause and its share of the slow requests.
type ExplainCause struct {
	Cause    string  `json:"cause"`
	Requests int64   `json:"requests"`
	Share    float64 `json:"share"`
}

// CheckRecordDir checks --record's directory before anything starts: it
// must not exist (it is then made) or be an empty directory, and not be
// inside the work dir (removed run by run) nor inside any of inputs.
func CheckRecordDir(dir, workDir string, inputs ...string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("--record %s: %w", output.Escape(dir), err)
	}
	for _, in := range append([]string{workDir}, inputs...) {
		if in == "" {
			continue
		}
		inAbs, err := filepath.Abs(in)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(inAbs, abs); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			return fmt.Errorf("--record %s: inside %s, which the run uses", output.Escape(dir), output.Escape(in))
		}
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--record %s: %w", output.Escape(dir), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--record %s: not a directory", output.Escape(dir))
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("--record %s: %w", output.Escape(dir), err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("--record %s: not empty (a directory of an earlier run's recordings is not written over)", output.Escape(dir))
	}
	return nil
}

// recordsTrial reports whether trial is one --record keeps.
func (c Config) recordsTrial(trial int) bool {
	return c.Record != "" && (c.RecordTrials == RecordAll || trial == 1)
}

// runRecording is a recorder running on one run's broker.
type runRecording struct {
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// startRecording starts `kscope record`'s recorder on broker pid (its
// client port in addr, its log dir logDir) into the run's recording
// directory, Record/<variant>-<trial>; nil when this trial is not
// recorded. The recorder runs until stop.
func (r *runner) startRecording(ctx context.Context, tag string, trial int, pid int, addr, logDir string) (*runRecording, error) {
	if !r.cfg.recordsTrial(trial) {
		return nil, nil
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("record: broker address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("record: broker address %q: %w", addr, err)
	}
	wc := wire.DefaultConfig()
	wc.Ports = []uint16{uint16(port)}
	opts := recorder.Options{Out: filepath.Join(r.cfg.Record, tag), PID: pid, LogDirs: []string{logDir}, Wire: wc,
		// The broker listens on 127.0.0.1 and the load connects there.
		Interface:  "lo",
		MinLatency: 0, WaitMinLatency: time.Millisecond, StealMin: 100 * time.Microsecond, RunQueueMin: iotrace.DefaultRunQueueMin,
		Sched: true, JVMPauses: true,
		Notes: orDiscard(r.cfg.Progress), Name: "lab fs: record " + tag, Quiet: true}
	rctx, cancel := context.WithCancel(ctx)
	rec := &runRecording{dir: opts.Out, cancel: cancel, done: make(chan error, 1)}
	go func() {
		_, err := recorder.Run(rctx, opts)
		rec.done <- err
	}()
	return rec, nil
}

// stop ends the recording and waits for it to be closed.
func (rec *runRecording) stop() error {
	rec.cancel()
	return <-rec.done
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// explainRecording runs explain on a run's recording as `kscope explain
// DIR` would (its default threshold, the recording's p99), without
// reading message ids from the segment files (the load sends none).
func explainRecording(ctx context.Context, dir string) *ExplainSummary {
	var mu sync.Mutex
	var sum *explain.Summary
	out := explain.OutputFuncs{OnSummary: func(s *explain.Summary) error {
		mu.Lock()
		defer mu.Unlock()
		sum = s
		return nil
	}}
	err := explain.Run(ctx, []explain.Input{{Dir: dir}}, explain.Options{}, out)
	if err != nil {
		return &ExplainSummary{Error: err.Error()}
	}
	if sum == nil {
		return &ExplainSummary{Error: "explain gave no summary"}
	}
	return summarizeExplain(sum)
}

// summarizeExplain keeps what the report shows of explain's summary.
func summarizeExplain(s *explain.Summary) *ExplainSummary {
	es := &ExplainSummary{ThresholdMs: s.ThresholdMs, ThresholdFrom: s.ThresholdFrom, Produce: s.ProduceRequests, Slow: s.Slow,
		JournalRoot: s.Journal, SlowWrites: s.SlowWritesTotal, SlowWritesUnderCommit: s.SlowWritesUnderCommit}
	for _, c := range s.Causes {
		if c.Requests > 0 {
			es.Causes = append(es.Causes, ExplainCause{Cause: c.Cause, Requests: c.Requests, Share: c.Share})
		}
	}
	slices.SortStableFunc(es.Causes, func(a, b ExplainCause) int { return int(b.Requests - a.Requests) })
	return es
}

// maxCausesShown bounds the causes in a report line.
const maxCausesShown = 4

// Line is the summary in one line, not escaped (its printer escapes it): "12 of 40000 slow (> 8.1 ms, p99):
// slow-write 58%, lock-wait 33%; journal root 9 (75%); 20 slow writes, 18
// under a commit".
func (es *ExplainSummary) Line() string {
	if es.Error != "" {
		return "explain failed: " + es.Error
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d produce requests slow (> %s ms, %s)", es.Slow, es.Produce, num(es.ThresholdMs), es.ThresholdFrom)
	if es.Slow == 0 {
		return b.String()
	}
	var causes []string
	for i, c := range es.Causes {
		if i == maxCausesShown {
			causes = append(causes, fmt.Sprintf("%d more", len(es.Causes)-i))
			break
		}
		causes = append(causes, fmt.Sprintf("%s %s%%", c.Cause, num(c.Share*100)))
	}
	if len(causes) == 0 {
		causes = []string{"no cause found"}
	}
	fmt.Fprintf(&b, ": %s; journal root %d (%s%%)", strings.Join(causes, ", "), es.JournalRoot, num(100*float64(es.JournalRoot)/float64(es.Slow)))
	fmt.Fprintf(&b, "; %d slow writes, %d under a journal commit", es.SlowWrites, es.SlowWritesUnderCommit)
	return b.String()
}
