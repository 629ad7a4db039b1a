package iotrace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// ProgramPrefix starts the name of every BPF program iotrace loads, so
// that `bpftool prog show` (and the leak test) can tell them apart.
const ProgramPrefix = "ksio_"

// Config says what to trace.
type Config struct {
	// PID is the broker's process id (see FindBroker).
	PID int
	// LogDirs are the broker's log directories; empty: LogDirsOf(PID).
	LogDirs []string
	// MinLatency: only calls that took at least this long are sent to
	// user space as events; 0 sends all. Every call is counted in the
	// histograms regardless.
	MinLatency time.Duration
	// AllFiles keeps index, time index, snapshot and checkpoint files too;
	// by default only segment .log files are reported.
	AllFiles bool
	// Journal also traces, per device of the log directories, ext4 jbd2
	// commits, ext4 fsyncs, XFS log writes and forces, and block requests
	// (bpf/iojournal.bpf.c), with the same MinLatency. See RunAll and
	// DeviceSummaries.
	Journal bool
	// Waits also traces the broker's threads' uninterruptible sleeps (D
	// state) of at least MinLatency, with their kernel stacks
	// (bpf/iowait.bpf.c): where a thread blocked outside a write call,
	// e.g. in a page fault on a memory-mapped index.
	Waits bool
	// WaitMinLatency is the threshold for waits (0: MinLatency).
	WaitMinLatency time.Duration
	// RingPoll, when set, has every ring buffer read every RingPoll, all
	// at the same instants, by readers that never block on a ring; and
	// the BPF programs submit events without waking anyone
	// (BPF_RB_NO_WAKEUP). Each wake-up costs far more than the events it
	// reads: a long-running consumer that needs no event within
	// milliseconds (the agent: 50 ms) sets it; 50 ms of a broker's
	// writes fill a tenth of the 4 MiB ring at 170k writes/s. 0: each
	// reader blocks on its ring, its producer wakes it, and it pauses
	// DefaultRingPause after emptying it (events within milliseconds).
	RingPoll time.Duration
	// Kick, with RingPoll, also has the rings read whenever Kick.Kick is
	// called (in the caller's goroutine): a consumer that wakes anyway
	// for other work reads them in that wake-up, and the poller's own
	// tick waits while the kicks come (see RingKick).
	Kick *RingKick
	// SyscallProbes says where the write and fsync system calls are
	// timed: at fentry on the system call functions where the kernel
	// allows it (the zero value, SyscallsAuto), or always at the syscalls
	// tracepoints. Events and counts are the same; see SyscallProbe.
	SyscallProbes SyscallProbe
	// Functions also times writes inside the file system, where the
	// kernel allows fentry (see FunctionMode and Tracer.Mode). Their
	// events have ops ext4_file_write_iter and xfs_file_write_iter and
	// come on top of the write system calls that contain them.
	Functions FunctionMode
	// Steal also traces the time the hypervisor takes from the machine's
	// virtual CPUs, per CPU, between context switches (bpf/iosteal.bpf.c):
	// intervals with at least StealMin of steal become event.CPUSteal.
	// Needs a paravirtualised guest kernel that accounts steal per run
	// queue (CONFIG_PARAVIRT_TIME_ACCOUNTING); on bare metal there is none.
	Steal    bool
	StealMin time.Duration
	// StealOptional: a kernel that cannot trace steal does not fail Open;
	// Mode says why it is not traced.
	StealOptional bool
	// RunQueue also traces the broker's threads' run-queue latency
	// (bpf/iorunq.bpf.c): waits for a CPU of at least RunQueueMin
	// (0: DefaultRunQueueMin) become event.RunDelay.
	RunQueue    bool
	RunQueueMin time.Duration
	// Conns also reports which broker thread receives on each client
	// connection to one of Ports (bpf/iosock.bpf.c), as event.ConnThread;
	// no Ports: every TCP port the broker listens on (ListenPorts).
	Conns bool
	Ports []uint16
	// PageCache also traces the pages the broker's threads add to the
	// page cache (bpf/iopcache.bpf.c, filemap:mm_filemap_add_to_page_cache),
	// as event.PageCacheAdds runs: reads from disk. Optional: a kernel
	// without the tracepoint does not fail Open; Mode says why.
	PageCache bool

	// untypedTask, for tests: walk to the fd table with
	// bpf_probe_read_kernel, as on kernels before 5.11, even where the
	// running kernel has bpf_get_current_task_btf.
	untypedTask bool
}

