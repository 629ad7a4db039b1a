package iotrace

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// waitFrames is how many kernel frames of a wait are kept, innermost
// first: enough to see the file system call under the scheduler's.
const waitFrames = 12

// waits is bpf/iowait.bpf.c loaded and attached: the broker's threads'
// uninterruptible sleeps with their kernel stacks.
type waits struct {
	objs iowaitObjects
	attachment
	syms *kallsyms
	// events counts the waits read (Stats.WaitEvents).
	events atomic.Uint64
}

// openWaitSource is the waits' entry of sources.
func openWaitSource(_ *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	minLatency := cfg.WaitMinLatency
	if minLatency <= 0 {
		minLatency = cfg.MinLatency
	}
	w, err := openWaits(cfg.PID, minLatency, cfg.ringFlags())
	if err != nil {
		return nil, err
	}
	return w, nil
}

func openWaits(pid int, minLatency time.Duration, ringFlags uint64) (_ *waits, err error) {
	spec, err := loadIowait()
	if err != nil {
		return nil, fmt.Errorf("iotrace: waits: %w", err)
	}
	if err := setRingFlags(spec, ringFlags); err != nil {
		return nil, fmt.Errorf("iotrace: waits: %w", err)
	}
	if err := spec.Variables["targ_tgid"].Set(uint32(pid)); err != nil {
		return nil, fmt.Errorf("iotrace: waits: set pid: %w", err)
	}
	if err := spec.Variables["min_latency_ns"].Set(uint64(minLatency)); err != nil {
		return nil, fmt.Errorf("iotrace: waits: set minimum latency: %w", err)
	}
	if err := checkFormat(tracefsEvents, "sched", "sched_switch", []tpField{
		{"prev_pid", 24, 4}, {"prev_state", 32, 8}, {"next_pid", 56, 4},
	}); err != nil {
		return nil, fmt.Errorf("iotrace: waits: %w", err)
	}
	w := &waits{}
	if err := loadObjects(spec, &w.objs, "iotrace: waits"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if err = w.add(link.Tracepoint("sched", "sched_switch", w.objs.KsioSchedSwitch, nil)); err != nil {
		return nil, fmt.Errorf("iotrace: attach to tracepoint sched:sched_switch: %w", err)
	}
	if w.rd, err = ringbuf.NewReader(w.objs.KsioWevents); err != nil {
		return nil, fmt.Errorf("iotrace: waits ring buffer reader: %w", err)
	}
	w.syms, _ = loadKallsyms("/proc/kallsyms") // without symbols, addresses are printed
	return w, nil
}

func (w *waits) close() error { return w.closeWith(&w.objs) }

const waitEventSize = 24

func decodeWaitEvent(b []byte) (iowaitIowaitEvent, bool) {
	var ev iowaitIowaitEvent
	if len(b) < waitEventSize {
		return ev, false
	}
	ev.StartNs = binary.LittleEndian.Uint64(b[0:])
	ev.EndNs = binary.LittleEndian.Uint64(b[8:])
	ev.Tid = binary.LittleEndian.Uint32(b[16:])
	ev.StackId = int32(binary.LittleEndian.Uint32(b[20:]))
	return ev, true
}

func (w *waits) counters(s *Stats) error {
	s.WaitEvents += w.events.Load()
	return sumCounters(w.objs.KsioWcounters, &s.WaitRingbufDrops, &s.WaitStartFull, &s.WaitStackLost)
}

func (w *waits) programs() []*ebpf.Program { return []*ebpf.Program{w.objs.KsioSchedSwitch} }

func (w *waits) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readPolled(w.rd, func(b []byte) error {
		ev, ok := decodeWaitEvent(b)
		if !ok {
			return fmt.Errorf("iotrace: waits ring buffer sample of %d bytes, want %d", len(b), waitEventSize)
		}
		w.events.Add(1)
		kw := &event.KernelWait{Kind: event.KindKernelWait, Start: t.clock.wall(ev.StartNs), End: t.clock.wall(ev.EndNs),
			TID: int(ev.Tid), Thread: t.threads.name(int(ev.Tid)), Stack: w.stack(ev.StackId)}
		kw.LatencyMs = float64(kw.End.Sub(kw.Start)) / float64(time.Millisecond)
		if h.Wait == nil {
			return nil
		}
		return deliver.do(func() error { return h.Wait(kw) })
	})
}

// stack symbolizes a stack of ksio_wstacks, innermost frame first.
func (w *waits) stack(id int32) []string {
	if id < 0 {
		return nil
	}
	var ips [32]uint64
	if err := w.objs.KsioWstacks.Lookup(uint32(id), &ips); err != nil {
		return nil
	}
	var out []string
	for _, ip := range ips {
		if ip == 0 || len(out) == waitFrames {
			break
		}
		out = append(out, w.syms.name(ip))
	}
	return out
}

// kallsyms maps kernel addresses to function names (/proc/kallsyms, which
// shows real addresses to root). The names are one string and their ends
// offsets into it: a hundred thousand strings of their own were pointers
// the garbage collector marked in every cycle of a long-running agent.
type kallsyms struct {
	addrs []uint64
	ends  []uint32 // names[i] is blob[ends[i-1]:ends[i]]
	blob  string
}

func loadKallsyms(path string) (*kallsyms, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type sym struct {
		addr     uint64
		from, to uint32 // the name in blob
	}
	var (
		syms []sym
		blob []byte
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "ffffffff81000000 T _stext" (and " [module]" after the name)
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 3 || len(fields[1]) != 1 {
			continue
		}
		switch fields[1][0] {
		case 'T', 't', 'W', 'w':
		default:
			continue
		}
		addr, err := strconv.ParseUint(string(fields[0]), 16, 64)
		if err != nil || addr == 0 || len(blob)+len(fields[2]) > math.MaxUint32 {
			continue
		}
		from := uint32(len(blob))
		blob = append(blob, fields[2]...)
		syms = append(syms, sym{addr, from, uint32(len(blob))})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(syms) == 0 {
		return nil, errors.New("no kernel symbols with addresses (kptr_restrict?)")
	}
	slices.SortFunc(syms, func(a, b sym) int { return cmp.Compare(a.addr, b.addr) })
	// The blob again in address order, so that ends alone delimit names.
	sorted := make([]byte, 0, len(blob))
	k := &kallsyms{addrs: make([]uint64, len(syms)), ends: make([]uint32, len(syms))}
	for i, s := range syms {
		sorted = append(sorted, blob[s.from:s.to]...)
		k.addrs[i], k.ends[i] = s.addr, uint32(len(sorted))
	}
	k.blob = string(sorted)
	return k, nil
}

// name is the function holding ip, or ip in hex without symbols.
func (k *kallsyms) name(ip uint64) string {
	if k != nil {
		i, found := slices.BinarySearch(k.addrs, ip)
		if !found {
			i--
		}
		if i >= 0 {
			from := uint32(0)
			if i > 0 {
				from = k.ends[i-1]
			}
			return k.blob[from:k.ends[i]]
		}
	}
	return "0x" + strconv.FormatUint(ip, 16)
}
