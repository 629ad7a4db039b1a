package iotrace

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"
)

// DefaultRingPause is how long a reader that emptied its ring waits
// before it blocks on it again (without Config.RingPoll). Without a pause, a
// broker writing steadily wakes the reader for every event (an
// epoll_wait per event); with it, events are read in batches. Events
// carry their own kernel timestamps, so the pause changes no figure.
const DefaultRingPause = 2 * time.Millisecond

// readRing reads rd until it is flushed or closed, passing each sample to
// fn. With poll 0 it blocks on the ring (its producer wakes it), pausing
// DefaultRingPause after emptying it. With poll > 0 it never blocks: it
// empties the ring, then sleeps to the next multiple of poll (for
// producers that wake no one, BPF_RB_NO_WAKEUP); an empty ring is not
// read at all (no system call) until stopping is set. A thread blocked
// in epoll_wait for over 10 ms makes Go's runtime hand its processor to
// another thread, and any system call after the process was idle sets
// the runtime's monitor spinning at 20 µs for a while: a cost per
// wake-up of the agent, idle or not.
func readRing(rd *ringbuf.Reader, poll time.Duration, stopping *atomic.Bool, fn func([]byte) error) error {
	if poll > 0 {
		r := newPolledRing(rd, fn)
		for {
			if _, ended, err := r.drain(stopping.Load()); ended {
				return err
			}
			sleepToTick(poll)
		}
	}
	var rec ringbuf.Record
	for {
		if rd.AvailableBytes() == 0 {
			time.Sleep(DefaultRingPause)
		}
		err := rd.ReadInto(&rec)
		switch {
		case err == nil:
			if err := fn(rec.RawSample); err != nil {
				return err
			}
		case errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, os.ErrClosed):
			return nil
		default:
			return fmt.Errorf("iotrace: read ring buffer: %w", err)
		}
	}
}

// sleepToTick sleeps until the next multiple of d since the zero time:
// readers polling every d wake together, one wake-up of the process
// rather than one per ring.
func sleepToTick(d time.Duration) {
	time.Sleep(untilTick(d))
}

// untilTick is the time to the next multiple of d since the zero time.
func untilTick(d time.Duration) time.Duration {
	now := time.Now()
	return now.Truncate(d).Add(d).Sub(now)
}

// ringPoller reads the rings polled every Config.RingPoll from one
// goroutine: at each tick it empties every ring in turn (one reader per
// ring, each sleeping to the same tick, woke the process once per ring).
// While every ring stays empty the tick doubles, up to maxIdlePolls
// times the poll: an idle broker's agent wakes 5 times a second instead
// of 20 for its rings, and the first tick that finds an event returns to
// the poll. A burst that starts while the poller sleeps waits at most
// that long in its ring: 200 ms of 170k writes a second fill 40% of the
// writes' ring.
//
// A Kick (RingKick) reads the rings at once, in the kicker's goroutine,
// and pushes the poller's own tick back: a process that wakes anyway for
// other work (the agent's capture, once per block of packets) reads its
// rings in that wake-up instead of one of its own.
type ringPoller struct {
	poll     time.Duration
	stopping *atomic.Bool
	quit     chan struct{} // closed by close: no ring will join any more
	done     chan struct{} // closed when run returns
	// timer is run's next pass; a kick resets it.
	timer *time.Timer

	// passMu makes the passes of run and of kicks one at a time (a
	// ring's reader is not for concurrent use).
	passMu sync.Mutex
	// lastKick is when a kick last read the rings (unix nanoseconds).
	lastKick atomic.Int64

	mu    sync.Mutex
	rings []*polledRing
}

// RingKick lets a goroutine that wakes anyway have the tracer's polled
// rings read then (Config.Kick). Its zero value is ready; Kick does
// nothing while no tracer polls.
type RingKick struct {
	poller atomic.Pointer[ringPoller]
}

// Kick reads every polled ring now, in the caller's goroutine, unless a
// pass is already under way, and puts the poller's next pass a few polls
// later. The handlers run in the caller's goroutine.
func (k *RingKick) Kick() {
	if p := k.poller.Load(); p != nil {
		p.kick()
	}
}

// polledRing is a ring that joined the poller, with the reader waiting
// for its end.
type polledRing struct {
	rd  *ringbuf.Reader
	fn  func([]byte) error
	rec ringbuf.Record
	end chan error // receives the ring's end: nil once flushed or closed
}

// newPolledRing sets rd up to be read without blocking.
func newPolledRing(rd *ringbuf.Reader, fn func([]byte) error) *polledRing {
	rd.SetDeadline(time.Unix(0, 1)) // past: a read returns what there is
	return &polledRing{rd: rd, fn: fn, end: make(chan error, 1)}
}

