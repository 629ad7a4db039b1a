package iotrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// Kind is what a journal histogram counts (enum iojournal_kind in
// bpf/iojournal.h).
type Kind uint32

// The journal, XFS log and block-layer kinds.
const (
	KindJBD2Commit  Kind = iota // jbd2 transaction commits
	KindExt4Fsync               // ext4_sync_file
	KindXlogWrite               // XFS iclog writes
	KindXFSLogForce             // XFS log forces: counted, no latency
	KindBlockRead               // block requests, by operation
	KindBlockWrite
	KindBlockFlush
	KindBlockOther
	KindExt4FastCommit // ext4_fc_commit, in the fsyncing thread
	numKinds
)

var kindNames = [numKinds]string{"jbd2-commit", "ext4-fsync", "xlog-write", "xfs-log-force",
	"blk-read", "blk-write", "blk-flush", "blk-other", "ext4-fast-commit"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// HasLatency is false for kinds that are only counted (XFS log forces).
func (k Kind) HasLatency() bool { return k != KindXFSLogForce }

// blockOp names the block kinds as event.BlockIO's op.
func (k Kind) blockOp() string {
	switch k {
	case KindBlockRead:
		return "read"
	case KindBlockWrite:
		return "write"
	case KindBlockFlush:
		return "flush"
	}
	return "other"
}

// journalTracepoint is one program of bpf/iojournal.bpf.c with the
// record fields it reads, checked against the running kernel's format.
// unit names the tracepoints attached together, all or none, when it is
// not the whole group: ext4's fast-commit tracepoints are younger (5.10)
// than its fsync ones, and a kernel without them still has fsyncs.
type journalTracepoint struct {
	group, name string
	prog        *ebpf.Program
	fields      []tpField
	unit        string
}

// attachUnit is what tp is attached with: its unit, or its group.
func (tp *journalTracepoint) attachUnit() string {
	if tp.unit != "" {
		return tp.unit
	}
	return tp.group
}

// unitFastCommits is the attach unit of ext4's fast-commit tracepoints.
const unitFastCommits = "ext4-fast-commit"

func (o *iojournalObjects) tracepoints() []journalTracepoint {
	commit := []tpField{{"dev", 8, 4}, {"sync_commit", 12, 1}, {"transaction", 16, 4}}
	iclog := []tpField{{"dev", 8, 4}, {"offset", 20, 4}, {"lsn", 32, 8}}
	return []journalTracepoint{
		// Ends first: once an interval's start is traced, its end is too.
		{"jbd2", "jbd2_end_commit", o.KsioJbd2End, commit, ""},
		{"jbd2", "jbd2_run_stats", o.KsioJbd2Stats, []tpField{{"dev", 8, 4}, {"tid", 12, 4},
			{"wait", 16, 8}, {"request_delay", 24, 8}, {"running", 32, 8}, {"locked", 40, 8},
			{"flushing", 48, 8}, {"logging", 56, 8}, {"handle_count", 64, 4}, {"blocks", 68, 4},
			{"blocks_logged", 72, 4}}, ""},
		{"jbd2", "jbd2_start_commit", o.KsioJbd2Start, commit, ""},
		{"ext4", "ext4_sync_file_exit", o.KsioExt4FsOut, []tpField{{"dev", 8, 4}, {"ino", 16, 8}, {"ret", 24, 4}}, ""},
		{"ext4", "ext4_sync_file_enter", o.KsioExt4FsIn, []tpField{{"dev", 8, 4}, {"ino", 16, 8}, {"datasync", 32, 4}}, ""},
		{"ext4", "ext4_fc_commit_stop", o.KsioExt4FcOut, []tpField{{"dev", 8, 4}, {"nblks", 12, 4}, {"reason", 16, 4},
			{"tid", 32, 4}}, unitFastCommits},
		{"ext4", "ext4_fc_commit_start", o.KsioExt4FcIn, []tpField{{"dev", 8, 4}}, unitFastCommits},
		{"xfs", "xlog_iclog_sync_done", o.KsioXlogDone, iclog, ""},
		{"xfs", "xlog_iclog_write", o.KsioXlogWrite, iclog, ""},
		{"xfs", "xfs_log_force", o.KsioXfsForce, []tpField{{"dev", 8, 4}}, ""},
		{"block", "block_rq_complete", o.KsioRqDone, []tpField{{"dev", 8, 4}, {"sector", 16, 8}, {"error", 28, 4}, {"rwbs", 34, 8}}, ""},
		{"block", "block_rq_issue", o.KsioRqIssue, []tpField{{"dev", 8, 4}, {"sector", 16, 8}, {"bytes", 28, 4}, {"rwbs", 34, 8}}, ""},
	}
}

// journal is the loaded bpf/iojournal.bpf.c: journal, XFS log and block
// tracing per device of the log directories.
type journal struct {
	objs iojournalObjects
	attachment
	// hz is CONFIG_HZ, to convert jbd2_run_stats' jiffies; 0 if unknown.
	hz int
	// groups are the tracepoint groups attached; skipped says why the
	// others were not.
	groups  []string
	skipped []string
	// events counts the events read (Stats.JournalEvents).
	events atomic.Uint64
}

// openJournalSource is the journal's entry of sources.
func openJournalSource(t *Tracer, cfg *Config, devs []uint32) (subtracer, error) {
	j, err := openJournal(uint64(cfg.MinLatency), devs, cfg.ringFlags())
	if err != nil {
		return nil, err
	}
	t.journal = j
	return j, nil
}

// openJournal loads bpf/iojournal.bpf.c, fills its device filter with
// devs (and the disks of those that are partitions) and attaches every
// tracepoint group this kernel has with the record layout it was built
// for. A group (or a unit of one, as ext4's fast commits) is attached
// whole or not at all, so no start goes without its end.
func openJournal(minLatency uint64, devs []uint32, ringFlags uint64) (_ *journal, err error) {
	spec, err := loadIojournal()
	if err != nil {
		return nil, fmt.Errorf("iotrace: journal: %w", err)
	}
	if err := setRingFlags(spec, ringFlags); err != nil {
		return nil, fmt.Errorf("iotrace: journal: %w", err)
	}
	if err := spec.Variables[iojournalVarMinLatencyNs].Set(minLatency); err != nil {
		return nil, fmt.Errorf("iotrace: journal: set minimum latency: %w", err)
	}
	j := &journal{}
	if j.hz, err = kernelHZ(); err != nil {
		j.skipped = append(j.skipped, "jbd2 phases: "+err.Error())
	}
	if err := loadObjects(spec, &j.objs, "iotrace: journal"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			j.close()
		}
	}()
	for _, dev := range withDisks(devs) {
		if err := j.objs.KsioJdevs.Put(dev, uint8(1)); err != nil {
			return nil, fmt.Errorf("iotrace: journal: device filter: %w", err)
		}
	}
	if err := j.attach(); err != nil {
		return nil, err
	}
	if j.rd, err = ringbuf.NewReader(j.objs.KsioJevents); err != nil {
		return nil, fmt.Errorf("iotrace: journal ring buffer reader: %w", err)
	}
	return j, nil
}

