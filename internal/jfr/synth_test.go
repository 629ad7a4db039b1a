package jfr

import (
	"encoding/binary"
	"strconv"
)

// synth builds a JFR chunk by hand: the classes jfr-parser requires, a
// constant pool of threads, classes and symbols, and jdk.JavaMonitorEnter
// events. The damage fields break it in the ways a crafted file can; left
// zero, the chunk is valid.
type synth struct {
	startNanos, startTicks, tps uint64
	threads                     []synthThread
	classes                     []synthClass
	events                      []synthEvent

	stringCount uint64 // metadata string count claimed instead of the real one
	threadCount uint64 // count of thread constants claimed instead of the real one
	nameChars   uint64 // the first thread's name as a UTF-16 array claiming this many chars
	frames      uint64 // a stack trace constant claiming this many frames
	loopPools   bool   // two constant pools whose deltas point at each other
	eventSize   uint64 // the first event's size field
	framesName  string // the name of jdk.types.StackTrace's frames field
}

type synthThread struct {
	ref  uint64
	tid  uint64
	name string
}

type synthClass struct {
	ref, sym uint64
	name     string // internal form, a/b/C
}

type synthEvent struct {
	start, dur           uint64 // ticks
	thread, class, owner uint64 // refs
}

// Type ids of the synthetic metadata.
const (
	sBoolean = 100 + iota
	sInt
	sLong
	sShort
	sFloat
	sString
	sThread
	sClass
	sSymbol
	sFrameType
	sThreadState
	sMethod
	sPackage
	sStackTrace
	sClassLoader
	sStackFrame
	sMonitorEnter
)

type sField struct {
	name  string
	typ   int
	cp    bool
	array bool
}

var synthClasses = []struct {
	id     int
	name   string
	fields []sField
}{
	{sBoolean, "boolean", nil},
	{sInt, "int", nil},
	{sLong, "long", nil},
	{sShort, "short", nil},
	{sFloat, "float", nil},
	{sString, "java.lang.String", nil},
	{sThread, "java.lang.Thread", []sField{{"osName", sString, false, false}, {"osThreadId", sLong, false, false}, {"javaName", sString, false, false}, {"javaThreadId", sLong, false, false}}},
	{sClass, "java.lang.Class", []sField{{"name", sSymbol, true, false}, {"modifiers", sInt, false, false}}},
	{sSymbol, "jdk.types.Symbol", []sField{{"string", sString, false, false}}},
	{sFrameType, "jdk.types.FrameType", []sField{{"description", sString, false, false}}},
	{sThreadState, "jdk.types.ThreadState", []sField{{"name", sString, false, false}}},
	{sMethod, "jdk.types.Method", []sField{{"type", sClass, true, false}, {"name", sSymbol, true, false}}},
	{sPackage, "jdk.types.Package", []sField{{"name", sSymbol, true, false}}},
	{sStackTrace, "jdk.types.StackTrace", []sField{{"truncated", sBoolean, false, false}, {"frames", sStackFrame, false, true}}},
	{sClassLoader, "jdk.types.ClassLoader", []sField{{"name", sSymbol, true, false}}},
	{sStackFrame, "jdk.types.StackFrame", []sField{{"method", sMethod, true, false}, {"lineNumber", sInt, false, false}, {"bytecodeIndex", sInt, false, false}, {"type", sFrameType, true, false}}},
	{sMonitorEnter, "jdk.JavaMonitorEnter", []sField{{"startTime", sLong, false, false}, {"duration", sLong, false, false}, {"eventThread", sThread, true, false},
		{"stackTrace", sStackTrace, true, false}, {"monitorClass", sClass, true, false}, {"previousOwner", sThread, true, false}, {"address", sLong, false, false}}},
}

type wbuf []byte

// varint is LEB128 as JFR writes it: 9 bytes at most, the 9th with 8 bits.
func (b *wbuf) varint(v uint64) {
	for i := 0; i < 8; i++ {
		if v < 0x80 {
			*b = append(*b, byte(v))
			return
		}
		*b = append(*b, byte(v)|0x80)
		v >>= 7
	}
	*b = append(*b, byte(v))
}

// varint9 writes v in the full 9 bytes, so that it can be patched.
func (b *wbuf) varint9(v uint64) {
	for i := 0; i < 8; i++ {
		*b = append(*b, byte(v)|0x80)
		v >>= 7
	}
	*b = append(*b, byte(v))
}

func (b *wbuf) str(s string) {
	*b = append(*b, 3)
	b.varint(uint64(len(s)))
	*b = append(*b, s...)
}

// record frames body as an event: a 4-byte padded size, then the body.
func record(body []byte) []byte {
	n := uint64(len(body) + 4)
	return append([]byte{byte(n) | 0x80, byte(n>>7) | 0x80, byte(n>>14) | 0x80, byte(n >> 21)}, body...)
}