// Tracer holds the loaded BPF programs, their links and maps. Close
// releases them all; the kernel also releases them when the process dies,
// since nothing is pinned.
type Tracer struct {
	cfg Config
	// stopping is set when RunAll's context ends, before the rings are
	// flushed: polling readers then read a ring even when it looks empty,
	// to see the flush.
	stopping atomic.Bool
	objs     iotraceObjects
	links    []link.Link
	rd       *ringbuf.Reader
	clock    clockOffset
	files    *fileResolver
	// Caches of convert, which only the write ring's reader calls: a
	// path's classification (filepath.Rel and logdir.ParsePath cost more
	// than the rest of an event) and device names.
	classified map[string]classifiedFile
	devNames   map[uint32]string
	threads    *threadNames
	journal    *journal // nil without Config.Journal
	// subs are the optional parts opened (system calls at fentry, then
	// the sources Config asks for), in order.
	subs []subtracer
	mode Mode
	// poller reads the rings polled every Config.RingPoll while RunAll
	// runs; nil otherwise.
	poller *ringPoller

	mu sync.Mutex // guards links and subs against a concurrent detach

	// counts are the events read and what became of them, counted
	// without a lock: one per event on the readers' hot path.
	counts eventCounts

	closeOnce sync.Once
	closeErr  error
}

// Stats counts what happened to the calls seen.
type Stats struct {
	Events     uint64 // events read from the ring buffer
	Reported   uint64 // events passed on: on a file in the log directories
	OtherFiles uint64 // events on other files (or index files without AllFiles)
	Unnamed    uint64 // events whose file could not be found by inode
	// Kernel-side losses (ksio_counters): slow calls dropped because the
	// ring buffer was full; calls not counted because the histogram map
	// was full; calls not timed because the start map was full.
	RingbufDrops uint64
	HistFull     uint64
	StartFull    uint64
	// With Config.Journal: journal events read, and the same losses for
	// bpf/iojournal.bpf.c (ksio_jcounters).
	JournalEvents       uint64
	JournalRingbufDrops uint64
	JournalHistFull     uint64
	JournalStartFull    uint64
	// With Config.Waits: waits read, and bpf/iowait.bpf.c's losses.
	WaitEvents       uint64
	WaitRingbufDrops uint64
	WaitStartFull    uint64
	WaitStackLost    uint64
	// With Config.Steal: steal intervals read, bpf/iosteal.bpf.c's losses,
	// and the context switches it saw.
	StealEvents       uint64
	StealRingbufDrops uint64
	StealSwitches     uint64
	// With Config.RunQueue: run delays read, and bpf/iorunq.bpf.c's losses.
	RunDelayEvents       uint64
	RunDelayRingbufDrops uint64
	RunDelayStartFull    uint64
	// WakeupEvents are broker threads woken by another broker thread
	// after a sleep of RunQueueMin or more (same ring buffer, same losses).
	WakeupEvents uint64
	// With Config.Conns: connections reported, those lost, and the
	// receives on the broker's ports seen (bpf/iosock.bpf.c).
	ConnEvents       uint64
	ConnRingbufDrops uint64
	ConnRecvs        uint64
	// With Config.PageCache: runs read, the broker's page adds seen,
	// runs lost and adds not followed (bpf/iopcache.bpf.c).
	PageCacheEvents       uint64
	PageCacheAdds         uint64
	PageCacheRingbufDrops uint64
	PageCacheRunsFull     uint64
}

