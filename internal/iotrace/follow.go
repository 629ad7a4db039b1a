package iotrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Session is one traced broker process: what Follow kept of a Tracer
// before closing it.
type Session struct {
	PID        int
	LogDirs    []string
	Start, End time.Time
	Stats      Stats
	// With FollowConfig.Summaries: the histograms, read before detaching.
	Summaries []Summary
	Unnamed   uint64
	Devices   []DeviceSummary
	// Exited is true when the session ended because the broker exited.
	Exited bool
}

// FollowConfig configures Follow.
type FollowConfig struct {
	Config
	// Find finds the broker to trace (FindBroker). With Find, Follow
	// starts with it when Config.PID is 0, and after the broker exits
	// waits for a new one; without it, Follow ends when the broker exits.
	Find func() (int, error)
	// Poll is how often Find is tried while waiting (default 500 ms).
	Poll time.Duration
	// Summaries keeps each session's histograms.
	Summaries bool
	// OnAttach is called after each attach; OnExit when a broker exits.
	OnAttach func(t *Tracer)
	OnExit   func(pid int)
	// OnDetach is called with each session as it ends (the tracer is
	// closed by then), before Follow waits for the next broker: a
	// long-running caller's running totals.
	OnDetach func(Session)
}

// Follow traces the broker until ctx ends, following it across restarts:
// when the traced process exits, the tracer is closed and, with Find,
// Follow waits for the next broker and traces it from scratch (the pid is
// a constant of the loaded programs, and the log dirs may change). It
// returns one Session per process traced.
func Follow(ctx context.Context, fc FollowConfig, h Handlers) ([]Session, error) {
	if fc.Poll <= 0 {
		fc.Poll = 500 * time.Millisecond
	}
	pid := fc.PID
	if pid == 0 {
		if fc.Find == nil {
			return nil, errors.New("iotrace: no pid and no way to find the broker")
		}
		var err error
		if pid, err = fc.Find(); err != nil {
			return nil, err
		}
	}
	var sessions []Session
	for {
		cfg := fc.Config
		cfg.PID = pid
		s, err := traceOne(ctx, cfg, fc, h)
		// A broker found while starting has not opened its log
		// directories (or its listeners) yet: try again while it lives.
		for s == nil && (errors.Is(err, ErrNoLogDirs) || errors.Is(err, ErrNoListenPorts)) && fc.Find != nil && ctx.Err() == nil && alive(pid) {
			select {
			case <-ctx.Done():
			case <-time.After(fc.Poll):
			}
			if ctx.Err() != nil {
				return sessions, nil
			}
			s, err = traceOne(ctx, cfg, fc, h)
		}
		if s != nil {
			sessions = append(sessions, *s)
			if fc.OnDetach != nil {
				fc.OnDetach(*s)
			}
		}
		if err != nil || ctx.Err() != nil || fc.Find == nil {
			return sessions, err
		}
		if fc.OnExit != nil {
			fc.OnExit(pid)
		}
		if pid, err = waitForBroker(ctx, fc.Find, fc.Poll, pid); err != nil {
			if ctx.Err() != nil {
				return sessions, nil
			}
			return sessions, err
		}
	}
}

// traceOne traces one process until ctx ends or the process exits.
func traceOne(ctx context.Context, cfg Config, fc FollowConfig, h Handlers) (*Session, error) {
	exited, stop, err := watchExit(cfg.PID)
	if err != nil {
		return nil, err
	}
	defer stop()
	t, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	s := &Session{PID: cfg.PID, LogDirs: t.LogDirs(), Start: time.Now()}
	if fc.OnAttach != nil {
		fc.OnAttach(t)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			s.Exited = true
			cancel()
		case <-sctx.Done():
		}
	}()
	runErr := t.RunAll(sctx, h)
	cancel()
	s.End = time.Now()
	var errs []error
	errs = append(errs, runErr)
	if fc.Summaries {
		var err error
		s.Summaries, s.Unnamed, err = t.Summaries()
		errs = append(errs, err)
		s.Devices, err = t.DeviceSummaries()
		errs = append(errs, err)
	}
	st, err := t.Stats()
	s.Stats = st
	errs = append(errs, err, t.Close())
	return s, errors.Join(errs...)
}

