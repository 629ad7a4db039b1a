package event

import "time"

// The kinds of journal and block-layer events kscope iotrace reports (the
// "kind" field of their JSON, which tells them apart from Write lines in
// the same JSON Lines stream).
const (
	KindJBD2Commit = "jbd2_commit" // an ext4 journal (jbd2) transaction commit
	// KindExt4FastCommit is an ext4 fast commit (ext4_fc_commit), run by
	// the fsyncing thread itself on a file system made with -O fast_commit.
	KindExt4FastCommit = "ext4_fast_commit"
	KindXlogWrite      = "xlog_write" // an XFS in-core log buffer written to disk
	KindExt4Fsync      = "ext4_fsync" // ext4_sync_file: an fsync or fdatasync in ext4
	KindBlockIO        = "block_io"   // one block-layer request
)

// JournalCommit is one file-system journal write on a device of the
// broker's log directories: an ext4 jbd2 transaction commit
// (jbd2_start_commit to jbd2_end_commit), an ext4 fast commit
// (ext4_fc_commit_start to ext4_fc_commit_stop, in the thread that ran
// it), or an XFS iclog write (xlog_iclog_write to xlog_iclog_sync_done).
// Times are on the wall clock, as in Write.
type JournalCommit struct {
	Kind string `json:"kind"` // KindJBD2Commit, KindExt4FastCommit or KindXlogWrite
	// Start and End in RFC 3339 with nanoseconds in JSON.
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	// Dev is the file system's device as "major:minor", FS "ext4" or "xfs".
	Dev string `json:"dev"`
	FS  string `json:"fs"`
	// TID is the jbd2 transaction id (ext4 only; for a fast commit, the
	// running transaction it committed).
	TID uint32 `json:"tid,omitempty"`
	// LSN is the log sequence number of the iclog's header (XFS only):
	// cycle in the high 32 bits, block in the low 32.
	LSN uint64 `json:"lsn,omitempty"`
	// SyncCommit: jbd2 was asked to commit for a synchronous operation
	// (an fsync, or a file system mounted sync).
	SyncCommit bool `json:"sync_commit,omitempty"`
	// Bytes is the log data in an XFS iclog when it was written.
	Bytes int64 `json:"bytes,omitempty"`
	// Phases is jbd2_run_stats' account of the transaction; nil for XFS,
	// and when the kernel's tick rate (CONFIG_HZ) could not be read.
	Phases *JournalPhases `json:"phases,omitempty"`
	// FastCommit is how an ext4 fast commit went; nil for other kinds.
	FastCommit *FastCommit `json:"fast_commit,omitempty"`
}

// How an ext4 fast commit ended: ext4_fc_commit_stop's reason
// (EXT4_FC_STATUS_* in fs/ext4/fast_commit.h).
const (
	// FastCommitDone: the fast-commit blocks were written and waited for.
	FastCommitDone = "done"
	// FastCommitIneligible: the transaction held a change fast commits
	// cannot log (a rename, an xattr, a resize...): it fell back to a
	// full jbd2 commit, which the interval includes.
	FastCommitIneligible = "ineligible"
	// FastCommitSkipped: another commit, fast or full, covered the
	// transaction; the interval is the wait for it when one was running.
	FastCommitSkipped = "skipped"
	// FastCommitFailed: the fast commit could not be started or written
	// and fell back to a full jbd2 commit (when it could not start, the
	// full commit comes after the interval).
	FastCommitFailed = "failed"
)

// FastCommit is what an ext4 fast commit did, beyond its interval.
type FastCommit struct {
	// PID and TID are the process and thread that ran ext4_fc_commit:
	// the one whose fsync (or fdatasync, or O_SYNC write) asked for it.
	PID int `json:"pid"`
	TID int `json:"thread_tid"`
	// Blocks is how many fast-commit blocks it wrote (0 unless done).
	Blocks uint32 `json:"blocks"`
	// Status is FastCommitDone, FastCommitIneligible, FastCommitSkipped,
	// FastCommitFailed, or "status N" for one this build does not know.
	Status string `json:"status"`
}

// FellBack reports whether the fast commit gave way to a full jbd2
// commit.
func (f *FastCommit) FellBack() bool {
	return f.Status == FastCommitIneligible || f.Status == FastCommitFailed
}

