package iotrace

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// runq is bpf/iorunq.bpf.c loaded and attached: the broker's threads'
// run-queue latency (Config.RunQueue).
type runq struct {
	objs iorunqObjects
	attachment
	// delays and wakeups count the events read (Stats.RunDelayEvents,
	// Stats.WakeupEvents).
	delays, wakeups atomic.Uint64
}

// DefaultRunQueueMin is the run-queue threshold when Config.RunQueueMin
// is 0. Under a CPU hog the scheduler cuts a broker thread's time into
// sub-millisecond slices: at 1 ms, a request starved by a dozen waits
// of 0.5 ms showed none of them. At the demo's load 250 µs costs no more
// than 1 ms did (bench/sched-cost.sh).
const DefaultRunQueueMin = 250 * time.Microsecond

// openRunqSource is the run queue's entry of sources.
func openRunqSource(t *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	r, err := openRunq(cfg.PID, cfg.RunQueueMin)
	if err != nil {
		return nil, err
	}
	t.mode.RunQueue = true
	return r, nil
}

func openRunq(pid int, minLatency time.Duration) (_ *runq, err error) {
	if minLatency < 0 {
		return nil, fmt.Errorf("iotrace: run queue: negative threshold %v", minLatency)
	}
	if minLatency == 0 {
		minLatency = DefaultRunQueueMin
	}
	spec, err := loadIorunq()
	if err != nil {
		return nil, fmt.Errorf("iotrace: run queue: %w", err)
	}
	if err := spec.Variables[iorunqVarTargTgid].Set(uint32(pid)); err != nil {
		return nil, fmt.Errorf("iotrace: run queue: set pid: %w", err)
	}
	if err := spec.Variables[iorunqVarMinLatencyNs].Set(uint64(minLatency)); err != nil {
		return nil, fmt.Errorf("iotrace: run queue: set threshold: %w", err)
	}
	r := &runq{}
	if err := loadObjects(spec, &r.objs, "iotrace: run queue"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	// The switch first: a wake-up recorded before the switch program runs
	// would never be ended by it.
	for _, p := range []struct {
		name string
		prog *ebpf.Program
	}{
		{"sched_switch", r.objs.KsioRunqSwitch},
		// Exits before entries: a timer expiry or softirq under way as
		// they attach must not leave its CPU marked inside one.
		{"hrtimer_expire_exit", r.objs.KsioRunqTimerExit},
		{"hrtimer_expire_entry", r.objs.KsioRunqTimerEntry},
		{"softirq_exit", r.objs.KsioRunqSoftirqExit},
		{"softirq_entry", r.objs.KsioRunqSoftirqEntry},
		{"sched_waking", r.objs.KsioRunqWakeup},
		{"sched_wakeup_new", r.objs.KsioRunqWakeupNew},
	} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p.prog})
		if err != nil {
			return nil, fmt.Errorf("iotrace: run queue: attach to BTF tracepoint %s: %w", p.name, err)
		}
		r.links = append(r.links, l)
	}
	if r.rd, err = ringbuf.NewReader(r.objs.KsioRevents); err != nil {
		return nil, fmt.Errorf("iotrace: run queue ring buffer reader: %w", err)
	}
	return r, nil
}

func (r *runq) programs() []*ebpf.Program {
	return []*ebpf.Program{r.objs.KsioRunqSwitch, r.objs.KsioRunqWakeup, r.objs.KsioRunqWakeupNew,
		r.objs.KsioRunqTimerEntry, r.objs.KsioRunqTimerExit, r.objs.KsioRunqSoftirqEntry, r.objs.KsioRunqSoftirqExit}
}

func (r *runq) counters(s *Stats) error {
	s.RunDelayEvents += r.delays.Load()
	s.WakeupEvents += r.wakeups.Load()
	return sumCounters(r.objs.KsioRcounters, &s.RunDelayRingbufDrops, &s.RunDelayStartFull)
}

func (r *runq) close() error { return r.closeWith(&r.objs) }

// runqEventSize is sizeof(struct iorunq_event); runqHolderSize of struct
// iorunq_holder, which it holds len(ev.Holders) of from byte 56, then the
// waker (24 bytes) at runqWakerOffset, then kind and timer.
const (
	runqHolderSize  = 32
	runqWakerOffset = 56 + len(iorunqIorunqEvent{}.Holders)*runqHolderSize
	runqEventSize   = runqWakerOffset + 32
)

