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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/lab"
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
	// began is when the recording's meta says it started (zero until it
	// ends).
	began time.Time
}

// runRecorder is a run's recorder, when this trial is recorded: started
// before the load, once the load's topic exists, so that the recorder
// names its partitions from the log dir (the producers fetch the topic's
// metadata before the capture could see it, and Produce names topics by
// id); stop ends it. (Started later, from the load's OnStart, on a
// loaded machine its tracer was seen to stop sending writes after two
// seconds: the recorder is attached before the load instead.)
type runRecorder struct {
	mu    sync.Mutex
	rec   *runRecording
	stopF func() error // nil until started
	err   error
}

// topicReadyTimeout bounds the wait for the load's topic to be made.
const topicReadyTimeout = 30 * time.Second

// start makes the load's topic (as the load would: its partitions,
// replication factor 1) and starts the recorder on broker b into
// Record/<variant>-<trial>, its stop on r's stack.
func (rs *runRecorder) start(ctx context.Context, r *runner, v Variant, trial int, b *lab.Broker, logDir string, topic string, partitions int32) error {
	if !r.cfg.recordsTrial(trial) {
		return nil
	}
	if err := ensureTopic(ctx, b.Addr(), topic, partitions, logDir); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	tag := v.FileName() + "-" + strconv.Itoa(trial)
	rs.rec, rs.err = startRecording(ctx, filepath.Join(r.cfg.Record, tag), "lab fs: record "+tag, r.cfg.Progress, b.PID(), b.Addr(), logDir)
	if rs.err != nil {
		return rs.err
	}
	logf(r.cfg.Progress, "%s trial %d: recording into %s", v.Name, trial, rs.rec.dir)
	var it *item
	it, rs.stopF = r.task("recorder", rs.rec.stop)
	return r.st.push(it)
}

// ensureTopic creates topic with partitions partitions on the broker at
// addr (an existing one is fine: the load reuses it) and waits until
// each partition's directory is in logDir.
func ensureTopic(ctx context.Context, addr, topic string, partitions int32, logDir string) error {
	ctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("kscope-lab-fs"))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(topicReadyTimeout.Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	for {
		if partitionDirsExist(logDir, topic, partitions) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: its partitions' directories are not in %s after %v", topic, logDir, topicReadyTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// partitionDirsExist reports whether logDir has topic-0 .. topic-(n-1).
func partitionDirsExist(logDir, topic string, n int32) bool {
	for p := range n {
		if _, err := os.Stat(filepath.Join(logDir, topic+"-"+strconv.Itoa(int(p)))); err != nil {
			return false
		}
	}
	return true
}

// stop ends the recording if it started, and returns it (nil when this
// trial was not recorded) with its error.
func (rs *runRecorder) stop() (*runRecording, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.stopF != nil {
		rs.err = rs.stopF()
	}
	return rs.rec, rs.err
}

// startRecording starts `kscope record`'s recorder on broker pid (its
// client port in addr, its log dir logDir) into out. It runs until stop.
func startRecording(ctx context.Context, out, name string, notes io.Writer, pid int, addr, logDir string) (*runRecording, error) {
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
	opts := recorder.Options{Out: out, PID: pid, LogDirs: []string{logDir}, Wire: wc,
		// The broker listens on 127.0.0.1 and the load connects there.
		Interface:  "lo",
		MinLatency: 0, WaitMinLatency: time.Millisecond, StealMin: 100 * time.Microsecond, RunQueueMin: iotrace.DefaultRunQueueMin,
		Sched: true, JVMPauses: true,
		Notes: orDiscard(notes), Name: name, Quiet: true}
	rctx, cancel := context.WithCancel(ctx)
	rec := &runRecording{dir: out, cancel: cancel, done: make(chan error, 1)}
	go func() {
		res, err := recorder.Run(rctx, opts)
		if res != nil && res.Meta != nil {
			rec.began = res.Meta.Start
		}
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