// tracepoints pairs each tracepoint with its program.
func (o *iotraceObjects) tracepoints() []struct {
	name string
	prog *ebpf.Program
} {
	return []struct {
		name string
		prog *ebpf.Program
	}{
		// Exits first: once a call's entry is traced, its exit is too.
		{"sys_exit_write", o.KsioX_write},
		{"sys_exit_pwrite64", o.KsioX_pwrite64},
		{"sys_exit_writev", o.KsioX_writev},
		{"sys_exit_pwritev", o.KsioX_pwritev},
		{"sys_exit_pwritev2", o.KsioX_pwritev2},
		{"sys_exit_fsync", o.KsioX_fsync},
		{"sys_exit_fdatasync", o.KsioX_fdsync},
		{"sys_enter_write", o.KsioE_write},
		{"sys_enter_pwrite64", o.KsioE_pwrite64},
		{"sys_enter_writev", o.KsioE_writev},
		{"sys_enter_pwritev", o.KsioE_pwritev},
		{"sys_enter_pwritev2", o.KsioE_pwritev2},
		{"sys_enter_fsync", o.KsioE_fsync},
		{"sys_enter_fdatasync", o.KsioE_fdsync},
	}
}

// Open checks privileges, loads the BPF programs for cfg.PID and attaches
// them. Calls are traced from then on; read them with Run.
func Open(cfg Config) (_ *Tracer, err error) {
	if cfg, err = cfg.resolve(); err != nil {
		return nil, err
	}
	if err := prepareKernel(); err != nil {
		return nil, err
	}
	spec, err := syscallSpec(&cfg)
	if err != nil {
		return nil, err
	}
	devs, err := devicesOf(cfg.LogDirs)
	if err != nil {
		return nil, err
	}
	t := &Tracer{
		cfg:     cfg,
		files:   newFileResolver(cfg.PID, cfg.LogDirs),
		threads: newThreadNames(cfg.PID),
	}
	if err := loadObjects(spec, &t.objs, "iotrace"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if err := t.attachWrites(cfg.SyscallProbes, spec, devs); err != nil {
		return nil, err
	}
	if err = t.openSources(&cfg, devs); err != nil {
		return nil, err
	}
	if t.clock, err = measureClockOffset(); err != nil {
		return nil, err
	}
	return t, nil
}

// resolve checks cfg, the privileges and the process, and returns cfg
// with its log directories absolute (found from the process when none
// are given).
func (cfg Config) resolve() (Config, error) {
	if cfg.PID <= 0 {
		return cfg, fmt.Errorf("iotrace: bad pid %d", cfg.PID)
	}
	if cfg.MinLatency < 0 {
		return cfg, fmt.Errorf("iotrace: negative minimum latency %v", cfg.MinLatency)
	}
	if err := checkPrivileges(); err != nil {
		return cfg, err
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(cfg.PID))); err != nil {
		return cfg, fmt.Errorf("iotrace: pid %d: %w", cfg.PID, err)
	}
	dirs := slices.Clone(cfg.LogDirs)
	if len(dirs) == 0 {
		var err error
		if dirs, err = LogDirsOf(cfg.PID); err != nil {
			return cfg, err
		}
	}
	for i, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return cfg, fmt.Errorf("iotrace: log dir: %w", err)
		}
		dirs[i] = abs
	}
	cfg.LogDirs = dirs
	return cfg, nil
}

// prepareKernel mounts tracefs if it is not, and lifts the memory
// limit on BPF maps.
func prepareKernel() error {
	if err := ensureTracefs(); err != nil {
		return err
	}
	// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("iotrace: %w", err)
	}
	return nil
}