// decodeRunqEvent decodes struct iorunq_event (little-endian).
func decodeRunqEvent(b []byte) (iorunqIorunqEvent, error) {
	var ev iorunqIorunqEvent
	if len(b) < runqEventSize {
		return ev, fmt.Errorf("iotrace: run queue ring buffer sample of %d bytes, want %d", len(b), runqEventSize)
	}
	le := binary.LittleEndian
	ev.StartNs = le.Uint64(b[0:])
	ev.EndNs = le.Uint64(b[8:])
	ev.Tid = le.Uint32(b[16:])
	ev.Cpu = le.Uint32(b[20:])
	ev.HolderTid = le.Uint32(b[24:])
	ev.HolderTgid = le.Uint32(b[28:])
	for i := range ev.HolderComm {
		ev.HolderComm[i] = int8(b[32+i])
	}
	ev.Preempted = le.Uint32(b[48:])
	ev.Throttled = le.Uint32(b[52:])
	for i := range ev.Holders {
		h := b[56+i*runqHolderSize:]
		ev.Holders[i].Ns = le.Uint64(h[0:])
		ev.Holders[i].Tgid = le.Uint32(h[8:])
		ev.Holders[i].Tid = le.Uint32(h[12:])
		for j := range ev.Holders[i].Comm {
			ev.Holders[i].Comm[j] = int8(h[16+j])
		}
	}
	w := b[runqWakerOffset:]
	ev.WakerTid = le.Uint32(w[0:])
	ev.WakerTgid = le.Uint32(w[4:])
	for j := range ev.WakerComm {
		ev.WakerComm[j] = int8(w[8+j])
	}
	ev.Timer = le.Uint32(w[28:])
	ev.Kind = le.Uint32(w[24:])
	return ev, nil
}

// commString is a kernel comm: up to its first NUL.
func commString(c []int8) string {
	b := make([]byte, len(c))
	for i, v := range c {
		b[i] = byte(v)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// runDelay converts a decoded event; thread names the broker's threads.
func runDelay(ev *iorunqIorunqEvent, clock clockOffset, thread func(int) string) *event.RunDelay {
	rd := &event.RunDelay{Kind: event.KindRunDelay, Start: clock.wall(ev.StartNs), End: clock.wall(ev.EndNs),
		LatencyMs: float64(ev.EndNs-ev.StartNs) / float64(time.Millisecond),
		TID:       int(ev.Tid), Thread: thread(int(ev.Tid)), CPU: int(ev.Cpu), Preempted: ev.Preempted != 0,
		HolderPID: int(ev.HolderTgid), HolderTID: int(ev.HolderTid), HolderComm: commString(ev.HolderComm[:]),
		Throttled: ev.Throttled != 0, WakerPID: int(ev.WakerTgid), WakerTID: int(ev.WakerTid)}
	if ev.WakerTid != 0 {
		rd.WakerComm = commString(ev.WakerComm[:])
	}
	for _, h := range ev.Holders {
		if h.Ns == 0 {
			continue
		}
		rd.Holders = append(rd.Holders, event.RunHolder{PID: int(h.Tgid), TID: int(h.Tid), Comm: commString(h.Comm[:]),
			Ms: float64(h.Ns) / float64(time.Millisecond)})
	}
	slices.SortStableFunc(rd.Holders, func(a, b event.RunHolder) int { return cmp.Compare(b.Ms, a.Ms) })
	return rd
}

// wakeup converts a decoded RUNQ_KIND_WAKE event.
func wakeup(ev *iorunqIorunqEvent, clock clockOffset, thread func(int) string) *event.Wakeup {
	return &event.Wakeup{Kind: event.KindWakeup, Start: clock.wall(ev.StartNs), End: clock.wall(ev.EndNs),
		SleptMs: float64(ev.EndNs-ev.StartNs) / float64(time.Millisecond), TID: int(ev.Tid), Thread: thread(int(ev.Tid)),
		WakerTID: int(ev.WakerTid), WakerThread: commString(ev.WakerComm[:]), Timer: ev.Timer != 0}
}

// runqPoll is how often the run-queue ring is read (or Config.RingPoll,
// if longer): its events come without a wake-up (BPF_RB_NO_WAKEUP), and
// 1 MiB holds thousands of them, far more than 50 ms bring.
const runqPoll = 20 * time.Millisecond

func (r *runq) read(t *Tracer, h Handlers, deliver *delivery) error {
	return readRing(r.rd, max(runqPoll, t.cfg.RingPoll), &t.stopping, func(b []byte) error {
		ev, err := decodeRunqEvent(b)
		if err != nil {
			return err
		}
		if ev.Kind == runqKindWake {
			r.wakeups.Add(1)
			if h.Wakeup == nil || ev.EndNs < ev.StartNs {
				return nil
			}
			w := wakeup(&ev, t.clock, t.threads.name)
			return deliver.do(func() error { return h.Wakeup(w) })
		}
		r.delays.Add(1)
		if h.RunDelay == nil {
			return nil
		}
		rd := runDelay(&ev, t.clock, t.threads.name)
		return deliver.do(func() error { return h.RunDelay(rd) })
	})
}

// runqKindWake is RUNQ_KIND_WAKE (bpf/iorunq.h).
const runqKindWake = 1
