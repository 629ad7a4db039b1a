// Package recording is kscope's recording directory: what `kscope record`
// writes and `kscope explain` (and later report) reads. A recording is a
// directory of JSON Lines files in the shared event encodings (package
// event) and a meta.json that says where, when and how it was taken and
// what was lost:
//
//	meta.json         Meta
//	requests.jsonl    event.Request, as `kscope requests --format json`
//	writes.jsonl      event.Write, as `kscope iotrace --format json`
//	journal.jsonl     event.JournalCommit, event.FileSync, event.BlockIO, event.KernelWait, event.CPUSteal (by "kind")
//	sched.jsonl       event.RunDelay, event.Wakeup, event.ConnThread, event.CPUThrottle, event.JVMPause (by "kind"; optional)
//	lockwaits.jsonl   event.LockWait, from a JFR recording (optional)
//	capture.pcapng    the raw capture (optional, record --pcap)
//	broker.jfr        the broker's flight recording (optional, record --jfr)
//	use.jsonl         use.Sample, the host's USE figures every second (optional)
//
// Each kind of event of the writes, journal and sched files goes to the
// file of its event.Stream, as the table event.Kinds says: Writer.Handlers
// and ReadIO walk it, so a kind added there needs nothing here.
//
// Readers stream: no file is loaded whole, and a line longer than
// MaxLineBytes is an error naming the file and line. The files are read
// as untrusted: only regular files are opened; meta.json is written when
// the recording starts and again, atomically, when it ends, so a
// recording cut short by a crash is still one; a Reader with a Tally
// leaves out, and counts, a last line the crash cut and events whose
// values cannot be true (check.go), and errors quote at most an escaped
// excerpt of a line.
package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/use"
)

// The files of a recording directory.
const (
	MetaFile      = "meta.json"
	RequestsFile  = "requests.jsonl"
	WritesFile    = "writes.jsonl"
	JournalFile   = "journal.jsonl"
	LockWaitsFile = "lockwaits.jsonl"
	CaptureFile   = "capture.pcapng"
	// TLSKeyLogFile is the copy of the broker's key log record --tls-keys
	// attach keeps (mode 0600): secrets, deleted with the recording.
	TLSKeyLogFile = "tls-keys.log"
	JFRFile       = "broker.jfr"
	UseFile       = "use.jsonl"
	// SchedFile holds the scheduling and JVM evidence: the broker
	// threads' run-queue delays, which thread serves each connection,
	// CPU-quota throttling of its cgroup, and the JVM's stop-the-world
	// pauses. Its writer is safe for concurrent use: these come from the
	// tracer, a cgroup sampler and, at the end, a JVM log.
	SchedFile = "sched.jsonl"
	// JVMLogFile is the JVM's own log of its GC and safepoint pauses,
	// written by the broker while kscope record ran (jcmd VM.log); its
	// pauses are in SchedFile.
	JVMLogFile = "jvm.log"
)

// FormatVersion is the version of the directory layout and meta.json.
const FormatVersion = 1

// MaxLineBytes bounds one JSON line when reading. Requests with many
// message ids are the longest lines; 64 MiB is far above any real one.
const MaxLineBytes = 64 << 20