// JournalPhases is how a jbd2 transaction spent its life (jbd2_run_stats),
// in milliseconds. The kernel counts these in jiffies, so each is a
// multiple of the tick (1000/CONFIG_HZ ms).
type JournalPhases struct {
	// WaitMs: how long the transaction waited for updates to finish
	// before it could be locked.
	WaitMs float64 `json:"wait_ms"`
	// RequestDelayMs: from the commit request to the commit's start.
	RequestDelayMs float64 `json:"request_delay_ms"`
	// RunningMs: how long the transaction ran, taking handles.
	RunningMs float64 `json:"running_ms"`
	// LockedMs: waiting for open handles to finish.
	LockedMs float64 `json:"locked_ms"`
	// FlushingMs: writing ordered-mode data to disk first.
	FlushingMs float64 `json:"flushing_ms"`
	// LoggingMs: writing the metadata blocks and commit block to the journal.
	LoggingMs float64 `json:"logging_ms"`
	// HandleCount is how many handles (file-system operations) the
	// transaction held; Blocks the metadata blocks it changed,
	// BlocksLogged those written to the journal (with descriptors).
	HandleCount  uint32 `json:"handle_count"`
	Blocks       uint32 `json:"blocks"`
	BlocksLogged uint32 `json:"blocks_logged"`
}

// FileSync is one ext4 fsync or fdatasync (ext4_sync_file_enter to
// ext4_sync_file_exit) on a device of the log directories, by any process.
type FileSync struct {
	Kind      string    `json:"kind"` // KindExt4Fsync
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	// PID and TID: the calling process and thread.
	PID int `json:"pid"`
	TID int `json:"tid"`
	// Datasync: fdatasync (or fsync with data only to write).
	Datasync bool   `json:"datasync"`
	Dev      string `json:"dev"`
	Ino      uint64 `json:"ino"`
	// File, Topic and Partition as in Write when the inode is one of the
	// broker's files in a log directory; File is empty otherwise.
	File      string `json:"file,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// Error is the errno name when the sync failed.
	Error string `json:"error,omitempty"`
}

// BlockIO is one block-layer request (block_rq_issue to
// block_rq_complete) on a disk holding a log directory: the time the
// device took, queueing in the driver included.
type BlockIO struct {
	Kind      string    `json:"kind"` // KindBlockIO
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	// Dev is the disk as "major:minor" (for a partition, the whole disk).
	Dev string `json:"dev"`
	// Op is read, write, flush (a cache flush with no data) or other
	// (discard, write zeroes...); RWBS the kernel's flags, e.g. "WS"
	// (sync write), "FWFS" (preflush, write, FUA, sync).
	Op   string `json:"op"`
	RWBS string `json:"rwbs"`
	// Bytes is the request's size; Sector its first 512-byte sector.
	Bytes  int64  `json:"bytes"`
	Sector uint64 `json:"sector"`
	// Error is the block status as an errno name when the request failed.
	Error string `json:"error,omitempty"`
}

// KindKernelWait marks a KernelWait.
const KindKernelWait = "kernel_wait"

// KernelWait is a broker thread's stay off the CPU after it went to sleep
// uninterruptibly (D state) in the kernel, traced by kscope iotrace
// (bpf/iowait.bpf.c): where a thread blocked outside a write call, such as
// a page fault on a memory-mapped index file of a frozen file system, or
// a journal handle. It runs from the switch away to the switch back, so it
// includes the wait for a CPU after the wake-up.
type KernelWait struct {
	Kind      string    `json:"kind"` // KindKernelWait
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	TID       int       `json:"tid"`
	Thread    string    `json:"thread"`
	// Stack is the kernel stack it slept on, innermost function first.
	Stack []string `json:"stack,omitempty"`
}

// KindCPUSteal marks a CPUSteal.
const KindCPUSteal = "cpu_steal"

// CPUSteal is time the hypervisor took from one of the machine's virtual
// CPUs, traced by kscope iotrace (bpf/iosteal.bpf.c): between Start and
// End (two context switches on the CPU) the vCPU was not running for
// StolenMs in all. Whatever ran on that CPU then (a broker's network
// thread reading a request, a handler appending to the log) stopped for
// that long without any trace inside the machine; only the paravirt steal
// clock, which the scheduler reads, records it. One task had the CPU
// between the two switches: the one the time was taken from.
type CPUSteal struct {
	Kind     string    `json:"kind"` // KindCPUSteal
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	CPU      int       `json:"cpu"`
	StolenMs float64   `json:"stolen_ms"`
	// TID and PID are the task that had the CPU (0: the CPU was idle,
	// and the steal delayed its wake-up); Thread its name when it is a
	// thread of the traced broker.
	TID    int    `json:"tid"`
	PID    int    `json:"pid"`
	Thread string `json:"thread,omitempty"`
}

// Stolen is StolenMs as a duration.
func (s *CPUSteal) Stolen() time.Duration {
	return time.Duration(s.StolenMs * float64(time.Millisecond))
}

// MaxStealLag bounds how long after the vCPU is back its steal may be
// accounted: a scheduler tick, 10 ms at the lowest CONFIG_HZ (100).
const MaxStealLag = 10 * time.Millisecond

// Span is where the stolen time itself may lie: it was accounted between
// Start and End, at a run-queue clock update that may come up to lag
// (a scheduler tick) after the vCPU is back.
func (s *CPUSteal) Span(lag time.Duration) (from, to time.Time) {
	return s.Start.Add(-lag - s.Stolen()), s.End
}
