package fsbench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
)

// Latency histograms of the trace, in ns: 3 significant digits over the
// run, 2 per second (the per-second ones are samples for the tests).
const histMaxNs = 3_600_000_000_000

func newRunHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxNs, 3) }
func newSecHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxNs, 2) }

// series is one traced latency over the measured window: the whole run's
// histogram and one per second.
type series struct {
	all  *hdrhistogram.Histogram
	secs map[int]*hdrhistogram.Histogram
}

func newSeries() *series { return &series{all: newRunHist(), secs: map[int]*hdrhistogram.Histogram{}} }

func (s *series) record(sec int, ns int64) {
	ns = min(max(ns, 1), histMaxNs)
	_ = s.all.RecordValue(ns)
	h := s.secs[sec]
	if h == nil {
		h = newSecHist()
		s.secs[sec] = h
	}
	_ = h.RecordValue(ns)
}

// tracing is iotrace attached to one broker: its writes on the log dir
// and the journal commits of the file system, kept when they start in the
// measured window. ext4's fast commits (run by fsyncing threads on a
// fast_commit file system) are kept apart from its jbd2 commits: they are
// another mechanism, with other latencies, and a full commit they fell
// back to is also a jbd2 commit.
type tracing struct {
	tr     *iotrace.Tracer
	win    *window
	cancel context.CancelFunc
	done   chan error

	mu          sync.Mutex
	writes      *series
	commits     *series
	kinds       map[string]int64
	fastCommits *series
	// fellBack counts the fast commits that fell back to a full commit.
	fellBack int64
}

func startTracing(pid int, logDir string, win *window) (*tracing, error) {
	tr, err := iotrace.Open(iotrace.Config{PID: pid, LogDirs: []string{logDir}, Journal: true})
	if err != nil {
		return nil, fmt.Errorf("iotrace: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracing{tr: tr, win: win, cancel: cancel, done: make(chan error, 1),
		writes: newSeries(), commits: newSeries(), kinds: map[string]int64{}, fastCommits: newSeries()}
	go func() {
		t.done <- tr.RunAll(ctx, iotrace.Handlers{Write: t.onWrite, Commit: t.onCommit})
	}()
	return t, nil
}

func (t *tracing) onWrite(w *event.Write) error {
	if w.Error != "" || w.Op == "fsync" || w.Op == "fdatasync" {
		return nil
	}
	if sec := t.win.second(w.Start); sec >= 0 {
		t.mu.Lock()
		t.writes.record(sec, w.End.Sub(w.Start).Nanoseconds())
		t.mu.Unlock()
	}
	return nil
}

func (t *tracing) onCommit(c *event.JournalCommit) error {
	sec := t.win.second(c.Start)
	if sec < 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if fc := c.FastCommit; fc != nil {
		t.fastCommits.record(sec, c.End.Sub(c.Start).Nanoseconds())
		if fc.FellBack() {
			t.fellBack++
		}
		return nil
	}
	t.commits.record(sec, c.End.Sub(c.Start).Nanoseconds())
	t.kinds[c.Kind]++
	return nil
}

// stop detaches the tracer, reads what is left in its ring buffers and
// closes it; it returns the events the kernel dropped.
func (t *tracing) stop() (lost uint64, err error) {
	t.cancel()
	err = <-t.done
	if st, serr := t.tr.Stats(); serr == nil {
		lost = st.RingbufDrops + st.JournalRingbufDrops
	}
	return lost, errors.Join(err, t.tr.Close())
}