// Meta describes a recording: the host, the broker, its log directories
// and file systems, the clocks, and the loss counters of every source.
type Meta struct {
	Version   int       `json:"version"`
	Tool      string    `json:"tool"` // "kscope record"
	Host      string    `json:"host"`
	Kernel    string    `json:"kernel"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Interface string    `json:"interface"`
	Ports     []uint16  `json:"ports"`

	Broker Broker `json:"broker"`

	// Clock: packet timestamps are the kernel's CLOCK_REALTIME at
	// capture; traced events are timed on CLOCK_MONOTONIC and converted;
	// TraceClockUncertaintyNs bounds that conversion's error.
	Clock Clock `json:"clock"`

	Capture CaptureCounters `json:"capture"`
	Trace   TraceCounters   `json:"trace"`
	// LockWaits counts lock waits read from a JFR file, when one was given.
	LockWaits *LockWaitCounters `json:"lock_waits,omitempty"`
	// Sched counts what went into sched.jsonl, and why a source of it
	// was missing; nil in recordings made before it existed.
	Sched *SchedCounters `json:"sched,omitempty"`

	// SlowLog is set on the files 'kscope agent' keeps: they hold only
	// the slow requests (and the requests before them on their
	// connections) and the I/O around them, not every request.
	SlowLog *SlowLog `json:"slow_log,omitempty"`

	// Files lists the data files present, by name.
	Files []string `json:"files"`
}

// SlowLog says what an agent's slow-request file kept. A reader that
// ranks requests by percentile must use ThresholdMs instead: the
// percentiles of a file of slow requests are not the broker's.
type SlowLog struct {
	// ThresholdMs: requests of APIs at or above this latency were kept.
	ThresholdMs float64 `json:"threshold_ms"`
	// APIs are the APIs the threshold applies to (kmsg names); empty: all.
	APIs []string `json:"apis,omitempty"`
	// ContextRequests were kept because a slow request followed them on
	// their connection (explain looks for requests queued behind others).
	ContextRequests int64 `json:"context_requests"`
	// Dropped slow requests: more arrived than the agent keeps per second.
	Dropped int64 `json:"dropped"`
}

// Broker is the traced broker process.
type Broker struct {
	PID int `json:"pid"`
	// PIDs are every broker process traced, in order, when it restarted
	// during the recording (record follows it with --pid auto).
	PIDs    []int    `json:"pids,omitempty"`
	Version string   `json:"version,omitempty"` // from its kafka-clients jar; empty when unknown
	LogDirs []LogDir `json:"log_dirs"`
	// NodeID and ClusterID are the broker's node.id (broker.id) and
	// cluster.id from its log dirs' meta.properties; nil and empty when
	// not readable (and in recordings made before they were kept).
	NodeID    *int32 `json:"node_id,omitempty"`
	ClusterID string `json:"cluster_id,omitempty"`
}

// LogDir is one broker log directory and the file system it is on.
type LogDir struct {
	Path       string `json:"path"`
	Device     string `json:"device"` // major:minor, as in writes' "dev"
	FSType     string `json:"fs_type"`
	Source     string `json:"source"` // e.g. /dev/loop3
	MountPoint string `json:"mount_point"`
	// Options are the mount's and the super block's options, e.g.
	// "rw,relatime,data=ordered".
	Options string `json:"options"`
}

// Clock says how the sources' times relate.
type Clock struct {
	CaptureClock string `json:"capture_clock"` // "CLOCK_REALTIME"
	TraceClock   string `json:"trace_clock"`   // "CLOCK_MONOTONIC, converted to CLOCK_REALTIME"
	// TraceClockOffsetNs is CLOCK_REALTIME - CLOCK_MONOTONIC, added to
	// the kernel's times.
	TraceClockOffsetNs      int64 `json:"trace_clock_offset_ns"`
	TraceClockUncertaintyNs int64 `json:"trace_clock_uncertainty_ns"`
}

// CaptureCounters are the live capture's and the wire decoder's counters.
type CaptureCounters struct {
	Packets       int64  `json:"packets"`
	KernelDrops   int64  `json:"kernel_drops"`
	Requests      int64  `json:"requests"`
	Answered      int64  `json:"answered"`
	Unanswered    int64  `json:"unanswered"`
	SkippedBytes  int64  `json:"skipped_bytes"`
	Gaps          int64  `json:"gaps"`
	DecodeErrors  int64  `json:"decode_errors"`
	PcapPackets   int64  `json:"pcap_packets,omitempty"` // written to capture.pcapng
	FooterSummary string `json:"footer"`                 // the same counters as `kscope requests` prints
}

// TraceCounters are iotrace's counters, losses included.
type TraceCounters struct {
	Writes           int64 `json:"writes"`
	KernelWaits      int64 `json:"kernel_waits"`
	WaitRingbufDrops int64 `json:"wait_ringbuf_drops"`
	// StealIntervals are the intervals of hypervisor steal recorded (at
	// least MinStealNs each), StealRingbufDrops those lost.
	StealIntervals      int64    `json:"steal_intervals"`
	StealRingbufDrops   int64    `json:"steal_ringbuf_drops"`
	MinStealNs          int64    `json:"min_steal_ns"`
	JournalEvents       int64    `json:"journal_events"`
	OtherFiles          int64    `json:"other_files"`
	Unnamed             int64    `json:"unnamed"`
	RingbufDrops        int64    `json:"ringbuf_drops"`
	JournalRingbufDrops int64    `json:"journal_ringbuf_drops"`
	HistFull            int64    `json:"hist_full"`
	StartFull           int64    `json:"start_full"`
	MinLatencyNs        int64    `json:"min_latency_ns"`
	JournalAttached     []string `json:"journal_attached,omitempty"`
	JournalSkipped      []string `json:"journal_skipped,omitempty"`
	// Mode is how writes were timed (iotrace.Mode).
	Mode string `json:"mode"`
}

// SchedCounters say what sched.jsonl holds: each source's events, its
// losses, and the error that kept a source out (a reader must not take
// "no run delays" for "no CPU starvation" when the tracer was off).
type SchedCounters struct {
	RunDelays            int64 `json:"run_delays"`
	RunDelayRingbufDrops int64 `json:"run_delay_ringbuf_drops"`
	// RunDelayStartFull counts wake-ups not timed because the kernel's
	// table of runnable threads was full.
	RunDelayStartFull int64 `json:"run_delay_start_full"`
	MinRunDelayNs     int64 `json:"min_run_delay_ns"`
	// Wakeups are broker threads woken by another of its threads after
	// sleeping MinRunDelayNs or more.
	Wakeups          int64 `json:"wakeups"`
	ConnThreads      int64 `json:"conn_threads"`
	ConnRingbufDrops int64 `json:"conn_ringbuf_drops"`
	// Throttles are cpu_throttle events from ThrottleSamples samples of
	// the cgroups listed.
	Throttles       int64    `json:"throttles"`
	ThrottleSamples int64    `json:"throttle_samples"`
	Cgroups         []string `json:"cgroups,omitempty"`
	ThrottleError   string   `json:"throttle_error,omitempty"`
	// JVMPauses came from JVMPauseSource ("jfr" or "vm.log").
	JVMPauses      int64  `json:"jvm_pauses"`
	JVMPauseSource string `json:"jvm_pause_source,omitempty"`
	JVMPauseError  string `json:"jvm_pause_error,omitempty"`
}

// LockWaitCounters say what was read from a JFR file.
type LockWaitCounters struct {
	Source    string `json:"source"`
	LockWaits int64  `json:"lock_waits"`
	Error     string `json:"error,omitempty"`
}

// Writer writes a recording directory. Its methods may be called from
// different goroutines for different files (requests from the capture
// loop, writes and journal events from the tracer), but each file's
// method from one goroutine at a time.
type Writer struct {
	dir      string
	files    []*os.File
	requests *output.JSONLines
	writes   *output.JSONLines
	journal  *output.JSONLines
	locks    *output.JSONLines
	// use.jsonl is opened by its own writer's goroutine on first use, so
	// its file is kept apart from files (appended to by LockWait).
	useFile *os.File
	use     *output.JSONLines
	// sched.jsonl: several goroutines write it, so it has a lock.
	schedMu sync.Mutex
	sched   *output.JSONLines
}

// Create makes dir (which must not exist, or be empty) and opens its data
// files.
func Create(dir string) (*Writer, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("recording directory %s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("recording directory: %w", err)
	}
	w := &Writer{dir: dir}
	open := func(name string) (*output.JSONLines, error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, f)
		return output.NewJSONLines(f), nil
	}
	var err error
	if w.requests, err = open(RequestsFile); err != nil {
		w.closeFiles()
		return nil, err
	}
	if w.writes, err = open(WritesFile); err != nil {
		w.closeFiles()
		return nil, err
	}
	if w.journal, err = open(JournalFile); err != nil {
		w.closeFiles()
		return nil, err
	}
	return w, nil
}

// Dir is the recording's directory.
func (w *Writer) Dir() string { return w.dir }

// Request appends a request event.
func (w *Writer) Request(r *event.Request) error { return w.requests.Encode(r) }

// Write appends a traced write.
func (w *Writer) Write(e *event.Write) error { return w.writes.Encode(e) }

// Commit appends a journal commit.
func (w *Writer) Commit(c *event.JournalCommit) error { return w.journal.Encode(c) }

// Sync appends an ext4 fsync.
func (w *Writer) Sync(s *event.FileSync) error { return w.journal.Encode(s) }

// Block appends a block request.
func (w *Writer) Block(b *event.BlockIO) error { return w.journal.Encode(b) }

// Wait appends a broker thread's kernel wait.
func (w *Writer) Wait(k *event.KernelWait) error { return w.journal.Encode(k) }

// Steal appends an interval of hypervisor steal.
func (w *Writer) Steal(c *event.CPUSteal) error { return w.journal.Encode(c) }

// RunDelay appends a broker thread's run-queue delay to sched.jsonl.
func (w *Writer) RunDelay(r *event.RunDelay) error { return w.encodeSched(r) }

// Wakeup appends a broker thread woken by another of its threads to
// sched.jsonl.
func (w *Writer) Wakeup(u *event.Wakeup) error { return w.encodeSched(u) }

// ConnThread appends which broker thread serves a connection to sched.jsonl.
func (w *Writer) ConnThread(c *event.ConnThread) error { return w.encodeSched(c) }

// Throttle appends CPU-quota throttling of the broker's cgroup to sched.jsonl.
func (w *Writer) Throttle(t *event.CPUThrottle) error { return w.encodeSched(t) }

// JVMPause appends a stop-the-world pause of the broker's JVM to sched.jsonl.
func (w *Writer) JVMPause(p *event.JVMPause) error { return w.encodeSched(p) }

// Handlers write every kind of event (event.Kinds) to the recording,
// each to its stream's file.
func (w *Writer) Handlers() IOHandlers {
	var h IOHandlers
	for _, k := range event.Kinds() {
		k.Bind(&h, w.streamWriter(k.Stream()))
	}
	return h
}

// streamWriter appends events to the file of stream s.
func (w *Writer) streamWriter(s event.Stream) func(ev any) error {
	switch s {
	case event.StreamWrites:
		return w.writes.Encode
	case event.StreamJournal:
		return w.journal.Encode
	case event.StreamSched:
		return w.encodeSched
	}
	return func(any) error { return fmt.Errorf("recording: no file for event stream %d", s) }
}

// encodeSched appends v to sched.jsonl, creating it on first use; safe for
// concurrent use.
func (w *Writer) encodeSched(v any) error {
	w.schedMu.Lock()
	defer w.schedMu.Unlock()
	if w.sched == nil {
		f, err := os.Create(filepath.Join(w.dir, SchedFile))
		if err != nil {
			return err
		}
		w.files = append(w.files, f)
		w.sched = output.NewJSONLines(f)
	}
	return w.sched.Encode(v)
}

// LockWait appends a lock wait, creating lockwaits.jsonl on first use.
func (w *Writer) LockWait(l *event.LockWait) error {
	if w.locks == nil {
		f, err := os.Create(filepath.Join(w.dir, LockWaitsFile))
		if err != nil {
			return err
		}
		w.files = append(w.files, f)
		w.locks = output.NewJSONLines(f)
	}
	return w.locks.Encode(l)
}

// Use appends a USE sample, creating use.jsonl on first use. Flush
// must not run while the first Use does (record calls neither Flush nor
// Close before its sampler has stopped).
func (w *Writer) Use(s *use.Sample) error {
	if w.use == nil {
		f, err := os.Create(filepath.Join(w.dir, UseFile))
		if err != nil {
			return err
		}
		w.useFile, w.use = f, output.NewJSONLines(f)
	}
	return w.use.Encode(s)
}

// Flush writes out what the data files buffer, so that a reader sees
// every event given so far (the agent's slow-request log is read while
// it grows).
func (w *Writer) Flush() error {
	var errs []error
	for _, j := range []*output.JSONLines{w.requests, w.writes, w.journal, w.locks, w.use} {
		if j != nil {
			errs = append(errs, j.Flush())
		}
	}
	w.schedMu.Lock()
	if w.sched != nil {
		errs = append(errs, w.sched.Flush())
	}
	w.schedMu.Unlock()
	return errors.Join(errs...)
}

// Close flushes and closes the data files and writes meta.json, listing
// the files present.
func (w *Writer) Close(meta *Meta) error {
	var errs []error
	for _, j := range []*output.JSONLines{w.requests, w.writes, w.journal, w.locks, w.use} {
		if j != nil {
			errs = append(errs, j.Flush())
		}
	}
	w.schedMu.Lock()
	if w.sched != nil {
		errs = append(errs, w.sched.Flush())
	}
	w.schedMu.Unlock()
	errs = append(errs, w.closeFiles())
	if w.useFile != nil {
		errs = append(errs, w.useFile.Close())
		w.useFile = nil
	}
	if meta != nil {
		w.describe(meta)
		errs = append(errs, WriteMeta(w.dir, meta))
	}
	return errors.Join(errs...)
}

func (w *Writer) closeFiles() error {
	var errs []error
	for _, f := range w.files {
		// On disk before meta.json says the recording ended.
		errs = append(errs, f.Sync(), f.Close())
	}
	w.files = nil
	return errors.Join(errs...)
}

// Begin writes meta.json as the recording starts, without an end, so
// that a recording cut short (kscope killed, the host's power lost) can
// still be read: its loss counters are unknown, and its files end where
// the crash cut them. Close writes it again, whole.
func (w *Writer) Begin(meta *Meta) error {
	w.describe(meta)
	return WriteMeta(w.dir, meta)
}

// describe sets meta's version and the data files present.
func (w *Writer) describe(meta *Meta) {
	meta.Version = FormatVersion
	meta.Files = meta.Files[:0]
	for _, name := range []string{RequestsFile, WritesFile, JournalFile, SchedFile, LockWaitsFile, CaptureFile, JFRFile, JVMLogFile, UseFile} {
		if _, err := os.Stat(filepath.Join(w.dir, name)); err == nil {
			meta.Files = append(meta.Files, name)
		}
	}
}

// WriteMeta writes meta.json into dir, atomically: a reader (or a crash)
// sees the old meta.json or the new one, never half of one.
func WriteMeta(dir string, meta *Meta) error {
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	_, err = safefile.Write(safefile.Target{Path: filepath.Join(dir, MetaFile)}, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	return err
}

// maxMetaBytes bounds meta.json: a few KiB in practice.
const maxMetaBytes = 4 << 20

// ReadMeta reads dir's meta.json.
func ReadMeta(dir string) (*Meta, error) {
	path := filepath.Join(dir, MetaFile)
	b, err := safefile.ReadRegular(path, maxMetaBytes)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, metaError(path, err)
	}
	if m.Version != FormatVersion {
		return nil, fmt.Errorf("%s: format version %d, this kscope reads %d", path, m.Version, FormatVersion)
	}
	return &m, nil
}

// metaError is meta.json's decoding error, one line: where in the file
// when the decoder says, and any value it quotes cut short.
func metaError(path string, err error) error {
	where := path
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		where += fmt.Sprintf(" (byte %d)", syn.Offset)
	case errors.As(err, &typ):
		where += fmt.Sprintf(" (byte %d)", typ.Offset)
	}
	return errors.New(where + ": " + shorten(err.Error(), 120, 60))
}

// LineError is a bad line in a JSON Lines file.
type LineError struct {
	Path string
	Line int64 // 1-based; 0 when not known
	Pos  int64 // byte position of the line's start
	Err  error
	// Excerpt is the line's start, escaped and cut short (Excerpt), to
	// show what was there without echoing it whole.
	Excerpt string
}

// NewLineError is a LineError for line, which starts at pos, showing an
// excerpt of its first excerptBytes bytes.
func NewLineError(path string, n, pos int64, line []byte, err error) *LineError {
	return &LineError{Path: path, Line: n, Pos: pos, Err: err, Excerpt: Excerpt(line, excerptBytes)}
}

// excerptBytes is how much of a bad line an error shows.
const excerptBytes = 80

// Error is one line: the file, line and byte, the cause with any value
// it quotes from the file cut short, and the line's start; all escaped.
func (e *LineError) Error() string {
	where := fmt.Sprintf("%s:%d (byte %d)", output.Escape(e.Path), e.Line, e.Pos)
	if e.Line <= 0 {
		where = fmt.Sprintf("%s (byte %d)", output.Escape(e.Path), e.Pos)
	}
	msg := where + ": " + shorten(e.Err.Error(), 120, 60)
	if e.Excerpt != "" {
		msg += "; the line begins " + e.Excerpt
	}
	return msg
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrCutShort is a last line that ends without its newline and is not
// whole JSON: the file was being written when its writer stopped (a
// crash, a power loss, a kill). A Reader with a Tally leaves it out and
// counts it; without one it is an error.
var ErrCutShort = errors.New("the last line is cut short")

// errLineTooLong is a line over MaxLineBytes.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLineBytes)

// Reader reads a recording's JSON Lines files. The zero Reader reads
// regular files only, checks events' values against no window, and makes
// a line it would leave out an error.
type Reader struct {
	// Window bounds the events' times (open where zero).
	Window Window
	// Tally, when set, counts the lines left out instead of failing: a
	// last line cut short, and events whose values cannot be true.
	Tally *Tally
	// Mode says what the files may be: safefile.Regular (the zero
	// value), or safefile.Stream for a file read once (a pipe of
	// `kscope iotrace` output).
	Mode safefile.Mode
}

// Lines calls fn for every non-empty line of the JSON Lines file at path,
// with the line's byte position (for ReadLineAt). The line is valid only
// during the call. Errors from fn stop the scan and are returned wrapped
// in a LineError.
func Lines(path string, fn func(line []byte, pos int64) error) error {
	return Reader{}.Lines(path, fn)
}

// Lines is the package's Lines, reading as r says: a handler's
// ImplausibleError, and a last line cut short, are counted in r.Tally
// and the line left out.
func (r Reader) Lines(path string, fn func(line []byte, pos int64) error) error {
	in, err := safefile.Open(path, r.Mode)
	if err != nil {
		return err
	}
	defer in.Close()
	return r.lines(path, in, bufferSize(in.Size()), fn)
}

// bufferSize is the read buffer for a file of size bytes (-1: a stream):
// 1 MiB, or less for a smaller file (an agent's segments, a few lines).
func bufferSize(size int64) int {
	const most = 1 << 20
	if size < 0 || size >= most {
		return most
	}
	return int(size) + 1
}

func (r Reader) lines(path string, src io.Reader, bufSize int, fn func(line []byte, pos int64) error) error {
	br := bufio.NewReaderSize(src, bufSize)
	var (
		pos, n int64
		long   []byte // a line longer than the buffer, assembled
	)
	for {
		line, err := nextLine(br, &long)
		if err != nil && !errors.Is(err, io.EOF) { // too long, or a stream's read failed
			return &LineError{Path: path, Line: n + 1, Pos: pos, Err: err}
		}
		last := err != nil
		if len(line) > 0 {
			n++
			if err := r.handle(path, n, pos, line, last, fn); err != nil {
				return err
			}
			pos += int64(len(line))
		}
		if last {
			return nil
		}
	}
}

// nextLine reads the next line with its newline (none on the last line
// of a file that does not end with one), assembled in *long when it is
// longer than br's buffer: valid until the next call. At the end of the
// input it returns io.EOF with what remained.
func nextLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	assembled := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !assembled && !errors.Is(err, bufio.ErrBufferFull) {
			return chunk, err
		}
		if !assembled {
			*long = (*long)[:0]
			assembled = true
		}
		if len(*long)+len(chunk) > MaxLineBytes {
			return nil, errLineTooLong
		}
		*long = append(*long, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return *long, err
		}
	}
}

// handle passes line n to fn, or leaves it out: a last line cut short,
// or one fn found impossible, when r counts them.
func (r Reader) handle(path string, n, pos int64, line []byte, last bool, fn func([]byte, int64) error) error {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	if last && line[len(line)-1] != '\n' && !json.Valid(trimmed) {
		if r.Tally == nil {
			return NewLineError(path, n, pos, trimmed, ErrCutShort)
		}
		r.Tally.cut(path, n)
		return nil
	}
	err := fn(trimmed, pos)
	if err == nil {
		return nil
	}
	if reason, ok := isImplausible(err); ok && r.Tally != nil {
		r.Tally.implausible(path, n, reason)
		return nil
	}
	return NewLineError(path, n, pos, trimmed, err)
}

// LineNumber is the number of the line that starts at pos in f (a
// position Lines reported): for an error found when the line is read
// again by position.
func LineNumber(f *os.File, pos int64) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, pos), 1<<20)
	n := int64(1)
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(bytes.Count(chunk, []byte{'\n'}))
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
	}
}

// ReadLineAt reads the line that starts at pos in f (a position Lines
// reported), up to MaxLineBytes, into buf (reused: explain reads every
// slow request's line this way, so nothing is allocated per line once buf
// has grown).
func ReadLineAt(f *os.File, pos int64, buf []byte) ([]byte, error) {
	const chunk = 64 << 10
	buf = buf[:0]
	for len(buf) < MaxLineBytes {
		n := len(buf)
		buf = slices.Grow(buf, chunk)[:n+chunk]
		m, err := f.ReadAt(buf[n:], pos+int64(n))
		if i := bytes.IndexByte(buf[n:n+m], '\n'); i >= 0 {
			return bytes.TrimSpace(buf[:n+i]), nil
		}
		buf = buf[:n+m]
		if errors.Is(err, io.EOF) {
			return bytes.TrimSpace(buf), nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("line at byte %d longer than %d bytes", pos, MaxLineBytes)
}

// IOHandlers receive the events of an iotrace JSON Lines file; a nil
// handler skips its kind. They are event.Handlers, the one set the
// tracer delivers to too.
type IOHandlers = event.Handlers

// ReadIO reads a file of iotrace events (writes.jsonl, journal.jsonl,
// sched.jsonl, or the output of `kscope iotrace --format json`, where
// they are mixed): each line goes by its "kind" to that kind's handler
// (event.Kinds; a line without one is a write).
func ReadIO(path string, h IOHandlers) error { return Reader{}.ReadIO(path, h) }

// ReadIO is the package's ReadIO, reading as r says: an event whose
// values cannot be true (a negative latency, or one that is not its end
// less its start, a time outside r.Window) is left out and counted, or
// is the error. Lines of a kind h has no handler for, or of a kind from
// a newer kscope, are skipped undecoded.
func (r Reader) ReadIO(path string, h IOHandlers) error {
	readers := lineReaders(&h, r.Window.checkTimes)
	var d kindScanner
	return r.Lines(path, func(line []byte, _ int64) error {
		kind, err := d.kind(line)
		if err != nil {
			return err
		}
		if read := readers[kind]; read != nil {
			return read(line)
		}
		return nil
	})
}

// lineReaders are the readers of the lines h has handlers for, by
// "kind".
func lineReaders(h *IOHandlers, check func(event.Times) error) map[string]func(line []byte) error {
	readers := map[string]func([]byte) error{}
	for _, k := range event.Kinds() {
		read := k.Reader(h, check)
		if read == nil {
			continue
		}
		for _, name := range k.Names() {
			readers[name] = read
		}
	}
	return readers
}

// kindScanner finds a line's "kind", with a value reused from line to
// line for the lines where it is not first.
type kindScanner struct {
	kd struct {
		Kind string `json:"kind"`
	}
}

// kind is a line's "kind", "" for none (a write).
func (d *kindScanner) kind(line []byte) (string, error) {
	// Kind is the first field as kscope writes it; anything else (a
	// hand-edited file) is looked up properly.
	if rest, ok := bytes.CutPrefix(line, []byte(`{"kind":"`)); ok {
		if i := bytes.IndexByte(rest, '"'); i >= 0 {
			return string(rest[:i]), nil
		}
		return "", nil
	}
	if !bytes.Contains(line, []byte(`"kind"`)) {
		return "", nil
	}
	d.kd.Kind = ""
	if err := json.Unmarshal(line, &d.kd); err != nil {
		return "", err
	}
	return d.kd.Kind, nil
}