// syscallSpec is bpf/iotrace.bpf.c set up for cfg: its process,
// threshold, ring flags, and the device filter on.
func syscallSpec(cfg *Config) (*ebpf.CollectionSpec, error) {
	spec, err := loadIotrace()
	if err != nil {
		return nil, fmt.Errorf("iotrace: %w", err)
	}
	if err := spec.Variables[iotraceVarTargTgid].Set(uint32(cfg.PID)); err != nil {
		return nil, fmt.Errorf("iotrace: set pid: %w", err)
	}
	if err := spec.Variables[iotraceVarMinLatencyNs].Set(uint64(cfg.MinLatency)); err != nil {
		return nil, fmt.Errorf("iotrace: set minimum latency: %w", err)
	}
	if err := setRingFlags(spec, cfg.ringFlags()); err != nil {
		return nil, fmt.Errorf("iotrace: %w", err)
	}
	if err := spec.Variables[iotraceVarTaskBtf].Set(boolByte(!cfg.untypedTask && haveTaskBTF())); err != nil {
		return nil, fmt.Errorf("iotrace: set task_btf: %w", err)
	}
	if err := spec.Variables[iotraceVarFilterDev].Set(uint8(1)); err != nil {
		return nil, fmt.Errorf("iotrace: set device filter: %w", err)
	}
	return spec, nil
}

// attachWrites fills the system calls' device filter with devs,
// attaches their timing and opens their ring buffer.
func (t *Tracer) attachWrites(probe SyscallProbe, spec *ebpf.CollectionSpec, devs []uint32) error {
	for _, dev := range devs {
		if err := t.objs.KsioDevs.Put(dev, uint8(1)); err != nil {
			return fmt.Errorf("iotrace: device filter: %w", err)
		}
	}
	if err := t.attachSyscalls(probe, spec); err != nil {
		return err
	}
	rd, err := ringbuf.NewReader(t.objs.KsioEvents)
	if err != nil {
		return fmt.Errorf("iotrace: ring buffer reader: %w", err)
	}
	t.rd = rd
	return nil
}

// attachSyscalls attaches the timing of the write and fsync system calls:
// at fentry on the system call functions where probe allows it and the
// kernel does, else at the syscalls tracepoints. Mode says which, and why
// not fentry.
func (t *Tracer) attachSyscalls(probe SyscallProbe, spec *ebpf.CollectionSpec) error {
	if probe == SyscallsAuto {
		s, err := openSysFunctions(spec, &t.objs)
		if err == nil {
			t.subs = append(t.subs, s)
			t.mode.SyscallFentry = true
			return nil
		}
		t.mode.SyscallFentryErr = err
	}
	for _, tp := range t.objs.tracepoints() {
		l, err := link.Tracepoint("syscalls", tp.name, tp.prog, nil)
		if err != nil {
			return fmt.Errorf("iotrace: attach to tracepoint syscalls:%s: %w", tp.name, err)
		}
		t.links = append(t.links, l)
	}
	t.mode.Tracepoints = true
	return nil
}

// devicesOf returns the devices (kernel dev_t encoding) of the file
// systems holding dirs: the BPF programs ignore files on other devices.
// Kafka keeps a partition's files in the partition directory, on the log
// directory's file system.
func devicesOf(dirs []string) ([]uint32, error) {
	var devs []uint32
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return nil, fmt.Errorf("iotrace: log dir: %w", &os.PathError{Op: "stat", Path: d, Err: err})
		}
		if dev := statID(&st).dev; !slices.Contains(devs, dev) {
			devs = append(devs, dev)
		}
	}
	return devs, nil
}

// loadObjects loads a BPF collection into objs; a verifier error is
// printed in full, since its log is the only way to see why.
func loadObjects(spec *ebpf.CollectionSpec, objs any, prefix string) error {
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s: load BPF programs: %+v", prefix, ve)
		}
		return fmt.Errorf("%s: load BPF programs: %w", prefix, err)
	}
	return nil
}

// LogDirs returns the log directories whose files are reported.
func (t *Tracer) LogDirs() []string { return append([]string(nil), t.cfg.LogDirs...) }

// PID is the traced process.
func (t *Tracer) PID() int { return t.cfg.PID }