// attach attaches every attach unit (a tracepoint group, or part of one)
// whose tracepoints this kernel has with the record layout the programs
// were built for, and notes why the others were skipped.
func (j *journal) attach() error {
	tps := j.objs.tracepoints()
	bad := unusableUnits(tracefsEvents, tps)
	for _, tp := range tps {
		unit := tp.attachUnit()
		if reason, ok := bad[unit]; ok {
			if !slices.Contains(j.skipped, reason) {
				j.skipped = append(j.skipped, reason)
			}
			continue
		}
		l, err := link.Tracepoint(tp.group, tp.name, tp.prog, nil)
		if err != nil {
			return fmt.Errorf("iotrace: attach to tracepoint %s:%s: %w", tp.group, tp.name, err)
		}
		j.links = append(j.links, l)
		if !slices.Contains(j.groups, unit) {
			j.groups = append(j.groups, unit)
		}
	}
	return nil
}

// unusableUnits returns, by attach unit, why one of its tracepoints
// cannot be attached: missing from events (a file system's module not
// loaded, or a kernel older than the tracepoint), or with another layout.
func unusableUnits(events string, tps []journalTracepoint) map[string]string {
	bad := map[string]string{}
	for _, tp := range tps {
		unit := tp.attachUnit()
		if _, ok := bad[unit]; ok {
			continue
		}
		err := checkFormat(events, tp.group, tp.name, tp.fields)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrNotExist) && tp.unit != "":
			bad[unit] = unit + ": no tracepoint " + tp.group + ":" + tp.name + " (module not loaded, or a kernel without it)"
		case errors.Is(err, os.ErrNotExist):
			bad[unit] = unit + ": no tracepoint " + tp.name + " (module not loaded)"
		default:
			bad[unit] = unit + ": " + err.Error()
		}
	}
	return bad
}

