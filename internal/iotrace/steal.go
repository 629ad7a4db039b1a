package iotrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// steals is bpf/iosteal.bpf.c loaded and attached: the hypervisor's steal
// time per CPU, between context switches.
type steals struct {
	objs iostealObjects
	attachment
	// events counts the intervals read (Stats.StealEvents).
	events atomic.Uint64
}

// errNoStealClock: the kernel keeps no steal clock per run queue (not a
// paravirtualised guest kernel, or one without
// CONFIG_PARAVIRT_TIME_ACCOUNTING).
var errNoStealClock = errors.New("the kernel does not account steal time per run queue (CONFIG_PARAVIRT_TIME_ACCOUNTING)")

// openStealSource is steal's entry of sources: a kernel that cannot
// trace steal fails Open, or with Config.StealOptional has Mode say why.
func openStealSource(t *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	s, err := openSteals(cfg.StealMin, cfg.ringFlags())
	switch {
	case err == nil:
		t.mode.Steal = true
		return s, nil
	case cfg.StealOptional:
		t.mode.StealErr = err
		return nil, nil
	}
	return nil, err
}

func openSteals(minStolen time.Duration, ringFlags uint64) (_ *steals, err error) {
	spec, err := loadIosteal()
	if err != nil {
		return nil, fmt.Errorf("iotrace: steal: %w", err)
	}
	if err := setRingFlags(spec, ringFlags); err != nil {
		return nil, fmt.Errorf("iotrace: steal: %w", err)
	}
	if err := spec.Variables[iostealVarMinStolenNs].Set(uint64(minStolen)); err != nil {
		return nil, fmt.Errorf("iotrace: steal: set minimum: %w", err)
	}
	s := &steals{}
	if err := loadObjects(spec, &s.objs, "iotrace: steal"); err != nil {
		// CO-RE cannot find rq.prev_steal_time_rq in the kernel's BTF.
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("iotrace: steal: %w: %w", errNoStealClock, err)
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err = s.add(link.AttachTracing(link.TracingOptions{Program: s.objs.KsioStealSwitch})); err != nil {
		return nil, fmt.Errorf("iotrace: attach to BTF tracepoint sched_switch: %w", err)
	}
	if s.rd, err = ringbuf.NewReader(s.objs.KsioSevents); err != nil {
		return nil, fmt.Errorf("iotrace: steal ring buffer reader: %w", err)
	}
	return s, nil
}

func (s *steals) close() error { return s.closeWith(&s.objs) }

const stealEventSize = 40

func decodeStealEvent(b []byte) (iostealIostealEvent, bool) {
	var ev iostealIostealEvent
	if len(b) < stealEventSize {
		return ev, false
	}
	ev.StartNs = binary.LittleEndian.Uint64(b[0:])
	ev.EndNs = binary.LittleEndian.Uint64(b[8:])
	ev.StolenNs = binary.LittleEndian.Uint64(b[16:])
	ev.Cpu = binary.LittleEndian.Uint32(b[24:])
	ev.Tid = binary.LittleEndian.Uint32(b[28:])
	ev.Tgid = binary.LittleEndian.Uint32(b[32:])
	return ev, true
}

func (s *steals) counters(st *Stats) error {
	st.StealEvents += s.events.Load()
	return sumCounters(s.objs.KsioScounters, &st.StealRingbufDrops, &st.StealSwitches)
}

func (s *steals) programs() []*ebpf.Program { return []*ebpf.Program{s.objs.KsioStealSwitch} }

func (s *steals) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readPolled(s.rd, func(b []byte) error {
		ev, ok := decodeStealEvent(b)
		if !ok {
			return fmt.Errorf("iotrace: steal ring buffer sample of %d bytes, want %d", len(b), stealEventSize)
		}
		s.events.Add(1)
		if h.Steal == nil {
			return nil
		}
		cs := &event.CPUSteal{Kind: event.KindCPUSteal, Start: t.clock.wall(ev.StartNs), End: t.clock.wall(ev.EndNs),
			CPU: int(ev.Cpu), StolenMs: float64(ev.StolenNs) / float64(time.Millisecond), TID: int(ev.Tid), PID: int(ev.Tgid)}
		if cs.PID == t.cfg.PID {
			cs.Thread = t.threads.name(cs.TID)
		}
		return deliver.do(func() error { return h.Steal(cs) })
	})
}