// Mode says how this Tracer times writes: system calls, and which file
// system functions (or why none).
func (t *Tracer) Mode() Mode { return t.mode }

// ClockUncertainty is the error bound of the monotonic to wall clock
// conversion measured at Open.
func (t *Tracer) ClockUncertainty() time.Duration { return t.clock.uncertainty }

// ClockOffset is CLOCK_REALTIME - CLOCK_MONOTONIC as measured when the
// tracer opened: what is added to the kernel's times.
func (t *Tracer) ClockOffset() time.Duration { return time.Duration(t.clock.realMinusMono) }

// Handlers receive the events of RunAll; a nil handler drops its kind.
// RunAll calls them from one goroutine at a time. They are
// event.Handlers, the set recording.Reader.ReadIO delivers recorded
// events to, and a recording.Writer's Handlers write: each source
// (sources) says which kinds it sends.
type Handlers = event.Handlers

// Run passes every traced call on a file in the log directories to fn, in
// the order the ring buffer holds them, until ctx ends or fn fails. When
// ctx ends it detaches the programs, passes on the events still in the
// ring buffer and returns nil. Run (or RunAll) may be called once.
func (t *Tracer) Run(ctx context.Context, fn func(*event.Write) error) error {
	return t.RunAll(ctx, Handlers{Write: fn})
}