func (s *synth) bytes() []byte {
	tps, startTicks := s.tps, s.startTicks
	if tps == 0 {
		tps = 1e9
	}
	out := make([]byte, headerSize)

	// Events.
	for i, e := range s.events {
		var b wbuf
		b.varint(sMonitorEnter)
		b.varint(e.start)
		b.varint(e.dur)
		b.varint(e.thread)
		b.varint(0) // stack trace
		b.varint(e.class)
		b.varint(e.owner)
		b.varint(0x7f0000001000)
		r := record(b)
		if i == 0 && s.eventSize != 0 {
			var sz wbuf
			sz.varint(s.eventSize)
			r = append(sz, r[4:]...)
		}
		out = append(out, r...)
	}

	// Constant pool(s).
	var cp wbuf
	cp.varint(1) // checkpoint event type
	cp.varint(startTicks)
	cp.varint(0) // duration
	deltaAt := len(cp)
	cp.varint9(0)
	cp.varint(1) // flush
	cp.varint(3) // types
	cp.varint(sThread)
	if s.threadCount != 0 {
		cp.varint(s.threadCount)
	} else {
		cp.varint(uint64(len(s.threads)))
	}
	for i, t := range s.threads {
		cp.varint(t.ref)
		cp.str(t.name)
		cp.varint(t.tid)
		if i == 0 && s.nameChars != 0 {
			cp = append(cp, 4)
			cp.varint(s.nameChars)
			for _, r := range t.name {
				cp.varint(uint64(r))
			}
		} else {
			cp.str(t.name)
		}
		cp.varint(t.ref + 1)
	}
	cp.varint(sClass)
	cp.varint(uint64(len(s.classes)))
	for _, c := range s.classes {
		cp.varint(c.ref)
		cp.varint(c.sym)
		cp.varint(1) // public
	}
	cp.varint(sSymbol)
	cp.varint(uint64(len(s.classes)))
	for _, c := range s.classes {
		cp.varint(c.sym)
		cp.str(c.name)
	}
	if s.frames != 0 {
		cp[deltaAt+9+1]++ // one more type
		cp.varint(sStackTrace)
		cp.varint(1)
		cp.varint(1)       // ref
		cp = append(cp, 0) // not truncated
		cp.varint(s.frames)
		cp.varint(1) // a first frame: method, line, bci, type
		cp.varint(10)
		cp.varint(0)
		cp.varint(1)
	}
	first := len(out)
	out = append(out, record(cp)...)
	cpOffset := first
	if s.loopPools {
		// A second pool (empty) whose delta points back at the first,
		// and the first's delta pointing forward at the second.
		var cp2 wbuf
		cp2.varint(1)
		cp2.varint(startTicks)
		cp2.varint(0)
		cp2.varint9(0)
		cp2.varint(1)
		cp2.varint(0)
		second := len(out)
		out = append(out, record(cp2)...)
		patch := func(at int, v uint64) {
			var d wbuf
			d.varint9(v)
			copy(out[at:], d)
		}
		patch(first+4+deltaAt, uint64(second-first))
		patch(second+4+deltaAt, uint64(int64(first-second)))
		cpOffset = second
	}

	// Metadata.
	strs := map[string]uint64{}
	var table []string
	idx := func(s string) uint64 {
		if i, ok := strs[s]; ok {
			return i
		}
		strs[s] = uint64(len(table))
		table = append(table, s)
		return strs[s]
	}
	var el wbuf
	elem := func(name string, attrs [][2]string, children int) {
		el.varint(idx(name))
		el.varint(uint64(len(attrs)))
		for _, a := range attrs {
			el.varint(idx(a[0]))
			el.varint(idx(a[1]))
		}
		el.varint(uint64(children))
	}
	elem("root", nil, 2)
	elem("metadata", nil, len(synthClasses))
	for _, c := range synthClasses {
		elem("class", [][2]string{{"name", c.name}, {"id", strconv.Itoa(c.id)}}, len(c.fields))
		for _, f := range c.fields {
			if c.id == sStackTrace && f.name == "frames" && s.framesName != "" {
				f.name = s.framesName
			}
			attrs := [][2]string{{"name", f.name}, {"class", strconv.Itoa(f.typ)}}
			if f.cp {
				attrs = append(attrs, [2]string{"constantPool", "true"})
			}
			if f.array {
				attrs = append(attrs, [2]string{"dimension", "1"})
			}
			elem("field", attrs, 0)
		}
	}
	elem("region", [][2]string{{"locale", "en_US"}}, 0)
	var md wbuf
	md.varint(0) // metadata event type
	md.varint(startTicks)
	md.varint(0) // duration
	md.varint(1) // metadata id
	if s.stringCount != 0 {
		md.varint(s.stringCount)
	} else {
		md.varint(uint64(len(table)))
	}
	for _, t := range table {
		md.str(t)
	}
	md = append(md, el...)
	metaOffset := len(out)
	out = append(out, record(md)...)

	copy(out, chunkMagic)
	binary.BigEndian.PutUint16(out[4:], 2)
	binary.BigEndian.PutUint16(out[6:], 1)
	binary.BigEndian.PutUint64(out[8:], uint64(len(out)))
	binary.BigEndian.PutUint64(out[16:], uint64(cpOffset))
	binary.BigEndian.PutUint64(out[24:], uint64(metaOffset))
	binary.BigEndian.PutUint64(out[32:], s.startNanos)
	binary.BigEndian.PutUint64(out[40:], 0)
	binary.BigEndian.PutUint64(out[48:], startTicks)
	binary.BigEndian.PutUint64(out[56:], tps)
	binary.BigEndian.PutUint32(out[64:], 1) // compressed integers
	return out
}
