// Package jfr reads the lock waits of a JVM's threads from Java Flight
// Recorder files, as evidence for kscope explain: a Kafka request handler
// that waits to enter a partition log's monitor is queued behind another
// thread's append, and the wait shows up here with the waiting thread's
// kernel thread id, the same id iotrace gives that thread's writes.
//
//   - ReadLockWaits(path, fn) (Stats, error) calls fn with an
//     event.LockWait for every jdk.JavaMonitorEnter event of a recording.
//   - Start(ctx, pid, name, path, threshold) and Recording.Stop(ctx) take
//     such a recording from a running JVM with jcmd (jcmd.go); it holds
//     jdk.JavaMonitorEnter and jdk.ThreadPark events at or above the
//     threshold, the JVM's safepoints, VM operations and GC pauses (for
//     ReadPauses, pause.go), and the metadata and constant pools
//     (threads, classes) every chunk carries.
//   - Settings(threshold) is that recording's .jfc settings file, for
//     java -XX:StartFlightRecording=settings=FILE,filename=PATH.
//   - ReadProfile (cpu.go) reads a profiling recording (profile.go starts
//     one): CPU samples with their stacks, threads' CPU load, monitor
//     waits and parks, for kscope profile (internal/profile).
//
// # Times and threads
//
// A JFR event's start time is in ticks of the JVM's clock. Every chunk's
// header gives the wall-clock time of its start (startNanos, Unix
// nanoseconds), the tick count at that moment (startTicks) and the tick
// rate (ticksPerSecond), so an event starts at
// startNanos + (startTime-startTicks)·1e9/ticksPerSecond; End is Start plus
// the event's duration (also in ticks). Times are UTC.
//
// TID is the eventThread's osThreadId, the Linux kernel thread id
// (/proc/PID/task/TID); Thread its Java name. Monitor is the monitorClass
// in Class.getName form (java.lang.Object, [B for a byte[]). Owner and
// OwnerTID come from previousOwner, the thread that held the monitor when
// the wait began, when JFR recorded one. Virtual threads have no kernel
// thread id: their TID is 0.
//
// # Hostile input
//
// A JFR file is untrusted. The decoding itself is github.com/grafana/jfr-parser,
// which reads counts from the file and allocates from them before it checks
// them against the bytes left (a crafted count can ask for hundreds of GiB,
// which the Go runtime cannot recover from), and which follows the constant
// pool chain without noticing a loop (it spins forever). So every chunk is
// first walked by a checker (check.go) that reads exactly what the parser
// will read and refuses counts larger than the bytes left, pool chains that
// loop or leave the chunk, and chunks that do not fit in the file; only a
// chunk that passes is handed to the parser, one chunk at a time, and a
// panic in the parser is turned into an error. Files above MaxFileSize and
// chunks above MaxChunkSize are refused.
//
// A file that is damaged or cut short (a recording copied while JFR was
// still writing it) yields the lock waits of its chunks before the damage
// and then an error naming the chunk.
package jfr

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grafana/jfr-parser/parser"
	"github.com/grafana/jfr-parser/parser/types"
	"github.com/grafana/jfr-parser/parser/types/def"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
)

const (
	// MaxFileSize is the largest file ReadLockWaits reads: it reads the
	// whole file into memory.
	MaxFileSize = 1 << 30
	// MaxChunkSize is the largest chunk ReadLockWaits decodes. JFR starts a
	// new chunk at about 12 MB unless told otherwise (JFR.configure
	// maxchunksize). Decoding a chunk takes up to about 3 times its size
	// for real recordings, and a crafted chunk can make it some 20 times.
	MaxChunkSize = 128 << 20
)

// Stats counts what ReadLockWaits read.
type Stats struct {
	Bytes int64 // size of the file
	// Chunks is the number of chunks whose events were read (the last one
	// perhaps only in part, when fn returned an error).
	Chunks int64
	// Events counts the event records of those chunks, of every type, not
	// counting their metadata and constant pools.
	Events int64
	// LockWaits counts the jdk.JavaMonitorEnter events handed to fn.
	LockWaits int64
	// SkippedEvents counts jdk.JavaMonitorEnter events not handed to fn:
	// their thread or monitor class is missing from the chunk's constant
	// pools, or their time does not fit in a time.Time.
	SkippedEvents int64
}

// ReadLockWaits reads the JFR file at path and calls fn with a LockWait
// for each jdk.JavaMonitorEnter event, in file order (which is only
// roughly time order: JFR writes each thread's buffer as it fills). fn may
// keep the LockWait. An error from fn stops the reading and is returned as
// it is; any other error is one line that starts with "jfr: PATH:".
func ReadLockWaits(path string, fn func(*event.LockWait) error) (Stats, error) {
	return readPath(path, func(data []byte) (Stats, error) { return read(data, fn) })
}

