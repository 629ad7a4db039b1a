package use

import (
	"context"
	"time"
)

// Sampler turns successive snapshots into Samples, keeping what spans
// intervals: the previous snapshot, the run-queue polls of the current
// interval, each device's best await, and the notes already given (each
// is given once). It is used from one goroutine.
type Sampler struct {
	r         *Reader
	th        Thresholds
	prev      *Snapshot
	runqSum   float64
	runqN     int
	bestAwait map[string]float64
	noted     map[string]bool
}

// NewSampler takes the first snapshot; Sample gives the figures from it
// on.
func NewSampler(cfg Config) (*Sampler, error) {
	r, err := NewReader(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sampler{r: r, th: cfg.Thresholds, bestAwait: map[string]float64{}, noted: map[string]bool{}}
	if s.prev, err = r.Read(time.Now()); err != nil {
		return nil, err
	}
	return s, nil
}

// Notes returns what the first snapshot could not read (no PSI, no
// broker, a device not found): the figures that are n/a. Each note is
// returned once, here or in a Sample's Notes.
func (s *Sampler) Notes() []string { return s.newNotes(s.prev.missing) }

func (s *Sampler) newNotes(ns []string) []string {
	var out []string
	for _, n := range ns {
		if !s.noted[n] {
			s.noted[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Poll counts the runnable tasks now, for the interval's mean run
// queue (one sample of procs_running per interval is too noisy to
// compare with the number of CPUs).
func (s *Sampler) Poll() error {
	n, err := s.r.ReadRunQueue()
	if err != nil {
		return err
	}
	s.runqSum += float64(max(n-1, 0)) // the sampler itself is running
	s.runqN++
	return nil
}

// Sample reads a snapshot and returns the interval since the previous
// one, with its verdict.
func (s *Sampler) Sample(now time.Time) (*Sample, error) {
	cur, err := s.r.Read(now)
	if err != nil {
		return nil, err
	}
	out, err := diff(s.prev, cur)
	if err != nil {
		return nil, err
	}
	s.prev = cur
	if s.runqN > 0 {
		out.CPU.RunQueue = s.runqSum / float64(s.runqN)
	}
	s.runqSum, s.runqN = 0, 0
	for i := range out.Disks {
		d := &out.Disks[i]
		if d.AwaitMs == nil {
			continue
		}
		best, ok := s.bestAwait[d.Name]
		if !ok || *d.AwaitMs < best {
			best = *d.AwaitMs
			s.bestAwait[d.Name] = best
		}
		d.AwaitBestMs = ptr(best)
	}
	out.Notes = append(s.newNotes(cur.missing), out.Notes...)
	out.Verdict = Verdict(out, s.th)
	return out, nil
}

// Run samples every interval until ctx ends, polling the run queue ten
// times per interval (at most every 100 ms) in between, and calls fn
// with each sample. It returns nil when ctx ends, else the first error
// of the sampler or of fn.
func Run(ctx context.Context, s *Sampler, interval time.Duration, fn func(*Sample) error) error {
	if interval <= 0 {
		interval = time.Second
	}
	poll := min(interval/10, 100*time.Millisecond)
	if poll <= 0 {
		poll = interval
	}
	next := time.Now().Add(interval)
	pt := time.NewTicker(poll)
	defer pt.Stop()
	due := time.NewTimer(time.Until(next))
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-pt.C:
			if err := s.Poll(); err != nil {
				return err
			}
		case <-due.C:
			smp, err := s.Sample(time.Now())
			if err != nil {
				return err
			}
			if err := fn(smp); err != nil {
				return err
			}
			// Fixed schedule: a slow interval does not shift the next.
			next = next.Add(interval)
			for !next.After(time.Now()) {
				next = next.Add(interval)
			}
			due.Reset(time.Until(next))
		}
	}
}
