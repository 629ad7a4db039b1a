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
	"golang.org/x/sys/unix"
)

// noiseStats is what the noise did during the measured part.
type noiseStats struct {
	mu     sync.Mutex
	fsyncs *hdrhistogram.Histogram // µs
	// dirtyWrites are the dirty writer's write calls (µs): slow ones were
	// throttled by the kernel's dirty limits or waited for the journal.
	dirtyWrites *hdrhistogram.Histogram
	dirtyBytes  int64
	err         error
}

// startNoise starts n's writers on files in dir and returns a function
// that stops them, waits for them and removes their files. The writers
// run until stopped or ctx ends; what they do in the measured window is
// counted.
func startNoise(ctx context.Context, n *Noise, dir string, win *window) (*noiseStats, func(), error) {
	st := &noiseStats{fsyncs: hdrhistogram.New(1, 3_600_000_000, 3), dirtyWrites: hdrhistogram.New(1, 3_600_000_000, 3)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var paths []string
	stop := func() {
		cancel()
		wg.Wait()
		for _, p := range paths {
			_ = os.Remove(p)
		}
	}
	writers := []struct {
		on   bool
		name string
		run  func(context.Context, *os.File, *window, *noiseStats)
	}{
		{n.Bytes > 0, "kscope-noise.dat", func(ctx context.Context, f *os.File, win *window, st *noiseStats) {
			fsyncWriter(ctx, f, n.Bytes, win, st)
		}},
		{n.DirtyBytesPerSec > 0, "kscope-dirty.dat", func(ctx context.Context, f *os.File, win *window, st *noiseStats) {
			dirtyWriter(ctx, f, n.DirtyBytesPerSec, win, st)
		}},
	}
	for _, w := range writers {
		if !w.on {
			continue
		}
		path := filepath.Join(dir, w.name)
		// O_EXCL: the noise dir is made fresh by the run; a file already
		// there is not ours to write over.
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("noise: %w", err)
		}
		paths = append(paths, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.Close()
			w.run(ctx, f, win, st)
		}()
	}
	return st, stop, nil
}

// fsyncWriter writes size bytes to f and fsyncs it, in a loop until ctx
// ends, timing the fsyncs that start in the measured window.
func fsyncWriter(ctx context.Context, f *os.File, size int, win *window, st *noiseStats) {
	buf := make([]byte, size)
	_, _ = rand.Read(buf)
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
}

// dirtyTick is how often the dirty writer writes its share of the rate,
// and dirtyChunk the size of its write calls.
const (
	dirtyTick  = 100 * time.Millisecond
	dirtyChunk = 1 << 20
)

// dirtyWriter dirties rate bytes per second of f's page cache, in
// dirtyChunk writes every dirtyTick, never fsyncing. The kernel's flusher
// would write them out only after dirty_expire_centisecs (30 s) or past
// the background threshold (10% of memory), later than a lab run, so the
// writer starts the writeback of each tick's data itself with
// sync_file_range(SYNC_FILE_RANGE_WRITE): the writeback the flusher
// does (block allocation, data=ordered's data before the commit), not
// waited for and with no journal commit of its own, and no change to the
// machine's sysctls. Past dirtyFileMax the file is truncated and written
// again, so blocks keep being freed and allocated. A write the kernel
// throttles (dirty limits) slows the writer: the rate is a ceiling.
func dirtyWriter(ctx context.Context, f *os.File, rate int64, win *window, st *noiseStats) {
	buf := make([]byte, dirtyChunk)
	_, _ = rand.Read(buf)
	perTick := max(rate/int64(time.Second/dirtyTick), 1)
	tick := time.NewTicker(dirtyTick)
	defer tick.Stop()
	var off int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if off+perTick > dirtyFileMax {
			if err := f.Truncate(0); err != nil {
				st.fail(err)
				return
			}
			off = 0
		}
		start := off
		for left := perTick; left > 0 && ctx.Err() == nil; {
			n := min(left, int64(len(buf)))
			t0 := time.Now()
			if _, err := f.WriteAt(buf[:n], off); err != nil {
				st.fail(err)
				return
			}
			st.dirtied(win, t0, n)
			off, left = off+n, left-n
		}
		if err := unix.SyncFileRange(int(f.Fd()), start, off-start, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			st.fail(fmt.Errorf("sync_file_range: %w", err))
			return
		}
	}
}

// dirtied counts a dirty write of n bytes that started at t0, when in the
// measured window.
func (s *noiseStats) dirtied(win *window, t0 time.Time, n int64) {
	if !win.contains(t0) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirtyBytes += n
	_ = s.dirtyWrites.RecordValue(max(time.Since(t0).Microseconds(), 1))
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