func newRingPoller(poll time.Duration, stopping *atomic.Bool) *ringPoller {
	p := &ringPoller{poll: poll, stopping: stopping, quit: make(chan struct{}), done: make(chan struct{}), timer: time.NewTimer(0)}
	go p.run()
	return p
}

// read has the poller read rd, passing each sample to fn, and returns
// when rd is flushed or closed (nil), fn fails or reading fails: what
// readRing does for a polled ring, without a goroutine of its own.
func (p *ringPoller) read(rd *ringbuf.Reader, fn func([]byte) error) error {
	r := newPolledRing(rd, fn)
	p.mu.Lock()
	p.rings = append(p.rings, r)
	p.mu.Unlock()
	return <-r.end
}

// close stops the poller once every ring that joined has ended.
func (p *ringPoller) close() {
	close(p.quit)
	<-p.done
}

// maxIdlePolls bounds the idle tick: 4 polls, 200 ms for the agent's.
const maxIdlePolls = 4

func (p *ringPoller) run() {
	defer close(p.done)
	tick := p.poll
	quit := p.quit
	for {
		select {
		case <-p.timer.C:
		case <-quit:
			quit = nil // once: after it the passes go by the timer
		}
		stopping := p.stopping.Load()
		if d := p.sinceKick(); !stopping && quit != nil && d < maxIdlePolls*p.poll {
			// A kick read the rings while this wake-up was on its way.
			p.timer.Reset(maxIdlePolls*p.poll - d)
			continue
		}
		p.passMu.Lock()
		read, live := p.pass(stopping)
		p.passMu.Unlock()
		select {
		case <-p.quit:
			if live == 0 {
				return
			}
		default:
		}
		if stopping {
			// The flush is under way: look again soon, not at the tick.
			p.timer.Reset(time.Millisecond)
			continue
		}
		if read {
			tick = p.poll
		} else {
			tick = min(2*tick, maxIdlePolls*p.poll)
		}
		p.timer.Reset(untilTick(tick))
	}
}

// kick makes a pass now unless one is under way or the rings are being
// flushed, and moves the next pass of run to maxIdlePolls polls from now:
// while kicks come at least that often, run's goroutine does not wake.
func (p *ringPoller) kick() {
	if p.stopping.Load() || !p.passMu.TryLock() {
		return
	}
	p.pass(false)
	p.lastKick.Store(time.Now().UnixNano())
	p.passMu.Unlock()
	p.timer.Reset(maxIdlePolls * p.poll)
}

// sinceKick is the time since the last kick's pass (a long time if none).
func (p *ringPoller) sinceKick() time.Duration {
	k := p.lastKick.Load()
	if k == 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(time.Now().UnixNano() - k)
}

// wake has run make its next pass now (the rings are being flushed).
func (p *ringPoller) wake() { p.timer.Reset(0) }

// pass empties every ring once and hands the rings that ended their end
// (under passMu). It reports whether it read a sample and how many rings
// are left.
func (p *ringPoller) pass(stopping bool) (read bool, live int) {
	p.mu.Lock()
	rings := p.rings
	p.mu.Unlock()
	var left []*polledRing
	for _, r := range rings {
		n, ended, err := r.drain(stopping)
		read = read || n > 0
		if ended {
			r.end <- err
			continue
		}
		left = append(left, r)
	}
	p.mu.Lock()
	// Rings that joined during the pass are after those read.
	p.rings = append(left, p.rings[len(rings):]...)
	live = len(p.rings)
	p.mu.Unlock()
	return read, live
}

// drain reads what r holds now. An empty ring is not read at all (no
// system call) until stopping is set: then it is read to see the flush.
// It returns the samples it read, and whether the ring ended and why.
func (r *polledRing) drain(stopping bool) (n int, ended bool, err error) {
	for {
		if !stopping && r.rd.AvailableBytes() == 0 {
			return n, false, nil
		}
		err := r.rd.ReadInto(&r.rec)
		switch {
		case err == nil:
			n++
			if err := r.fn(r.rec.RawSample); err != nil {
				return n, true, err
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return n, false, nil
		case errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, os.ErrClosed):
			return n, true, nil
		default:
			return n, true, fmt.Errorf("iotrace: read ring buffer: %w", err)
		}
	}
}

// readPolled reads a ring polled every Config.RingPoll: through RunAll's
// poller, or on its own when there is none.
func (t *Tracer) readPolled(rd *ringbuf.Reader, fn func([]byte) error) error {
	if t.poller != nil {
		return t.poller.read(rd, fn)
	}
	return readRing(rd, t.cfg.RingPoll, &t.stopping, fn)
}
