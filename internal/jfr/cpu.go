package jfr

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/jfr-parser/parser"
	"github.com/grafana/jfr-parser/parser/types"
	"github.com/grafana/jfr-parser/parser/types/def"

	"github.com/kscope-dev/kscope/internal/event"
)

// Profile is what ReadProfile found in a recording: CPU samples with
// their stacks, lock waits with theirs, CPU load, GC pauses, JVM flags and
// the recording's settings. Slices are in file order.
type Profile struct {
	// Start and End span the chunks read (UTC).
	Start, End time.Time
	Samples    []Sample
	Waits      []Wait
	ThreadCPU  []ThreadCPU
	CPULoad    []CPULoad
	GCs        []GC
	// Flags are the JVM's boolean flags (jdk.BooleanFlag), by name.
	Flags map[string]bool
	// Settings are the recording's settings (jdk.ActiveSetting):
	// Settings["jdk.ExecutionSample"]["period"] = "10 ms".
	Settings map[string]map[string]string
	Stats    ProfileStats
}

// ProfileStats counts what ReadProfile read.
type ProfileStats struct {
	Bytes  int64
	Chunks int64
	// Events counts the event records of the chunks read, of every type.
	Events        int64
	Samples       int64 // jdk.ExecutionSample
	NativeSamples int64 // jdk.NativeMethodSample
	Waits         int64
	// Skipped counts events of the kinds read that refer to a thread the
	// chunk does not define or whose time is out of range.
	Skipped int64
}

// Thread is a Java thread as JFR names it.
type Thread struct {
	TID    int    // kernel thread id; 0 for a virtual thread
	JavaID uint64 // java.lang.Thread.getId
	Name   string
}

// Frame is one frame of a stack trace.
type Frame struct {
	Class  string // in Class.getName form: java.util.zip.CRC32C, a.B$C
	Method string
	Line   int // 0 when unknown
}

// String is Class.Method.
func (f Frame) String() string { return f.Class + "." + f.Method }

// Stack is a stack trace, innermost frame first. JFR keeps at most its
// stack depth (64 by default) of the innermost frames: Truncated says the
// outer ones are missing.
type Stack struct {
	Frames    []Frame
	Truncated bool
}

// Sample is one jdk.ExecutionSample (a thread running Java code) or
// jdk.NativeMethodSample (a thread in a native method: JNI code such as
// zstd-jni, or a blocking system call such as epoll_wait).
type Sample struct {
	Time   time.Time
	Thread Thread
	Native bool
	Stack  *Stack // nil when the sample has none; shared between samples
}

// Wait is a lock wait (as ReadLockWaits gives it) with the waiting
// thread's stack.
type Wait struct {
	event.LockWait
	Stack *Stack
}

// ThreadCPU is one jdk.ThreadCPULoad event: the share of the machine's
// CPU (0..1, all cores together) the thread used since its previous one.
type ThreadCPU struct {
	Time         time.Time
	Thread       Thread
	User, System float64
}

// CPULoad is one jdk.CPULoad event: shares of the machine's CPU (0..1)
// since the previous one.
type CPULoad struct {
	Time                 time.Time
	JVMUser, JVMSystem   float64
	MachineTotal         float64
	JVMUserOK, MachineOK bool
}

// GC is one jdk.GarbageCollection event.
type GC struct {
	Start        time.Time
	Duration     time.Duration
	SumOfPauses  time.Duration
	LongestPause time.Duration
}

// The event types ReadProfile decodes itself (jfr-parser skips them).
const (
	evNativeSample = "jdk.NativeMethodSample"
	evThreadCPU    = "jdk.ThreadCPULoad"
	evCPULoad      = "jdk.CPULoad"
	evGC           = "jdk.GarbageCollection"
	evBooleanFlag  = "jdk.BooleanFlag"
)

// ReadProfile reads the JFR file at path: jdk.ExecutionSample and
// jdk.NativeMethodSample with their stacks, jdk.JavaMonitorEnter and
// untimed jdk.ThreadPark with theirs, jdk.ThreadCPULoad, jdk.CPULoad,
// jdk.GarbageCollection, jdk.BooleanFlag and jdk.ActiveSetting. Every
// chunk passes the same check as for ReadLockWaits before jfr-parser
// reads it; the events jfr-parser does not decode are read by a decoder
// of this package that stays inside each event's bytes.
//
// A file damaged after some chunks returns what those chunks held and an
// error naming the chunk; the Profile is never nil.
func ReadProfile(path string) (*Profile, error) {
	pr := newProfile()
	data, err := readFile(path)
	if err != nil {
		return pr, fmt.Errorf("jfr: %w", err)
	}
	if err := readProfile(data, pr); err != nil {
		return pr, fmt.Errorf("jfr: %s: %w", path, err)
	}
	return pr, nil
}