// withDisks adds, for each device that is a partition, its whole disk:
// the block tracepoints report the disk (and sectors from its start).
func withDisks(devs []uint32) []uint32 {
	out := slices.Clone(devs)
	for _, d := range devs {
		sys := filepath.Join("/sys/dev/block", devString(d))
		if _, err := os.Stat(filepath.Join(sys, "partition")); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
		if err != nil {
			continue
		}
		maj, min, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		if disk := uint32(ma<<20 | mi); !slices.Contains(out, disk) {
			out = append(out, disk)
		}
	}
	return out
}

func (j *journal) close() error { return j.closeWith(&j.objs) }

// journalEventSize is sizeof(struct iojournal_event).
const journalEventSize = 128

// decodeJournalEvent decodes struct iojournal_event (little-endian).
func decodeJournalEvent(b []byte) (iojournalIojournalEvent, bool) {
	if len(b) < journalEventSize {
		return iojournalIojournalEvent{}, false
	}
	le := binary.LittleEndian
	e := iojournalIojournalEvent{
		StartNs:      le.Uint64(b[0:]),
		EndNs:        le.Uint64(b[8:]),
		Id:           le.Uint64(b[16:]),
		Wait:         le.Uint64(b[24:]),
		RequestDelay: le.Uint64(b[32:]),
		Running:      le.Uint64(b[40:]),
		Locked:       le.Uint64(b[48:]),
		Flushing:     le.Uint64(b[56:]),
		Logging:      le.Uint64(b[64:]),
		HandleCount:  le.Uint32(b[72:]),
		Blocks:       le.Uint32(b[76:]),
		BlocksLogged: le.Uint32(b[80:]),
		Dev:          le.Uint32(b[84:]),
		Kind:         le.Uint32(b[88:]),
		Bytes:        le.Uint32(b[92:]),
		Err:          int32(le.Uint32(b[96:])),
		Tid:          le.Uint32(b[100:]),
		Pid:          le.Uint32(b[104:]),
		HasStats:     b[108],
		Sync:         b[109],
		FcStatus:     b[118],
	}
	for i := range e.Rwbs {
		e.Rwbs[i] = int8(b[110+i])
	}
	return e, true
}

func (j *journal) counters(s *Stats) error {
	s.JournalEvents += j.events.Load()
	return sumCounters(j.objs.KsioJcounters, &s.JournalRingbufDrops, &s.JournalHistFull, &s.JournalStartFull)
}

func (j *journal) programs() []*ebpf.Program {
	var progs []*ebpf.Program
	for _, tp := range j.objs.tracepoints() {
		progs = append(progs, tp.prog)
	}
	return progs
}

func (j *journal) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readPolled(j.rd, func(b []byte) error {
		ev, ok := decodeJournalEvent(b)
		if !ok {
			return fmt.Errorf("iotrace: journal ring buffer sample of %d bytes, want %d", len(b), journalEventSize)
		}
		j.events.Add(1)
		je, err := t.convertJournal(&ev)
		if err != nil {
			return err
		}
		return deliver.do(func() error { return h.Handle(je) })
	})
}

// journalEvent is one of *event.JournalCommit (jbd2 commits, ext4 fast
// commits, XFS iclog writes), *event.FileSync and *event.BlockIO.
type journalEvent any

