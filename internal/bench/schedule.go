package bench

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// clock gives this process's time in Unix nanoseconds, read from the
// monotonic clock: every latency is a difference of two of its readings,
// so a wall-clock step during the run changes none of them. The send
// timestamp header carries the same value, so consumers on this host can
// take end-to-end latency from it.
type clock struct {
	base   time.Time
	baseNs int64
}

func newClock() *clock {
	now := time.Now()
	return &clock{base: now, baseNs: now.UnixNano()}
}

func (c *clock) now() int64 { return c.baseNs + int64(time.Since(c.base)) }

// schedule is the open loop's fixed plan: message j of producer p (of n)
// is due at t0 + (j*n + p)/rate, so the producers interleave evenly and the
// sum of their rates is the target. Each due time is computed from t0,
// never by adding intervals, so rounding does not accumulate and a
// producer that falls behind keeps the same plan: it sends the overdue
// messages at once, each still timed from its own due time.
type schedule struct {
	t0   int64 // ns (clock)
	rate float64
	n    int
}

// due returns the intended send time of producer p's message j.
func (s schedule) due(p int, j uint64) int64 {
	return s.t0 + int64(float64(j*uint64(s.n)+uint64(p))*1e9/s.rate)
}

// count returns how many of producer p's messages are due before end.
func (s schedule) count(p int, end int64) uint64 {
	if end <= s.t0 {
		return 0
	}
	// The first j with due(p, j) >= end, found from the estimate and then
	// corrected for rounding.
	est := (float64(end-s.t0)*s.rate/1e9 - float64(p)) / float64(s.n)
	if est < 0 {
		est = 0
	}
	j := uint64(est)
	for j > 0 && s.due(p, j-1) >= end {
		j--
	}
	for s.due(p, j) < end {
		j++
	}
	return j
}

// sleeper waits until a due time with the precision the open loop needs.
// Go's timers wake up to a millisecond or more late on some machines
// (measured: ~1 ms median on a 2-CPU VM), which would add the bench's own
// lateness to every response time; nanosleep on a thread with a 1 ns timer
// slack wakes within tens of microseconds. The goroutine using it is
// locked to its thread (lockThread) so the slack applies; that thread ends
// with the goroutine.
type sleeper struct{ clk *clock }

// lockThread pins the calling goroutine to its OS thread and sets the
// thread's timer slack to 1 ns. Call once at the start of the goroutine.
func lockThread() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // best effort: the default slack is 50 µs
}

// until sleeps until the clock reads at least t, or stop is closed (checked
// every 50 ms for long waits). It returns false when stopped.
func (s sleeper) until(t int64, stop <-chan struct{}) bool {
	for {
		d := t - s.clk.now()
		if d <= 0 {
			return true
		}
		select {
		case <-stop:
			return false
		default:
		}
		if d > 50e6 {
			d = 50e6
		}
		ts := unix.NsecToTimespec(d)
		_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}