func newProfile() *Profile {
	return &Profile{Flags: map[string]bool{}, Settings: map[string]map[string]string{}}
}

// readProfile decodes data, a whole JFR file, chunk by chunk into pr.
func readProfile(data []byte, pr *Profile) error {
	pr.Stats.Bytes = int64(len(data))
	if len(data) == 0 {
		return errors.New("empty file")
	}
	if len(data) < len(chunkMagic) || string(data[:len(chunkMagic)]) != chunkMagic {
		return fmt.Errorf("not a JFR file (first bytes % x)", data[:min(len(data), 4)])
	}
	in := interner{}
	for off := 0; off < len(data); {
		n := pr.Stats.Chunks + 1
		size, err := chunkSize(data[off:])
		if err != nil {
			return fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		chunk := data[off : off+size]
		events, err := check(chunk)
		if err != nil {
			return fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		if err := readProfileChunk(chunk, pr, in); err != nil {
			return fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
		pr.Stats.Chunks++
		pr.Stats.Events += events
		off += size
	}
	return nil
}

// interner keeps one copy of each string taken from the file: the
// parser's strings point into the file's bytes, and stacks repeat the
// same class and method names.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	v := strings.Clone(s)
	in[v] = v
	return v
}

// profChunk converts one chunk's events.
type profChunk struct {
	*converter
	pr      *Profile
	in      interner
	stacks  map[types.StackTraceRef]*Stack
	pthread map[types.ThreadRef]*Thread
}

func readProfileChunk(chunk []byte, pr *Profile, in interner) error {
	p := parser.NewParser(chunk, parser.Options{ChunkSizeLimit: len(chunk)})
	var c *profChunk
	start := func() error {
		conv, err := newConverter(p)
		if err != nil {
			return err
		}
		c = &profChunk{converter: conv, pr: pr, in: in, stacks: map[types.StackTraceRef]*Stack{}, pthread: map[types.ThreadRef]*Thread{}}
		return nil
	}
	tm := &p.TypeMap
	for {
		typ, err := parseEvent(p)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if c == nil {
			if err := start(); err != nil {
				return err
			}
		}
		switch {
		// ParseEvent's switch tries jdk.ExecutionSample first: an id it
		// matches was decoded as one.
		case tm.NameMap["jdk.ExecutionSample"] != nil && typ == tm.T_EXECUTION_SAMPLE:
			e := &p.ExecutionSample
			c.sample(e.StartTime, e.SampledThread, e.StackTrace, false)
		case c.hasMonitorEnter && int64(typ) == c.monitorEnter:
			if lw := c.lockWait(&p.JavaMonitorEnter); lw != nil {
				c.wait(lw, p.JavaMonitorEnter.StackTrace)
			} else {
				pr.Stats.Skipped++
			}
		case c.hasPark && int64(typ) == c.park:
			if !untimedPark(&p.ThreadPark) {
				continue
			}
			if lw := c.parkWait(&p.ThreadPark); lw != nil {
				c.wait(lw, p.ThreadPark.StackTrace)
			} else {
				pr.Stats.Skipped++
			}
		case tm.NameMap["jdk.ActiveSetting"] != nil && typ == tm.T_ACTIVE_SETTING && c.settingsDecoded():
			c.setting(&p.ActiveSetting)
		}
	}
	if c == nil {
		// A chunk whose events the parser does not decode: the first
		// ParseEvent read its pools all the same.
		if err := start(); err != nil {
			return err
		}
	}
	h := p.ChunkHeader()
	begin := time.Unix(0, int64(h.StartNanos)).UTC()
	if h.StartNanos <= math.MaxInt64 && h.DurationNanos <= math.MaxInt64 && int64(h.StartNanos) <= math.MaxInt64-int64(h.DurationNanos) {
		end := time.Unix(0, int64(h.StartNanos+h.DurationNanos)).UTC()
		if pr.Start.IsZero() || begin.Before(pr.Start) {
			pr.Start = begin
		}
		if end.After(pr.End) {
			pr.End = end
		}
	}
	return c.others(chunk)
}

// settingsDecoded: jdk.ActiveSetting comes last in ParseEvent's switch,
// so p.ActiveSetting holds the event only if no type before it shares
// its id (only a crafted file has such ids).
func (c *profChunk) settingsDecoded() bool {
	tm := &c.p.TypeMap
	id := tm.T_ACTIVE_SETTING
	for _, o := range []def.TypeID{tm.T_EXECUTION_SAMPLE, tm.T_WALL_CLOCK_SAMPLE, tm.T_MALLOC, tm.T_FREE, tm.T_ALLOC_IN_NEW_TLAB,
		tm.T_ALLOC_OUTSIDE_TLAB, tm.T_ALLOC_SAMPLE, tm.T_LIVE_OBJECT, tm.T_MONITOR_ENTER, tm.T_THREAD_PARK} {
		if o == id {
			return false
		}
	}
	return true
}

func (c *profChunk) sample(ticks uint64, tref types.ThreadRef, sref types.StackTraceRef, native bool) {
	t := c.javaThread(tref)
	ns, ok := c.time(ticks)
	if t == nil || !ok {
		c.pr.Stats.Skipped++
		return
	}
	c.pr.Samples = append(c.pr.Samples, Sample{Time: time.Unix(0, ns).UTC(), Thread: *t, Native: native, Stack: c.stack(sref)})
	if native {
		c.pr.Stats.NativeSamples++
	} else {
		c.pr.Stats.Samples++
	}
}

func (c *profChunk) wait(lw *event.LockWait, sref types.StackTraceRef) {
	lw.Thread, lw.Owner, lw.Monitor = c.in.get(lw.Thread), c.in.get(lw.Owner), c.in.get(lw.Monitor)
	c.pr.Waits = append(c.pr.Waits, Wait{LockWait: *lw, Stack: c.stack(sref)})
	c.pr.Stats.Waits++
}

func (c *profChunk) setting(s *types.ActiveSetting) {
	cl := c.p.TypeMap.IDMap[def.TypeID(s.Id)]
	if cl == nil {
		return
	}
	ev := c.in.get(cl.Name)
	m := c.pr.Settings[ev]
	if m == nil {
		m = map[string]string{}
		c.pr.Settings[ev] = m
	}
	m[c.in.get(s.Name)] = c.in.get(s.Value)
}

// javaThread resolves a thread reference with its Java id.
func (c *profChunk) javaThread(ref types.ThreadRef) *Thread {
	if t, ok := c.pthread[ref]; ok {
		return t
	}
	var t *Thread
	if pt := threadOf(c.p, ref); pt != nil {
		t = &Thread{TID: osTID(pt), JavaID: pt.JavaThreadId, Name: c.in.get(threadName(pt))}
	}
	c.pthread[ref] = t
	return t
}

// maxFrames bounds the frames kept of one stack: JFR's own limit is
// 2048 (-XX:FlightRecorderOptions:stackdepth).
const maxFrames = 2048

// stack resolves a stack trace reference, nil when the chunk lacks it.
func (c *profChunk) stack(ref types.StackTraceRef) *Stack {
	if s, ok := c.stacks[ref]; ok {
		return s
	}
	var s *Stack
	if st := c.p.GetStacktrace(ref); st != nil {
		s = &Stack{Truncated: st.Truncated, Frames: make([]Frame, 0, min(len(st.Frames), maxFrames))}
		if len(st.Frames) > maxFrames {
			s.Truncated = true
		}
		for _, f := range st.Frames[:min(len(st.Frames), maxFrames)] {
			s.Frames = append(s.Frames, c.frame(f))
		}
	}
	c.stacks[ref] = s
	return s
}

func (c *profChunk) frame(f types.StackFrame) Frame {
	fr := Frame{Class: "?", Method: "?"}
	if f.LineNumber <= math.MaxInt32 {
		fr.Line = int(f.LineNumber)
	}
	m := c.p.GetMethod(f.Method)
	if m == nil {
		return fr
	}
	if cl, ok := c.class(m.Type); ok {
		fr.Class = c.in.get(cl)
	}
	if i, ok := c.p.Symbols.IDMap[m.Name]; ok && int(i) < len(c.p.Symbols.Symbol) {
		fr.Method = c.in.get(c.p.Symbols.Symbol[i].String)
	}
	return fr
}

// others reads the events jfr-parser skips: native samples, CPU load,
// GC and flags.
func (c *profChunk) others(chunk []byte) error {
	tm := &c.p.TypeMap
	want := map[def.TypeID]*def.Class{}
	// Ids the parser decodes are left to it, even in a crafted file where
	// one of the types here shares such an id.
	taken := map[def.TypeID]bool{}
	for _, n := range decodedEvents {
		if cl := tm.NameMap[n]; cl != nil {
			taken[cl.ID] = true
		}
	}
	for _, n := range []string{evNativeSample, evThreadCPU, evCPULoad, evGC, evBooleanFlag} {
		if cl := tm.NameMap[n]; cl != nil && !taken[cl.ID] {
			want[cl.ID] = cl
		}
	}
	if len(want) == 0 {
		return nil
	}
	d := &decoder{tm: tm, b: chunk}
	for _, n := range []struct {
		name string
		id   *def.TypeID
	}{{"int", &d.tInt}, {"long", &d.tLong}, {"short", &d.tShort}, {"char", &d.tChar}, {"byte", &d.tByte},
		{"boolean", &d.tBoolean}, {"float", &d.tFloat}, {"double", &d.tDouble}, {"java.lang.String", &d.tString}} {
		*n.id = -1
		if cl := tm.NameMap[n.name]; cl != nil {
			*n.id = cl.ID
		}
	}
	pos := headerSize
	for pos < len(chunk) {
		d.pos, d.end = pos, len(chunk)
		size, err := d.varLong()
		if err != nil {
			return fmt.Errorf("event at chunk byte %d: %w", pos, err)
		}
		typ, err := d.varLong()
		if err != nil {
			return fmt.Errorf("event at chunk byte %d: %w", pos, err)
		}
		if size == 0 || size > uint64(len(chunk)-pos) {
			return fmt.Errorf("event at chunk byte %d: size %d does not fit in the chunk", pos, size)
		}
		next := pos + int(size)
		if cl := want[def.TypeID(typ)]; cl != nil {
			d.end = next
			if err := c.decodeOther(d, cl); err != nil {
				return fmt.Errorf("event at chunk byte %d: %s: %w", pos, oneLine(cl.Name), err)
			}
		}
		pos = next
	}
	return nil
}

// otherFields are the fields decodeOther reads; each event type it takes
// has some of them.
type otherFields struct {
	start, dur, sum, longest uint64
	thread                   types.ThreadRef
	stack                    types.StackTraceRef
	user, system             float64
	jvmUser, jvmSystem, mach float64
	hasJVM, hasMach          bool
	name                     string
	nameOK                   bool
	value, hasBool           bool
	hasStart, hasThread      bool
}

// set takes one decoded field by its name and kind (a field of another
// kind than expected is ignored); names are resolved in c's constant pool.
func (v *otherFields) set(c *profChunk, f *def.Field, x value) {
	switch {
	case f.Name == "startTime" && x.kind == vInt:
		v.start, v.hasStart = x.u, true
	case f.Name == "duration" && x.kind == vInt:
		v.dur = x.u
	case (f.Name == "sampledThread" || f.Name == "eventThread") && x.kind == vRef && !v.hasThread:
		v.thread, v.hasThread = types.ThreadRef(x.u), true
	case f.Name == "stackTrace" && x.kind == vRef:
		v.stack = types.StackTraceRef(x.u)
	case f.Name == "user" && x.kind == vFloat:
		v.user = x.f
	case f.Name == "system" && x.kind == vFloat:
		v.system = x.f
	case f.Name == "jvmUser" && x.kind == vFloat:
		v.jvmUser, v.hasJVM = x.f, true
	case f.Name == "jvmSystem" && x.kind == vFloat:
		v.jvmSystem = x.f
	case f.Name == "machineTotal" && x.kind == vFloat:
		v.mach, v.hasMach = x.f, true
	case f.Name == "sumOfPauses" && x.kind == vInt:
		v.sum = x.u
	case f.Name == "longestPause" && x.kind == vInt:
		v.longest = x.u
	case f.Name == "name" && x.kind == vString:
		v.name, v.nameOK = x.s, true
	case f.Name == "name" && x.kind == vStringRef:
		if i, ok := c.p.Strings.IDMap[types.StringRef(x.u)]; ok && int(i) < len(c.p.Strings.String) {
			v.name, v.nameOK = c.p.Strings.String[i].String, true
		}
	case f.Name == "value" && x.kind == vBool:
		v.value, v.hasBool = x.u != 0, true
	}
}

// decodeOther decodes one event of cl and adds it to the profile.
func (c *profChunk) decodeOther(d *decoder, cl *def.Class) error {
	var v otherFields
	if err := d.event(cl.Fields, func(f *def.Field, x value) { v.set(c, f, x) }); err != nil {
		return err
	}
	if !v.hasStart {
		return nil
	}
	ns, ok := c.time(v.start)
	if !ok {
		c.pr.Stats.Skipped++
		return nil
	}
	c.addOther(cl.Name, &v, time.Unix(0, ns).UTC())
	return nil
}

// addOther adds an event of the named type, at at, to the profile: a
// native sample, a thread's CPU load, the JVM's and the machine's, a GC,
// or a boolean JVM flag. Events that lack what they need are skipped
// (counted where the profile's figures would miss them).
func (c *profChunk) addOther(eventType string, v *otherFields, at time.Time) {
	switch eventType {
	case evNativeSample:
		if v.hasThread {
			c.sample(v.start, v.thread, v.stack, true)
		}
	case evThreadCPU:
		t := c.javaThread(v.thread)
		if !v.hasThread || t == nil {
			c.pr.Stats.Skipped++
			return
		}
		c.pr.ThreadCPU = append(c.pr.ThreadCPU, ThreadCPU{Time: at, Thread: *t, User: load(v.user), System: load(v.system)})
	case evCPULoad:
		l := CPULoad{Time: at, JVMUser: load(v.jvmUser), JVMSystem: load(v.jvmSystem), MachineTotal: load(v.mach),
			JVMUserOK: v.hasJVM, MachineOK: v.hasMach}
		c.pr.CPULoad = append(c.pr.CPULoad, l)
	case evGC:
		dur, _ := c.duration(v.dur)
		sum, _ := c.duration(v.sum)
		longest, _ := c.duration(v.longest)
		c.pr.GCs = append(c.pr.GCs, GC{Start: at, Duration: time.Duration(dur), SumOfPauses: time.Duration(sum), LongestPause: time.Duration(longest)})
	case evBooleanFlag:
		if v.nameOK && v.hasBool && len(v.name) <= 200 {
			c.pr.Flags[c.in.get(v.name)] = v.value
		}
	}
}

// load keeps a CPU share in 0..1 (NaN and the like from a crafted file
// become 0).
func load(f float64) float64 {
	if !(f >= 0) {
		return 0
	}
	return min(f, 1)
}

// decoder reads the fields of an event by its metadata, inside
// [pos, end): every count is checked against the bytes left and every
// array element must take at least a byte, so a crafted event costs time
// proportional to its size and no memory beyond its strings.
type decoder struct {
	tm       *def.TypeMap
	b        []byte
	pos, end int

	tInt, tLong, tShort, tChar, tByte, tBoolean, tFloat, tDouble, tString def.TypeID

	// steps bounds the fields one event may visit: inline objects without
	// fields take no bytes, and a crafted metadata could nest them into
	// an exponential number of visits.
	steps int
}

// event reads one event's fields from pos to end.
func (d *decoder) event(fields []def.Field, fn func(*def.Field, value)) error {
	d.steps = 256 + 8*d.left()
	if err := d.fields(fields, 0, fn); err != nil {
		return err
	}
	if d.pos > d.end {
		return d.errf("fields run past the event")
	}
	return nil
}

type valueKind uint8

const (
	vNone valueKind = iota // an inline object or an array: read, not kept
	vRef                   // a constant-pool reference
	vInt
	vFloat
	vBool
	vString
	vStringRef // a string in the string constant pool
)

type value struct {
	kind valueKind
	u    uint64
	f    float64
	s    string
}

// maxDepth bounds inline objects nested in inline objects.
const maxDepth = 8

func (d *decoder) errf(format string, args ...any) error {
	return fmt.Errorf(format+" (chunk byte %d)", append(args, d.pos)...)
}

func (d *decoder) left() int { return d.end - d.pos }

func (d *decoder) byte() (byte, error) {
	if d.pos >= d.end {
		return 0, errEOF
	}
	b := d.b[d.pos]
	d.pos++
	return b, nil
}

// varLong is JFR's LEB128: at most 9 bytes, the 9th with 8 bits.
func (d *decoder) varLong() (uint64, error) {
	var v uint64
	for shift := uint(0); shift <= 56; shift += 7 {
		b, err := d.byte()
		if err != nil {
			return 0, err
		}
		if shift == 56 {
			return v | uint64(b)<<shift, nil
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return v, nil
}

func (d *decoder) fixed(n int) (uint64, error) {
	if d.left() < n {
		return 0, errEOF
	}
	var v uint64
	for _, c := range d.b[d.pos : d.pos+n] {
		v = v<<8 | uint64(c)
	}
	d.pos += n
	return v, nil
}

func (d *decoder) count(what string) (int, error) {
	n, err := d.varLong()
	if err != nil {
		return 0, err
	}
	if n > uint64(d.left()) {
		return 0, d.errf("%s count %d is more than the %d bytes left", what, n, d.left())
	}
	return int(n), nil
}

// fields reads fields in order; fn sees the top-level ones (depth 0).
func (d *decoder) fields(fields []def.Field, depth int, fn func(*def.Field, value)) error {
	if depth > maxDepth {
		return d.errf("inline objects nested more than %d deep", maxDepth)
	}
	for i := range fields {
		f := &fields[i]
		n := 1
		if f.Array {
			var err error
			if n, err = d.count("array element"); err != nil {
				return err
			}
		}
		for range n {
			before := d.pos
			x, err := d.field(f, depth)
			if err != nil {
				return err
			}
			if f.Array {
				if d.pos == before {
					return d.errf("array element of field %q takes no bytes", oneLine(f.Name))
				}
			} else if depth == 0 && fn != nil {
				fn(f, x)
			}
		}
	}
	return nil
}

func (d *decoder) field(f *def.Field, depth int) (value, error) {
	if d.steps--; d.steps < 0 {
		return value{}, d.errf("too many fields for the event's size")
	}
	if f.ConstantPool {
		u, err := d.varLong()
		return value{kind: vRef, u: u}, err
	}
	switch f.Type {
	case d.tString:
		return d.str()
	case d.tInt, d.tLong, d.tShort, d.tChar:
		u, err := d.varLong()
		return value{kind: vInt, u: u}, err
	case d.tByte:
		b, err := d.byte()
		return value{kind: vInt, u: uint64(b)}, err
	case d.tBoolean:
		b, err := d.byte()
		return value{kind: vBool, u: uint64(b)}, err
	case d.tFloat: // floats are written as 4 big-endian bytes
		u, err := d.fixed(4)
		return value{kind: vFloat, f: float64(math.Float32frombits(uint32(u)))}, err
	case d.tDouble:
		u, err := d.fixed(8)
		return value{kind: vFloat, f: math.Float64frombits(u)}, err
	}
	cl := d.tm.IDMap[f.Type]
	if cl == nil {
		return value{}, d.errf("field %q of unknown type %d", oneLine(f.Name), int64(f.Type))
	}
	return value{}, d.fields(cl.Fields, depth+1, nil)
}

// str reads a string: null (0), empty (1), a reference into the string
// pool (2), UTF-8 (3), UTF-16 code units as varints (4), Latin-1 (5).
func (d *decoder) str() (value, error) {
	t, err := d.byte()
	if err != nil {
		return value{}, err
	}
	switch t {
	case 0, 1:
		return value{kind: vString}, nil
	case 2:
		u, err := d.varLong()
		return value{kind: vStringRef, u: u}, err
	case 3, 5:
		n, err := d.count("byte")
		if err != nil {
			return value{}, err
		}
		b := d.b[d.pos : d.pos+n]
		d.pos += n
		if t == 5 {
			r := make([]rune, n)
			for i, c := range b {
				r[i] = rune(c)
			}
			return value{kind: vString, s: string(r)}, nil
		}
		return value{kind: vString, s: string(b)}, nil
	case 4:
		n, err := d.count("character")
		if err != nil {
			return value{}, err
		}
		var sb strings.Builder
		for range n {
			u, err := d.varLong()
			if err != nil {
				return value{}, err
			}
			sb.WriteRune(rune(u))
		}
		return value{kind: vString, s: sb.String()}, nil
	default:
		return value{}, d.errf("unknown string encoding %d", t)
	}
}

// Period returns the period of an event type in the recording's settings
// ("10 ms", "20 ms"), and false when the recording does not say.
func (pr *Profile) Period(eventType string) (time.Duration, bool) {
	s, ok := pr.Settings[eventType]["period"]
	if !ok {
		return 0, false
	}
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 || v > 1e9 {
		return 0, false
	}
	unit := map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[f[1]]
	if unit == 0 {
		return 0, false
	}
	d := v * float64(unit)
	if d > float64(math.MaxInt64) {
		return 0, false
	}
	return time.Duration(d), true
}