// RunAll is Run for every kind of event: with Config.Journal, the journal
// and block events too, read from their own ring buffer. Events of one
// ring buffer keep their order; the two are not merged by time. It stops
// at the first handler error, and returns it.
func (t *Tracer) RunAll(ctx context.Context, h Handlers) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.stopping.Store(false)
	var poller *ringPoller
	if t.cfg.RingPoll > 0 {
		poller = newRingPoller(t.cfg.RingPoll, &t.stopping)
		t.poller = poller
		if t.cfg.Kick != nil {
			t.cfg.Kick.poller.Store(poller)
		}
		defer func() {
			if t.cfg.Kick != nil {
				t.cfg.Kick.poller.CompareAndSwap(poller, nil)
			}
			poller.close()
			t.poller = nil
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		t.stopping.Store(true)
		t.detach()
		// Read returns what is left in the ring buffer, then ErrFlushed.
		_ = t.rd.Flush()
		for _, s := range t.subs {
			if rd := s.ring(); rd != nil {
				_ = rd.Flush()
			}
		}
		if poller != nil {
			poller.wake() // it may be sleeping an idle tick
		}
	})
	defer stop()
	deliver := &delivery{cancel: cancel}
	errc := make(chan error, 1+len(t.subs))
	go func() { errc <- t.readWrites(h, deliver) }()
	readers := 1
	for _, s := range t.subs {
		if s.ring() != nil {
			readers++
			go func() { errc <- s.read(t, h, deliver) }()
		}
	}
	// The first error is returned as it is (a handler's error unwrapped);
	// the other reader then only drains.
	var first error
	for range readers {
		if err := <-errc; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

func (t *Tracer) readWrites(h Handlers, deliver *delivery) error {
	return t.readPolled(t.rd, func(b []byte) error {
		ev, ok := decodeEvent(b)
		if !ok {
			return fmt.Errorf("iotrace: ring buffer sample of %d bytes, want %d", len(b), eventSize)
		}
		t.counts.events.Add(1)
		w, err := t.convert(&ev)
		if err != nil || w == nil || h.Write == nil {
			return nil
		}
		return deliver.do(func() error { return h.Write(w) })
	})
}

// eventSize is sizeof(struct iotrace_event).
const eventSize = 56

// decodeEvent decodes struct iotrace_event (little-endian: the objects are
// built for bpfel only).
func decodeEvent(b []byte) (iotraceIotraceEvent, bool) {
	if len(b) < eventSize {
		return iotraceIotraceEvent{}, false
	}
	le := binary.LittleEndian
	return iotraceIotraceEvent{
		StartNs: le.Uint64(b[0:]),
		EndNs:   le.Uint64(b[8:]),
		Ret:     int64(le.Uint64(b[16:])),
		Pos:     int64(le.Uint64(b[24:])),
		Ino:     le.Uint64(b[32:]),
		Dev:     le.Uint32(b[40:]),
		Tid:     le.Uint32(b[44:]),
		Fd:      int32(le.Uint32(b[48:])),
		Op:      le.Uint32(b[52:]),
	}, true
}

// convert names the event's file and thread; it returns nil for calls on
// files that are not reported.
func (t *Tracer) convert(ev *iotraceIotraceEvent) (*event.Write, error) {
	id := fileID{dev: ev.Dev, ino: ev.Ino}
	path, ok := t.files.lookup(id, int(ev.Fd))
	if !ok {
		t.counts.unnamed.Add(1)
		return nil, nil
	}
	f, ok := t.classifyCached(path)
	if !ok {
		t.counts.otherFiles.Add(1)
		return nil, nil
	}
	op := Op(ev.Op)
	w := &event.Write{
		Start:     t.clock.wall(ev.StartNs),
		End:       t.clock.wall(ev.EndNs),
		LatencyMs: float64(ev.EndNs-ev.StartNs) / 1e6,
		TID:       int(ev.Tid),
		Thread:    t.threads.name(int(ev.Tid)),
		Op:        op.String(),
		Offset:    ev.Pos,
		File:      f.rel,
		Topic:     f.topic,
		Partition: f.partition,
		Dev:       t.devName(ev.Dev),
	}
	if op.isSync() {
		w.Offset = -1
	}
	switch {
	case ev.Ret < 0:
		w.Error = unix.ErrnoName(syscall.Errno(-ev.Ret))
		if w.Error == "" {
			w.Error = "errno " + strconv.FormatInt(-ev.Ret, 10)
		}
	case !op.isSync():
		w.Bytes = ev.Ret
	}
	t.counts.reported.Add(1)
	return w, nil
}

// eventCounts are Stats' counts of the system calls' events read, kept
// apart from the kernel's loss counters that Stats reads from the maps.
// Each subtracer counts its own.
type eventCounts struct {
	events, reported, otherFiles, unnamed atomic.Uint64
}

// fill copies the counts into s.
func (c *eventCounts) fill(s *Stats) {
	s.Events, s.Reported, s.OtherFiles, s.Unnamed = c.events.Load(), c.reported.Load(), c.otherFiles.Load(), c.unnamed.Load()
}

// Stats returns the counts so far, with the kernel's loss counters.
func (t *Tracer) Stats() (Stats, error) {
	var s Stats
	t.counts.fill(&s)
	if err := sumCounters(t.objs.KsioCounters, &s.RingbufDrops, &s.HistFull, &s.StartFull); err != nil {
		return s, err
	}
	for _, sub := range t.subs {
		if err := sub.counters(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// sumCounters reads a per-CPU array of counters into dsts, in order.
func sumCounters(m *ebpf.Map, dsts ...*uint64) error {
	for i, dst := range dsts {
		var perCPU []uint64
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return fmt.Errorf("iotrace: read counters: %w", err)
		}
		for _, v := range perCPU {
			*dst += v
		}
	}
	return nil
}

// JournalGroups returns the tracepoint groups attached for Config.Journal
// (jbd2, ext4, ext4-fast-commit, xfs, block), and why others were not (a
// file system's module not loaded, a kernel without ext4's fast-commit
// tracepoints, a record layout this build does not know, no CONFIG_HZ for
// the jbd2 phases).
func (t *Tracer) JournalGroups() (attached, skipped []string) {
	if t.journal == nil {
		return nil, nil
	}
	return slices.Clone(t.journal.groups), slices.Clone(t.journal.skipped)
}

// detach closes the links: the programs stop running.
func (t *Tracer) detach() error {
	var errs []error
	t.mu.Lock()
	links := t.links
	t.links = nil
	t.mu.Unlock()
	for _, l := range links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	t.mu.Lock()
	for _, s := range t.subs {
		errs = append(errs, s.detach())
	}
	t.mu.Unlock()
	return errors.Join(errs...)
}

// Close detaches the programs and releases the ring buffer, the maps and
// the programs. It is safe to call more than once.
func (t *Tracer) Close() error {
	t.closeOnce.Do(func() {
		errs := []error{t.detach()}
		if t.rd != nil {
			errs = append(errs, t.rd.Close())
		}
		for _, s := range t.subs {
			errs = append(errs, s.close())
		}
		errs = append(errs, t.objs.Close())
		if err := errors.Join(errs...); err != nil {
			t.closeErr = fmt.Errorf("iotrace: close: %w", err)
		}
	})
	return t.closeErr
}

// Op is a traced system call, or file system function (enum iotrace_op in
// bpf/iotrace.h).
type Op uint32

// The traced system calls, then the file system functions (FunctionMode).
const (
	OpWrite Op = iota
	OpPwrite64
	OpWritev
	OpPwritev
	OpPwritev2
	OpFsync
	OpFdatasync
	OpExt4WriteIter
	OpXfsWriteIter
	numOps
)

var opNames = [numOps]string{"write", "pwrite64", "writev", "pwritev", "pwritev2", "fsync", "fdatasync",
	"ext4_file_write_iter", "xfs_file_write_iter"}

// IsFunction reports whether op is a file system function, timed inside a
// write system call that is reported too.
func (o Op) IsFunction() bool { return o == OpExt4WriteIter || o == OpXfsWriteIter }

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

func (o Op) isSync() bool { return o == OpFsync || o == OpFdatasync }

// devString formats a kernel dev_t (major << 20 | minor, as in
// super_block.s_dev) as "major:minor".
func devString(dev uint32) string {
	return strconv.Itoa(int(dev>>20)) + ":" + strconv.Itoa(int(dev&(1<<20-1)))
}

// reportedFile is a file that passed the filters, named for output.
type reportedFile struct {
	rel       string // relative to its log directory
	topic     string
	partition int32
}

// classify reports whether path is to be reported, and how it is named.
// classifiedFile is a cached classify result.
type classifiedFile struct {
	f  reportedFile
	ok bool
}

// maxCached bounds convert's caches (a broker has a few files per
// partition open; rolled segments leave stale entries until a reset).
const maxCached = 1 << 16

func (t *Tracer) classifyCached(path string) (reportedFile, bool) {
	if c, ok := t.classified[path]; ok {
		return c.f, c.ok
	}
	if t.classified == nil || len(t.classified) >= maxCached {
		t.classified = make(map[string]classifiedFile)
	}
	f, ok := classify(path, t.cfg.LogDirs, t.cfg.AllFiles)
	t.classified[path] = classifiedFile{f, ok}
	return f, ok
}

func (t *Tracer) devName(dev uint32) string {
	if name, ok := t.devNames[dev]; ok {
		return name
	}
	if t.devNames == nil || len(t.devNames) >= maxCached {
		t.devNames = make(map[uint32]string)
	}
	name := devString(dev)
	t.devNames[dev] = name
	return name
}

func classify(path string, logDirs []string, allFiles bool) (reportedFile, bool) {
	rel := ""
	for _, d := range logDirs {
		if r, err := filepath.Rel(d, path); err == nil && r != "." && !strings.HasPrefix(r, "..") {
			rel = r
			break
		}
	}
	if rel == "" {
		return reportedFile{}, false
	}
	loc, err := parseLocation(path)
	if err != nil {
		if !allFiles {
			return reportedFile{}, false
		}
		return reportedFile{rel: rel, partition: -1}, true
	}
	if !allFiles && !loc.isLog {
		return reportedFile{}, false
	}
	return reportedFile{rel: rel, topic: loc.topic, partition: loc.partition}, true
}