// ReadLockWaits reads a lockwaits.jsonl file.
func ReadLockWaits(path string, fn func(*event.LockWait) error) error {
	return Reader{}.ReadLockWaits(path, fn)
}

// ReadLockWaits is the package's ReadLockWaits, reading as r says.
func (r Reader) ReadLockWaits(path string, fn func(*event.LockWait) error) error {
	return readEach(r, path, fn)
}

// ReadUse reads a use.jsonl file.
func ReadUse(path string, fn func(*use.Sample) error) error { return Reader{}.ReadUse(path, fn) }

// ReadUse is the package's ReadUse, reading as r says.
func (r Reader) ReadUse(path string, fn func(*use.Sample) error) error {
	return readEach(r, path, fn)
}

// readEach decodes every line of path into a T (one, reused: fn copies
// what it keeps), checks it and passes it to fn.
func readEach[T any](r Reader, path string, fn func(*T) error) error {
	var v T
	return r.Lines(path, func(line []byte, _ int64) error {
		var zero T
		v = zero
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		if err := r.Window.checkEvent(&v); err != nil {
			return err
		}
		return fn(&v)
	})
}

// MissingEvidence says, one line each, what a reader of the recording
// cannot see that kscope record can trace: a source left out, one that
// failed, losses. Explain prints them beside its summary, so that "no
// request was cpu-starved" is never read from a recording that could not
// have shown one.
func (m *Meta) MissingEvidence() []string {
	var out []string
	if m.SlowLog != nil {
		return nil // an agent's slow log: its own sources, said in its meta
	}
	if !m.Start.IsZero() && m.End.IsZero() {
		return []string{"the recording did not finish (meta.json has no end: kscope record was killed, or the host stopped): what its sources lost is unknown, and its files end where they were cut"}
	}
	s := m.Sched
	if s == nil {
		return append(out, "no scheduling evidence (sched.jsonl: recorded before kscope record traced it): cpu-starved, gc-pause, safepoint and network-thread-blocked cannot be named")
	}
	if s.RunDelays == 0 && s.ConnThreads == 0 && s.MinRunDelayNs == 0 {
		out = append(out, "no run-queue delays or connection threads (--sched=false): cpu-starved cannot be named")
	}
	if s.JVMPauseSource == "" {
		why := "not recorded (--jvm-pauses=false)"
		if s.JVMPauseError != "" {
			why = s.JVMPauseError
		}
		out = append(out, "no JVM pauses: "+why+": gc-pause and safepoint cannot be named")
	} else if s.JVMPauseError != "" {
		out = append(out, "JVM pauses ("+s.JVMPauseSource+") incomplete: "+s.JVMPauseError)
	}
	if s.ThrottleError != "" {
		out = append(out, "no cgroup CPU throttling: "+s.ThrottleError)
	}
	if n := s.RunDelayRingbufDrops + s.RunDelayStartFull; n > 0 {
		out = append(out, fmt.Sprintf("%d run-queue delays lost (ring buffer or start map full)", n))
	}
	if s.ConnRingbufDrops > 0 {
		out = append(out, fmt.Sprintf("%d connection threads lost (ring buffer full)", s.ConnRingbufDrops))
	}
	return out
}

// Requests calls fn with every request of a requests JSON Lines file (a
// recording's requests.jsonl, or `kscope requests --format json` output),
// reading as r says: one whose times cannot be true (Window.CheckRequest)
// is left out and counted in r.Tally. The request is valid only during the
// call.
func (r Reader) Requests(path string, fn func(*event.Request)) error {
	var req event.Request
	return r.Lines(path, func(line []byte, _ int64) error {
		req = event.Request{}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		// A clock step's times are no latency, and not an impossible
		// value either: the capture's footer counted it.
		if !req.ClockStep {
			if err := r.Window.CheckRequest(req.Arrival, req.End, req.LatencyMs, req.Answered); err != nil {
				return err
			}
		}
		fn(&req)
		return nil
	})
}