// watchExit returns a channel closed when process pid exits (a pidfd
// becomes readable then, zombie or not; a reused pid cannot fool it).
//
// The pidfd waits in Go's network poller, not in a goroutine blocked in
// poll(2): a system call that blocks for more than 10 ms has its
// processor handed to another thread by the runtime's monitor, which
// then polls every 20 µs for a millisecond. A 200 ms poll loop did that
// five times a second, a few hundred wake-ups of the agent a second.
func watchExit(pid int) (<-chan struct{}, func(), error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.EINVAL) { // before Linux 5.10
		if fd, err = unix.PidfdOpen(pid, 0); err == nil {
			err = unix.SetNonblock(fd, true)
		}
	}
	if err != nil {
		if fd > 0 {
			unix.Close(fd)
		}
		return nil, nil, &PIDError{PID: pid, Err: err}
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetReadDeadline(time.Time{}) // fails when the poller did not take it
	}
	if err != nil {
		f.Close()
		return nil, nil, &PIDError{PID: pid, Err: fmt.Errorf("pidfd in the poller: %w", err)}
	}
	done := make(chan struct{})
	go func() {
		// Read returns once the callback says the pidfd is readable
		// (the process exited), or with an error when stop closes it.
		if err := rc.Read(pidExited); err == nil {
			close(done)
		}
	}()
	return done, sync.OnceFunc(func() { f.Close() }), nil
}

// pidExited reports whether a pidfd polls readable: its process exited.
func pidExited(fd uintptr) bool {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd[:], 0)
	return err != nil || n > 0 // an error: stop waiting rather than spin
}

// PIDError is a pid that cannot be traced (gone, or not ours to see).
type PIDError struct {
	PID int
	Err error
}

func (e *PIDError) Error() string {
	return "iotrace: pid " + strconv.Itoa(e.PID) + ": " + e.Err.Error()
}
func (e *PIDError) Unwrap() error { return e.Err }

// waitForBroker polls find until it returns a process other than old.
func waitForBroker(ctx context.Context, find func() (int, error), poll time.Duration, old int) (int, error) {
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(poll):
		}
		if pid, err := find(); err == nil && pid != old {
			return pid, nil
		}
	}
}

// MergeSummaries adds up the sessions' histograms per partition,
// operation and device, and per device and kind.
func MergeSummaries(sessions []Session) (sums []Summary, unnamed uint64, devs []DeviceSummary) {
	type sk struct {
		topic     string
		partition int32
		op, dev   string
	}
	type dk struct {
		dev  string
		kind Kind
	}
	byS := map[sk]*Summary{}
	byD := map[dk]*DeviceSummary{}
	for _, s := range sessions {
		unnamed += s.Unnamed
		for _, x := range s.Summaries {
			k := sk{x.Topic, x.Partition, x.Op, x.Dev}
			if m := byS[k]; m != nil {
				m.Count += x.Count
				m.Bytes += x.Bytes
				m.Errors += x.Errors
				m.Total += x.Total
				for i := range m.Slots {
					m.Slots[i] += x.Slots[i]
				}
				continue
			}
			c := x
			byS[k] = &c
		}
		for _, x := range s.Devices {
			k := dk{x.Dev, x.Kind}
			if m := byD[k]; m != nil {
				m.Count += x.Count
				m.Bytes += x.Bytes
				m.Total += x.Total
				for i := range m.Slots {
					m.Slots[i] += x.Slots[i]
				}
				continue
			}
			c := x
			byD[k] = &c
		}
	}
	for _, s := range byS {
		sums = append(sums, *s)
	}
	for _, d := range byD {
		devs = append(devs, *d)
	}
	sortSummaries(sums)
	slices.SortFunc(devs, func(a, b DeviceSummary) int {
		if a.Dev != b.Dev {
			return strings.Compare(a.Dev, b.Dev)
		}
		return int(a.Kind) - int(b.Kind)
	})
	return sums, unnamed, devs
}

// AddStats adds b's counters to a: every field of Stats, which are all
// counts (TestAddStats), so that a new source's need no line here.
func AddStats(a *Stats, b Stats) {
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b)
	for i := range av.NumField() {
		f := av.Field(i)
		f.SetUint(f.Uint() + bv.Field(i).Uint())
	}
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