// readPath reads the JFR file at path with read: an error of the caller's
// callback comes back as it is, any other is one line that starts with
// "jfr: PATH:".
func readPath[S any](path string, read func([]byte) (S, error)) (S, error) {
	data, err := readFile(path)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("jfr: %w", err)
	}
	st, err := read(data)
	var ce *callbackError
	if errors.As(err, &ce) {
		return st, ce.err
	}
	if err != nil {
		return st, fmt.Errorf("jfr: %s: %w", path, err)
	}
	return st, nil
}

func readFile(path string) ([]byte, error) {
	// Regular files only, checked before the open: a FIFO in place of a
	// recording would block the open forever.
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if size := in.Size(); size > MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d-byte limit", path, size, MaxFileSize)
	}
	// The file may grow while it is read (a recording still being written):
	// read no more than the limit anyway.
	data, err := io.ReadAll(io.LimitReader(in, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: more than the %d-byte limit", path, MaxFileSize)
	}
	return data, nil
}

// callbackError carries fn's error through read unchanged.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// chunkMagic is "FLR\0", the first four bytes of every chunk.
const chunkMagic = "FLR\x00"

// headerSize is the size of a chunk header.
const headerSize = 68

// read decodes data, a whole JFR file, chunk by chunk.
func read(data []byte, fn func(*event.LockWait) error) (Stats, error) {
	st := Stats{Bytes: int64(len(data))}
	if len(data) == 0 {
		return st, errors.New("empty file")
	}
	if len(data) < len(chunkMagic) || string(data[:len(chunkMagic)]) != chunkMagic {
		return st, fmt.Errorf("not a JFR file (first bytes % x)", data[:min(len(data), 4)])
	}
	for off := 0; off < len(data); {
		n := st.Chunks + 1
		size, err := chunkSize(data[off:])
		if err != nil {
			return st, fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		chunk := data[off : off+size]
		events, err := check(chunk)
		if err != nil {
			return st, fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		st.Chunks++
		st.Events += events
		if err := readChunk(chunk, &st, fn); err != nil {
			var ce *callbackError
			if errors.As(err, &ce) {
				return st, err
			}
			return st, fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		off += size
	}
	return st, nil
}

// chunkSize checks the header of the chunk at the start of b and returns
// the chunk's size.
func chunkSize(b []byte) (int, error) {
	if len(b) < headerSize {
		return 0, fmt.Errorf("truncated: %d bytes left, a chunk header takes %d", len(b), headerSize)
	}
	h := header(b)
	if string(b[:4]) != chunkMagic {
		return 0, fmt.Errorf("no chunk here (bytes % x)", b[:4])
	}
	if h.major != 2 {
		return 0, fmt.Errorf("unsupported JFR version %d.%d (want 2.x)", h.major, h.minor)
	}
	if h.size < headerSize {
		return 0, fmt.Errorf("chunk size %d is less than its header", h.size)
	}
	if h.size > MaxChunkSize {
		return 0, fmt.Errorf("chunk size %d is more than the %d-byte limit", h.size, MaxChunkSize)
	}
	if h.size > uint64(len(b)) {
		return 0, fmt.Errorf("truncated: chunk size %d, only %d bytes left", h.size, len(b))
	}
	if h.cpOffset < headerSize || h.cpOffset >= h.size || h.metaOffset < headerSize || h.metaOffset >= h.size {
		return 0, fmt.Errorf("constant pool offset %d or metadata offset %d outside the %d-byte chunk", h.cpOffset, h.metaOffset, h.size)
	}
	if h.ticksPerSecond == 0 {
		return 0, errors.New("ticks per second is 0")
	}
	return int(h.size), nil
}

// chunkHeader is the part of a chunk header chunkSize checks.
type chunkHeader struct {
	major, minor         uint16
	size                 uint64
	cpOffset, metaOffset uint64
	ticksPerSecond       uint64
}

func header(b []byte) chunkHeader {
	be := func(i int) uint64 {
		var v uint64
		for _, c := range b[i : i+8] {
			v = v<<8 | uint64(c)
		}
		return v
	}
	return chunkHeader{
		major:          uint16(b[4])<<8 | uint16(b[5]),
		minor:          uint16(b[6])<<8 | uint16(b[7]),
		size:           be(8),
		cpOffset:       be(16),
		metaOffset:     be(24),
		ticksPerSecond: be(56),
	}
}

// readChunk decodes one chunk that check accepted.
func readChunk(chunk []byte, st *Stats, fn func(*event.LockWait) error) error {
	p := parser.NewParser(chunk, parser.Options{ChunkSizeLimit: len(chunk)})
	var conv *converter
	for {
		typ, err := parseEvent(p)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if conv == nil {
			if conv, err = newConverter(p); err != nil {
				return err
			}
		}
		var lw *event.LockWait
		switch {
		case conv.hasMonitorEnter && int64(typ) == conv.monitorEnter:
			lw = conv.lockWait(&p.JavaMonitorEnter)
		case conv.hasPark && int64(typ) == conv.park:
			if !untimedPark(&p.ThreadPark) {
				continue // a timed park: a thread idling in a poll, not a lock
			}
			lw = conv.parkWait(&p.ThreadPark)
		default:
			continue
		}
		if lw == nil {
			st.SkippedEvents++
			continue
		}
		st.LockWaits++
		if err := fn(lw); err != nil {
			return &callbackError{err}
		}
	}
}

// parseEvent is p.ParseEvent with a panic turned into an error. check
// should leave the parser nothing to panic on; this is the second line.
func parseEvent(p *parser.Parser) (typ def.TypeID, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %s", panicked, oneLine(fmt.Sprint(r)))
		}
	}()
	typ, err = p.ParseEvent()
	if err != nil && err != io.EOF {
		err = fmt.Errorf("jfr-parser: %s", oneLine(err.Error()))
	}
	return typ, err
}

const panicked = "jfr-parser panicked"

// converter turns one chunk's jdk.JavaMonitorEnter events into LockWaits.
type converter struct {
	p               *parser.Parser
	hasMonitorEnter bool  // the chunk's metadata defines jdk.JavaMonitorEnter
	monitorEnter    int64 // its type id
	hasPark         bool  // ... and jdk.ThreadPark
	park            int64
	startNanos      int64
	startTicks      uint64
	tps             uint64 // ticks per second
	threads         map[types.ThreadRef]*thread
	classes         map[types.ClassRef]string
}

type thread struct {
	tid  int
	name string
}

func newConverter(p *parser.Parser) (*converter, error) {
	h := p.ChunkHeader()
	c := &converter{
		p:               p,
		hasMonitorEnter: p.TypeMap.NameMap["jdk.JavaMonitorEnter"] != nil,
		monitorEnter:    int64(p.TypeMap.T_MONITOR_ENTER),
		hasPark:         p.TypeMap.NameMap["jdk.ThreadPark"] != nil,
		park:            int64(p.TypeMap.T_THREAD_PARK),
		startNanos:      int64(h.StartNanos),
		startTicks:      h.StartTicks,
		tps:             h.TicksPerSecond,
		threads:         map[types.ThreadRef]*thread{},
		classes:         map[types.ClassRef]string{},
	}
	if c.tps == 0 { // chunkSize refuses these; never divide by 0
		return nil, errors.New("ticks per second is 0")
	}
	if !c.hasMonitorEnter && !c.hasPark {
		return c, nil
	}
	if c.hasMonitorEnter && c.hasPark && c.monitorEnter == c.park {
		return nil, fmt.Errorf("jdk.JavaMonitorEnter and jdk.ThreadPark share type id %d", c.park)
	}
	// ParseEvent decodes an event as the first of these types whose id
	// matches, so if jdk.JavaMonitorEnter shares its id with one of them
	// (only a crafted file does) p.JavaMonitorEnter is not what was read.
	tm := &p.TypeMap
	for _, id := range []int64{int64(tm.T_EXECUTION_SAMPLE), int64(tm.T_WALL_CLOCK_SAMPLE), int64(tm.T_MALLOC), int64(tm.T_FREE),
		int64(tm.T_ALLOC_IN_NEW_TLAB), int64(tm.T_ALLOC_OUTSIDE_TLAB), int64(tm.T_ALLOC_SAMPLE), int64(tm.T_LIVE_OBJECT)} {
		if c.hasMonitorEnter && id == c.monitorEnter || c.hasPark && id == c.park {
			return nil, fmt.Errorf("jdk.JavaMonitorEnter or jdk.ThreadPark shares type id %d with another event type", id)
		}
	}
	return c, nil
}

// lockWait converts e, or returns nil when it refers to a thread or class
// the chunk does not define or its times are out of range.
func (c *converter) lockWait(e *types.JavaMonitorEnter) *event.LockWait {
	t := c.thread(e.EventThread)
	monitor, ok := c.class(e.MonitorClass)
	if t == nil || !ok {
		return nil
	}
	start, ok := c.time(e.StartTime)
	if !ok {
		return nil
	}
	dur, ok := c.duration(e.Duration)
	if !ok || start > math.MaxInt64-dur {
		return nil
	}
	lw := &event.LockWait{
		Start:     time.Unix(0, start).UTC(),
		End:       time.Unix(0, start+dur).UTC(),
		LatencyMs: float64(dur) / 1e6,
		TID:       t.tid,
		Thread:    t.name,
		Monitor:   monitor,
	}
	if e.PreviousOwner != 0 {
		if o := c.thread(e.PreviousOwner); o != nil {
			lw.OwnerTID, lw.Owner = o.tid, o.name
		}
	}
	return lw
}

// untimedPark: JFR records a park without a timeout (a lock or a
// condition) with timeout and until at Long.MIN_VALUE; a thread polling a
// queue parks with a timeout.
func untimedPark(e *types.ThreadPark) bool {
	const none = uint64(1) << 63 // Long.MIN_VALUE as the parser stores it
	return (e.Timeout == none || e.Timeout == 0) && (e.Until == none || e.Until == 0)
}

// parkWait turns a jdk.ThreadPark event into a LockWait: the class is
// what the thread parked on (a ReentrantLock's sync, a condition's
// owner); JFR does not know who held it.
func (c *converter) parkWait(e *types.ThreadPark) *event.LockWait {
	t := c.thread(e.EventThread)
	class, ok := c.class(e.ParkedClass)
	if t == nil {
		return nil
	}
	if !ok {
		class = "?"
	}
	start, ok := c.time(e.StartTime)
	if !ok {
		return nil
	}
	dur, ok := c.duration(e.Duration)
	if !ok || start > math.MaxInt64-dur {
		return nil
	}
	return &event.LockWait{Start: time.Unix(0, start).UTC(), End: time.Unix(0, start+dur).UTC(),
		LatencyMs: float64(dur) / 1e6, TID: t.tid, Thread: t.name, Monitor: class, Park: true}
}

func (c *converter) thread(ref types.ThreadRef) *thread {
	if t, ok := c.threads[ref]; ok {
		return t
	}
	var t *thread
	if pt := threadOf(c.p, ref); pt != nil {
		// The parser's strings point into the file's bytes; copy so that
		// a kept LockWait does not keep the whole file in memory.
		t = &thread{tid: osTID(pt), name: strings.Clone(threadName(pt))}
	}
	c.threads[ref] = t
	return t
}

// threadOf is the chunk's thread of ref, nil when the chunk lacks it.
func threadOf(p *parser.Parser, ref types.ThreadRef) *types.Thread {
	if i, ok := p.Threads.IDMap[ref]; ok && int(i) < len(p.Threads.Thread) {
		return &p.Threads.Thread[i]
	}
	return nil
}

// threadName is a thread's Java name, or its OS name for a thread the
// JVM did not start (GC, compiler threads).
func threadName(pt *types.Thread) string {
	if pt.JavaName != "" {
		return pt.JavaName
	}
	return pt.OsName
}

// osTID is a thread's kernel thread id; 0 when it has none (a virtual
// thread) or a value no Linux tid can have.
func osTID(pt *types.Thread) int {
	if pt.OsThreadId <= math.MaxInt32 {
		return int(pt.OsThreadId)
	}
	return 0
}

func (c *converter) class(ref types.ClassRef) (string, bool) {
	if n, ok := c.classes[ref]; ok {
		return n, true
	}
	cl := c.p.GetClass(ref)
	if cl == nil {
		return "", false
	}
	i, ok := c.p.Symbols.IDMap[cl.Name]
	if !ok || int(i) >= len(c.p.Symbols.Symbol) {
		return "", false
	}
	// JFR names classes in the JVM's internal form, java/lang/Object.
	n := strings.ReplaceAll(c.p.Symbols.Symbol[i].String, "/", ".")
	c.classes[ref] = n
	return n, true
}

// time converts a tick count to Unix nanoseconds.
func (c *converter) time(ticks uint64) (int64, bool) {
	var d int64
	var ok bool
	if ticks >= c.startTicks {
		d, ok = ticksToNanos(ticks-c.startTicks, c.tps)
	} else {
		// An event may begin before its chunk does (a wait that spans a
		// chunk rotation).
		d, ok = ticksToNanos(c.startTicks-ticks, c.tps)
		d = -d
	}
	if !ok || (d > 0 && c.startNanos > math.MaxInt64-d) || (d < 0 && c.startNanos < math.MinInt64-d) {
		return 0, false
	}
	return c.startNanos + d, true
}

func (c *converter) duration(ticks uint64) (int64, bool) {
	return ticksToNanos(ticks, c.tps)
}

// ticksToNanos converts ticks at tps ticks per second to nanoseconds,
// exactly (rounded down) and without overflow.
func ticksToNanos(ticks, tps uint64) (int64, bool) {
	hi, lo := bits.Mul64(ticks, 1e9)
	if hi >= tps {
		return 0, false
	}
	ns, _ := bits.Div64(hi, lo, tps)
	if ns > math.MaxInt64 {
		return 0, false
	}
	return int64(ns), true
}

// oneLine makes text from the file (which may name its own types and
// fields) safe to print on one line, and not too long.
func oneLine(s string) string {
	const max = 300
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