// convertJournal turns a ring-buffer record into its event type.
func (t *Tracer) convertJournal(ev *iojournalIojournalEvent) (journalEvent, error) {
	start, end := t.clock.wall(ev.StartNs), t.clock.wall(ev.EndNs)
	lat := float64(ev.EndNs-ev.StartNs) / 1e6
	dev := devString(ev.Dev)
	switch k := Kind(ev.Kind); k {
	case KindJBD2Commit:
		c := &event.JournalCommit{Kind: event.KindJBD2Commit, Start: start, End: end, LatencyMs: lat,
			Dev: dev, FS: "ext4", TID: uint32(ev.Id), SyncCommit: ev.Sync != 0}
		if ev.HasStats != 0 && t.journal.hz > 0 {
			c.Phases = phases(ev, t.journal.hz)
		}
		return c, nil
	case KindExt4FastCommit:
		return &event.JournalCommit{Kind: event.KindExt4FastCommit, Start: start, End: end, LatencyMs: lat,
			Dev: dev, FS: "ext4", TID: uint32(ev.Id), FastCommit: &event.FastCommit{PID: int(ev.Pid), TID: int(ev.Tid),
				Blocks: ev.Blocks, Status: fastCommitStatus(ev.FcStatus)}}, nil
	case KindXlogWrite:
		return &event.JournalCommit{Kind: event.KindXlogWrite, Start: start, End: end, LatencyMs: lat,
			Dev: dev, FS: "xfs", LSN: ev.Id, Bytes: int64(ev.Bytes)}, nil
	case KindExt4Fsync:
		s := &event.FileSync{Kind: event.KindExt4Fsync, Start: start, End: end, LatencyMs: lat,
			PID: int(ev.Pid), TID: int(ev.Tid), Datasync: ev.Sync != 0, Dev: dev, Ino: ev.Id, Partition: -1}
		id := fileID{dev: ev.Dev, ino: ev.Id}
		var path string
		var ok bool
		if int(ev.Pid) == t.cfg.PID {
			path, ok = t.files.lookup(id, -1)
		} else {
			path, ok = t.files.known(id) // another process's file: see fileResolver.known
		}
		if ok {
			if f, ok := classify(path, t.cfg.LogDirs, true); ok {
				s.File, s.Topic, s.Partition = f.rel, f.topic, f.partition
			}
		}
		if ev.Err < 0 {
			s.Error = errnoName(-int64(ev.Err))
		}
		return s, nil
	case KindBlockRead, KindBlockWrite, KindBlockFlush, KindBlockOther:
		b := &event.BlockIO{Kind: event.KindBlockIO, Start: start, End: end, LatencyMs: lat, Dev: dev,
			Op: k.blockOp(), RWBS: rwbsString(ev.Rwbs), Bytes: int64(ev.Bytes), Sector: ev.Id}
		if ev.Err < 0 {
			b.Error = errnoName(-int64(ev.Err))
		}
		return b, nil
	}
	return nil, fmt.Errorf("iotrace: journal event of unknown kind %d", ev.Kind)
}

// fastCommitStatus names ext4_fc_commit_stop's reason (EXT4_FC_STATUS_*;
// the program stores 255 for any that does not fit a byte).
func fastCommitStatus(reason uint8) string {
	switch reason {
	case 0:
		return event.FastCommitDone
	case 1:
		return event.FastCommitIneligible
	case 2:
		return event.FastCommitSkipped
	case 3:
		return event.FastCommitFailed
	}
	return "status " + strconv.Itoa(int(reason))
}

// phases converts jbd2_run_stats' jiffies to milliseconds.
func phases(ev *iojournalIojournalEvent, hz int) *event.JournalPhases {
	ms := func(j uint64) float64 { return float64(j) * 1000 / float64(hz) }
	return &event.JournalPhases{WaitMs: ms(ev.Wait), RequestDelayMs: ms(ev.RequestDelay),
		RunningMs: ms(ev.Running), LockedMs: ms(ev.Locked), FlushingMs: ms(ev.Flushing),
		LoggingMs: ms(ev.Logging), HandleCount: ev.HandleCount, Blocks: ev.Blocks, BlocksLogged: ev.BlocksLogged}
}

func rwbsString(r [8]int8) string {
	b := make([]byte, 0, len(r))
	for _, c := range r {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func errnoName(errno int64) string {
	if n := unix.ErrnoName(syscall.Errno(errno)); n != "" {
		return n
	}
	return "errno " + strconv.FormatInt(errno, 10)
}
