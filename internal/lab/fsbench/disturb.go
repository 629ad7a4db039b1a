package fsbench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// noiseStats is what the noise did during the measured part.
type noiseStats struct {
	mu     sync.Mutex
	fsyncs *hdrhistogram.Histogram // µs
	window window
	err    error
}

// startNoise starts n's writer on a file in dir and returns a function
// that stops it and waits for it. The writer runs until stopped or ctx
// ends; the fsyncs it makes in the measured window are timed.
func startNoise(ctx context.Context, n *Noise, dir string, win *window) (*noiseStats, func(), error) {
	path := filepath.Join(dir, "kscope-noise.dat")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("noise: %w", err)
	}
	buf := make([]byte, n.Bytes)
	_, _ = rand.Read(buf)
	st := &noiseStats{fsyncs: hdrhistogram.New(1, 3_600_000_000, 3)}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		var off int64
		for ctx.Err() == nil {
			if off+int64(len(buf)) > noiseFileMax {
				// Free the blocks and allocate them again: steady
				// allocation, hence metadata, hence journal work.
				if err := f.Truncate(0); err != nil {
					st.fail(err)
					return
				}
				off = 0
			}
			if _, err := f.WriteAt(buf, off); err != nil {
				st.fail(err)
				return
			}
			off += int64(len(buf))
			t0 := time.Now()
			if err := f.Sync(); err != nil {
				st.fail(err)
				return
			}
			if win.contains(t0) {
				st.mu.Lock()
				_ = st.fsyncs.RecordValue(max(time.Since(t0).Microseconds(), 1))
				st.mu.Unlock()
			}
		}
	}()
	stop := func() {
		cancel()
		<-done
		_ = os.Remove(path)
	}
	return st, stop, nil
}

func (s *noiseStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("noise writer: %w", err)
	}
}

// staller freezes a file system for Stall.Duration every Stall.Period.
type staller struct {
	st     *stack
	mnt    string
	spec   Stall
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	freeze int   // freezes done
	err    error // the first failure
}

// startStaller starts freezing mnt from first on, every spec.Period, until
// stop or ctx ends. Each freeze is listed on the cleanup stack (and in the
// state file) before fsfreeze -f runs, and released after the thaw; when
// ctx ends during a freeze the file system is thawed at once.
func startStaller(ctx context.Context, st *stack, mnt string, spec Stall, first time.Time) *staller {
	ctx, cancel := context.WithCancel(ctx)
	s := &staller{st: st, mnt: mnt, spec: spec, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		next := first
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
			if err := s.once(ctx); err != nil {
				s.mu.Lock()
				s.err = errors.Join(s.err, err)
				s.mu.Unlock()
				return
			}
			next = next.Add(spec.Period)
		}
	}()
	return s
}

func (s *staller) once(ctx context.Context) error {
	var once sync.Once
	var thawErr error
	frozen := &item{Kind: kindFrozen, Path: s.mnt, undo: func() error {
		once.Do(func() {
			if err := thaw(s.mnt); err != nil && isMounted(s.mnt) {
				thawErr = err
			}
		})
		return thawErr
	}}
	if err := s.st.push(frozen); err != nil {
		return err
	}
	if _, err := run("fsfreeze", "-f", s.mnt); err != nil {
		_ = s.st.release(frozen)
		return err
	}
	s.mu.Lock()
	s.freeze++
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(s.spec.Duration):
	}
	return s.st.release(frozen)
}

// stop ends the freezing (thawing a frozen file system) and waits.
func (s *staller) stop() error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// window is the measured part of a run, known once the load starts.
type window struct {
	mu         sync.Mutex
	start, end time.Time
}

func (w *window) set(start time.Time, d time.Duration) {
	w.mu.Lock()
	w.start, w.end = start, start.Add(d)
	w.mu.Unlock()
}

func (w *window) get() (time.Time, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.start, w.end
}

func (w *window) contains(t time.Time) bool {
	s, e := w.get()
	return !s.IsZero() && !t.Before(s) && t.Before(e)
}

// second is t's second of the window, or -1 outside it.
func (w *window) second(t time.Time) int {
	s, e := w.get()
	if s.IsZero() || t.Before(s) || !t.Before(e) {
		return -1
	}
	return int(t.Sub(s) / time.Second)
}
