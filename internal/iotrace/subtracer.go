package iotrace

import (
	"errors"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// subtracer is an optional part of a Tracer with its own BPF programs
// (system calls at fentry, journal, function mode, waits, steal, run-queue delays, connections):
// opened by Open after the system calls, read by RunAll, counted by
// Stats, listed by ProgramIDs, detached and closed with the Tracer.
type subtracer interface {
	// ring is its ring buffer, nil when it sends no events of its own.
	ring() *ringbuf.Reader
	// read reads ring until it is flushed or closed, passing events to
	// h through deliver.
	read(t *Tracer, h Handlers, deliver *delivery) error
	// counters adds its kernel-side counters (losses) to s.
	counters(s *Stats) error
	programs() []*ebpf.Program
	detach() error
	close() error
}

// openOptional opens the sub-tracers cfg asks for, after the system
// calls' programs (t.objs) are loaded: each is kept in t.subs, so that
// Close releases what was opened even when a later one fails.
func (t *Tracer) openOptional(cfg Config, devs []uint32) error {
	if cfg.Functions != FunctionsOff {
		f, err := openFunctions(cfg, &t.objs)
		if err != nil {
			return err
		}
		t.funcs = f
		t.subs = append(t.subs, f)
		t.mode.Functions = f.timed
		if len(f.skipped) > 0 {
			t.mode.FunctionsErr = errors.New(strings.Join(f.skipped, "; "))
		}
	}
	if cfg.Journal {
		j, err := openJournal(uint64(cfg.MinLatency), devs, cfg.ringFlags())
		if err != nil {
			return err
		}
		t.journal = j
		t.subs = append(t.subs, j)
	}
	if cfg.Waits {
		wmin := cfg.WaitMinLatency
		if wmin <= 0 {
			wmin = cfg.MinLatency
		}
		w, err := openWaits(cfg.PID, wmin, cfg.ringFlags())
		if err != nil {
			return err
		}
		t.waits = w
		t.subs = append(t.subs, w)
	}
	if cfg.Steal {
		s, err := openSteals(cfg.StealMin, cfg.ringFlags())
		switch {
		case err == nil:
			t.steals = s
			t.subs = append(t.subs, s)
		case !cfg.StealOptional:
			return err
		default:
			t.mode.StealErr = err
		}
		t.mode.Steal = t.steals != nil
	}
	if cfg.RunQueue {
		r, err := openRunq(cfg.PID, cfg.RunQueueMin)
		if err != nil {
			return err
		}
		t.subs = append(t.subs, r)
		t.mode.RunQueue = true
	}
	if cfg.Conns {
		c, err := openConns(cfg.PID, cfg.Ports, cfg.ringFlags())
		if err != nil {
			return err
		}
		t.subs = append(t.subs, c)
		t.mode.Conns = c.ports
	}
	return nil
}

// The older sub-tracers' parts of the interface; run-queue delays and
// connections have theirs in runq.go and conns.go.

// Function programs (file system functions, system calls at fentry) send
// and count through the system calls' maps: nothing of their own to read.
func (f *tracingSet) ring() *ringbuf.Reader                   { return nil }
func (f *tracingSet) read(*Tracer, Handlers, *delivery) error { return nil }
func (f *tracingSet) counters(*Stats) error                   { return nil } // counted in ksio_counters

func (j *journal) ring() *ringbuf.Reader { return j.rd }
func (j *journal) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readJournal(h, deliver)
}
func (j *journal) counters(s *Stats) error {
	return sumCounters(j.objs.KsioJcounters, &s.JournalRingbufDrops, &s.JournalHistFull, &s.JournalStartFull)
}
func (j *journal) programs() []*ebpf.Program {
	var progs []*ebpf.Program
	for _, tp := range j.objs.tracepoints() {
		progs = append(progs, tp.prog)
	}
	return progs
}

func (w *waits) ring() *ringbuf.Reader { return w.rd }
func (w *waits) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readWaits(h, deliver)
}
func (w *waits) counters(s *Stats) error {
	return sumCounters(w.objs.KsioWcounters, &s.WaitRingbufDrops, &s.WaitStartFull, &s.WaitStackLost)
}
func (w *waits) programs() []*ebpf.Program { return []*ebpf.Program{w.objs.KsioSchedSwitch} }

func (s *steals) ring() *ringbuf.Reader { return s.rd }
func (s *steals) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readSteals(h, deliver)
}
func (s *steals) counters(st *Stats) error {
	return sumCounters(s.objs.KsioScounters, &st.StealRingbufDrops, &st.StealSwitches)
}
func (s *steals) programs() []*ebpf.Program { return []*ebpf.Program{s.objs.KsioStealSwitch} }
