package jfr

import (
	"fmt"
	"io"
	"strconv"
)

// check walks a chunk (whose header chunkSize accepted) exactly the way
// github.com/grafana/jfr-parser v0.14.0 will decode it, and returns the
// number of its event records other than metadata and constant pools.
//
// The parser reads counts (strings in the metadata, constants in a pool,
// array elements, characters of a string) and allocates for them before it
// checks them against the bytes left; it follows the constant-pool chain
// without noticing a loop; and it indexes with positions a crafted size
// makes negative. check reads the same bytes in the same order with the
// same integer encodings, so it meets every count the parser will meet,
// and refuses a count larger than the bytes left, a pool chain that loops,
// an event that runs past the chunk, and the few layouts the parser would
// crash on. What passes is decoded by the parser in time and memory
// proportional to the chunk's size.
//
// Where the parser reads something differently from the JFR format (the
// element count of an array of inline objects is read twice; references
// inside inline objects are 32-bit varints), check follows the parser:
// the point is to bound the parser, not to judge the file.
func check(b []byte) (int64, error) {
	h := header(b)
	c := &checker{b: b}
	if err := c.metadata(int(h.metaOffset)); err != nil {
		return 0, fmt.Errorf("metadata at chunk byte %d: %w", h.metaOffset, err)
	}
	if err := c.pools(int(h.cpOffset)); err != nil {
		return 0, err
	}
	return c.events()
}

type checker struct {
	b   []byte
	pos int

	strs   []string // the metadata's string table
	byID   map[int64]*mclass
	byName map[string]*mclass

	tString, tInt, tLong, tShort, tFloat, tBoolean, tStackFrame int64
	stackFrame                                                  *mclass
}

// mclass is a class of the chunk's metadata, as the parser sees it.
type mclass struct {
	id     int64
	name   string
	fields []mfield
}

type mfield struct {
	name      string
	typ       int64
	cp, array bool
}

var errEOF = io.ErrUnexpectedEOF

// maxMetaStrings bounds the metadata's string table, which the parser
// holds as 16 bytes a string for as little as a byte each. A JDK 17
// recording has about 2,000.
const maxMetaStrings = 1 << 20

func (c *checker) errf(format string, args ...any) error {
	return fmt.Errorf(format+" (chunk byte %d)", append(args, c.pos)...)
}

func (c *checker) left() int {
	if c.pos >= len(c.b) {
		return 0
	}
	return len(c.b) - c.pos
}

// varInt, varLong and varShort decode like the parser's: a 32-bit varint
// of at most 5 bytes, a 64-bit one of at most 9 (the 9th with 8 bits), a
// 16-bit one of at most 3.
func (c *checker) varInt() (uint32, error) {
	var v uint32
	for shift := uint(0); ; shift += 7 {
		if shift >= 32 {
			return 0, c.errf("varint overflows 32 bits")
		}
		if c.pos >= len(c.b) {
			return 0, errEOF
		}
		b := c.b[c.pos]
		c.pos++
		v |= uint32(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
}

func (c *checker) varLong() (uint64, error) {
	var v uint64
	for shift := uint(0); shift <= 56; shift += 7 {
		if c.pos >= len(c.b) {
			return 0, errEOF
		}
		b := c.b[c.pos]
		c.pos++
		if shift == 56 {
			v |= uint64(b) << shift
			break
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	return v, nil
}

func (c *checker) varShort() error {
	for shift := uint(0); ; shift += 7 {
		if shift >= 16 {
			return c.errf("varint overflows 16 bits")
		}
		if c.pos >= len(c.b) {
			return errEOF
		}
		b := c.b[c.pos]
		c.pos++
		if b < 0x80 {
			return nil
		}
	}
}

func (c *checker) byte() (byte, error) {
	if c.pos >= len(c.b) {
		return 0, errEOF
	}
	b := c.b[c.pos]
	c.pos++
	return b, nil
}

// count reads a count of things that each take at least a byte.
func (c *checker) count(what string) (int, error) {
	n, err := c.varInt()
	if err != nil {
		return 0, err
	}
	if int(n) > c.left() {
		return 0, c.errf("%s count %d is more than the %d bytes left", what, n, c.left())
	}
	return int(n), nil
}

// metadata mirrors the parser's readMeta and checkTypes.
func (c *checker) metadata(pos int) error {
	c.pos = pos
	if _, err := c.varInt(); err != nil { // size
		return err
	}
	if _, err := c.varInt(); err != nil { // type
		return err
	}
	for range 3 { // start, duration, metadata id
		if _, err := c.varLong(); err != nil {
			return err
		}
	}
	n, err := c.count("string")
	if err != nil {
		return err
	}
	if n > maxMetaStrings {
		return c.errf("%d strings, more than the %d allowed", n, maxMetaStrings)
	}
	c.strs = make([]string, 0, min(n, 4096))
	for range n {
		s, err := c.metaString()
		if err != nil {
			return err
		}
		c.strs = append(c.strs, s)
	}
	c.byID = map[int64]*mclass{}
	c.byName = map[string]*mclass{}
	root, err := c.element(false)
	if err != nil {
		return err
	}
	if root.name != "root" {
		return c.errf("first element is %q, not root", root.name)
	}
	for range root.children {
		e, err := c.element(false)
		if err != nil {
			return err
		}
		switch e.name {
		case "metadata":
			for range e.children {
				if err := c.class(); err != nil {
					return err
				}
			}
		case "region":
		default:
			return c.errf("unexpected element %q", e.name)
		}
	}
	return c.types()
}

func (c *checker) class() error {
	e, err := c.element(true)
	if err != nil {
		return err
	}
	// def.NewClass
	id, err := strconv.Atoi(e.attrs["id"])
	if err != nil {
		return c.errf("class id: %v", err)
	}
	if e.attrs["name"] == "" {
		return c.errf("class without a name")
	}
	cl := &mclass{id: int64(id), name: e.attrs["name"]}
	for range e.children {
		f, err := c.element(true)
		if err != nil {
			return err
		}
		if f.name == "field" {
			// def.NewField
			typ, err := strconv.Atoi(f.attrs["class"])
			if err != nil {
				return c.errf("field class: %v", err)
			}
			if f.attrs["name"] == "" {
				return c.errf("field without a name")
			}
			d := f.attrs["dimension"]
			if d != "" && d != "1" {
				return c.errf("field dimension %q", d)
			}
			cl.fields = append(cl.fields, mfield{name: f.attrs["name"], typ: int64(typ), cp: f.attrs["constantPool"] == "true", array: d == "1"})
		}
		for range f.children {
			if _, err := c.element(false); err != nil {
				return err
			}
		}
	}
	c.byID[int64(id)] = cl
	c.byName[cl.name] = cl
	return nil
}

type element struct {
	name     string
	attrs    map[string]string
	children int
}

// element mirrors readElement: a name, attributes (name and value as
// string-table indexes) and a child count; the children follow.
func (c *checker) element(attrs bool) (element, error) {
	var e element
	i, err := c.varInt()
	if err != nil {
		return e, err
	}
	if int(i) >= len(c.strs) {
		return e, c.errf("string index %d out of range", i)
	}
	e.name = c.strs[i]
	n, err := c.count("attribute")
	if err != nil {
		return e, err
	}
	if attrs {
		e.attrs = make(map[string]string, min(n, 16))
	}
	for range n {
		k, err := c.varInt()
		if err != nil {
			return e, err
		}
		v, err := c.varInt()
		if err != nil {
			return e, err
		}
		if int(k) >= len(c.strs) || int(v) >= len(c.strs) {
			return e, c.errf("string index %d or %d out of range", k, v)
		}
		if attrs {
			e.attrs[c.strs[k]] = c.strs[v]
		}
	}
	// The parser makes room for this many fields before reading them.
	if e.children, err = c.count("child element"); err != nil {
		return e, err
	}
	return e, nil
}

// metaString mirrors the parser's string(): no Latin-1 (5) here.
func (c *checker) metaString() (string, error) {
	t, err := c.byte()
	if err != nil {
		return "", err
	}
	switch t {
	case 0, 1:
		return "", nil
	case 3:
		n, err := c.varInt()
		if err != nil {
			return "", err
		}
		if int(n) > c.left() {
			return "", errEOF
		}
		s := string(c.b[c.pos : c.pos+int(n)])
		c.pos += int(n)
		return s, nil
	case 4:
		n, err := c.count("character")
		if err != nil {
			return "", err
		}
		r := make([]rune, n)
		for i := range r {
			v, err := c.varInt()
			if err != nil {
				return "", err
			}
			r[i] = rune(v)
		}
		return string(r), nil
	default:
		return "", c.errf("unknown string encoding %d", t)
	}
}

// types mirrors checkTypes: the classes the parser requires.
func (c *checker) types() error {
	// A type's id is that of the last class of its name, even when a
	// later class took the id over in byID.
	id := func(name string) (int64, error) {
		cl := c.byName[name]
		if cl == nil {
			return 0, c.errf("no class %s", name)
		}
		return cl.id, nil
	}
	for _, t := range []struct {
		name string
		id   *int64
	}{
		{"int", &c.tInt}, {"long", &c.tLong}, {"short", &c.tShort}, {"float", &c.tFloat},
		{"boolean", &c.tBoolean}, {"java.lang.String", &c.tString}, {"jdk.types.StackFrame", &c.tStackFrame},
	} {
		v, err := id(t.name)
		if err != nil {
			return err
		}
		*t.id = v
	}
	for _, n := range []string{"jdk.types.FrameType", "jdk.types.ThreadState", "java.lang.Thread", "java.lang.Class",
		"jdk.types.Method", "jdk.types.Package", "jdk.types.Symbol", "jdk.types.StackTrace", "jdk.types.ClassLoader"} {
		if c.byName[n] == nil {
			return c.errf("no class %s", n)
		}
	}
	c.stackFrame = c.byName["jdk.types.StackFrame"]
	// The parser appends a frame per array element whatever the frame's
	// size: frames without fields would cost memory for no bytes.
	if len(c.stackFrame.fields) == 0 {
		return c.errf("jdk.types.StackFrame has no fields")
	}
	return nil
}

// pools mirrors readConstantPool: a chain of checkpoint events, each
// pointing back to the previous one by a delta, the last delta 0.
func (c *checker) pools(pos int) error {
	seen := map[int]bool{}
	for {
		if pos < 0 || pos >= len(c.b) {
			return fmt.Errorf("constant pool at chunk byte %d: outside the chunk", pos)
		}
		if seen[pos] {
			return fmt.Errorf("constant pool at chunk byte %d: the pool chain loops", pos)
		}
		seen[pos] = true
		delta, err := c.pool(pos)
		if err != nil {
			return fmt.Errorf("constant pool at chunk byte %d: %w", pos, err)
		}
		if delta == 0 {
			return nil
		}
		if pos += int(delta); pos <= 0 {
			return nil
		}
	}
}

func (c *checker) pool(pos int) (int64, error) {
	c.pos = pos
	var delta uint64
	for i := range 5 { // size, type, start, duration, delta
		v, err := c.varLong()
		if err != nil {
			return 0, err
		}
		if i == 4 {
			delta = v
		}
	}
	if _, err := c.varInt(); err != nil { // flush
		return 0, err
	}
	n, err := c.varInt()
	if err != nil {
		return 0, err
	}
	for range n { // each reads at least a byte
		t, err := c.varLong()
		if err != nil {
			return 0, err
		}
		cl := c.byID[int64(t)]
		if cl == nil {
			return 0, c.errf("constants of unknown type %d", int64(t))
		}
		if err := c.constants(cl); err != nil {
			return 0, fmt.Errorf("%s: %w", oneLine(cl.name), err)
		}
	}
	return int64(delta), nil
}

// constants mirrors readConstants: the types the parser keeps are read
// with the fields of the class of that name (the last one defined), the
// others with their own.
func (c *checker) constants(cl *mclass) error {
	switch cl.name {
	case "jdk.types.ChunkHeader":
		c.pos += headerSize
		return nil
	case "java.lang.String":
		n, err := c.count("constant")
		if err != nil {
			return err
		}
		for range n {
			if _, err := c.varLong(); err != nil {
				return err
			}
			if err := c.str(); err != nil {
				return err
			}
		}
		return nil
	case "jdk.types.FrameType", "jdk.types.ThreadState", "java.lang.Thread", "java.lang.Class",
		"jdk.types.Method", "jdk.types.Package", "jdk.types.Symbol", "profiler.types.LogLevel":
		return c.list(c.byName[cl.name].fields, false)
	case "jdk.types.StackTrace":
		return c.list(c.byName[cl.name].fields, true)
	default:
		return c.list(cl.fields, false)
	}
}

// list reads a count and that many constants: an id and the fields.
func (c *checker) list(fields []mfield, stackTrace bool) error {
	n, err := c.count("constant")
	if err != nil {
		return err
	}
	for range n {
		if _, err := c.varLong(); err != nil {
			return err
		}
		if err := c.fields(fields, stackTrace); err != nil {
			return err
		}
	}
	return nil
}

// fields mirrors the generated Parse methods: each field (each element of
// an array field) is a constant-pool reference, a primitive, a string, or
// an inline object; in a stack trace, frames are read field by field.
func (c *checker) fields(fields []mfield, stackTrace bool) error {
	for _, f := range fields {
		n := 1
		if f.array {
			var err error
			if n, err = c.count("array element"); err != nil {
				return err
			}
			// The parser stores the frames of a stack trace's array of
			// frames through a pointer it sets only for a field that is
			// frames, not in the constant pool: any other would be a nil
			// pointer.
			if stackTrace && f.typ == c.tStackFrame && (f.name != "frames" || f.cp) {
				return c.errf("stack frames in field %q", oneLine(f.name))
			}
		}
		for range n {
			var err error
			// The parser's order, which matters when ids collide.
			switch {
			case f.cp:
				_, err = c.varLong()
			case f.typ == c.tString:
				err = c.str()
			case f.typ == c.tInt:
				_, err = c.varInt()
			case f.typ == c.tLong:
				_, err = c.varLong()
			case f.typ == c.tShort:
				err = c.varShort()
			case f.typ == c.tBoolean:
				_, err = c.byte()
			case f.typ == c.tFloat:
				_, err = c.varInt()
			case stackTrace && f.typ == c.tStackFrame:
				err = c.fields(c.stackFrame.fields, false)
			default:
				err = c.inline(f)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// inline mirrors the parser's skipping of an inline object: only one
// level, with constant-pool references as 32-bit varints, and for an array
// field another element count.
func (c *checker) inline(f mfield) error {
	cl := c.byID[f.typ]
	if cl == nil || len(cl.fields) == 0 {
		return c.errf("field of unknown type %d", f.typ)
	}
	n := 1
	if f.array {
		var err error
		if n, err = c.count("array element"); err != nil {
			return err
		}
	}
	for range n {
		for _, g := range cl.fields {
			var err error
			switch { // the parser's order here
			case g.cp:
				_, err = c.varInt()
			case g.typ == c.tString:
				err = c.str()
			case g.typ == c.tInt:
				_, err = c.varInt()
			case g.typ == c.tFloat:
				_, err = c.varInt()
			case g.typ == c.tLong:
				_, err = c.varLong()
			case g.typ == c.tShort:
				err = c.varShort()
			case g.typ == c.tBoolean:
				_, err = c.byte()
			default:
				err = c.errf("inline object of type %d nested in another", g.typ)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// str mirrors the generated string reading: null, empty, UTF-8 (3),
// UTF-16 code units as varints (4), Latin-1 (5).
func (c *checker) str() error {
	t, err := c.byte()
	if err != nil {
		return err
	}
	switch t {
	case 0, 1:
		return nil
	case 3, 5:
		n, err := c.varInt()
		if err != nil {
			return err
		}
		if int(n) > c.left() {
			return errEOF
		}
		c.pos += int(n)
		return nil
	case 4:
		n, err := c.count("character")
		if err != nil {
			return err
		}
		for range n {
			if _, err := c.varInt(); err != nil {
				return err
			}
		}
		return nil
	default:
		return c.errf("unknown string encoding %d", t)
	}
}

// decodedEvents are the event types ParseEvent decodes, in the order of
// its switch: an id matches the first of them with that id.
var decodedEvents = []string{
	"jdk.ExecutionSample", "profiler.WallClockSample", "profiler.Malloc", "profiler.Free",
	"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB", "jdk.ObjectAllocationSample",
	"profiler.LiveObject", "jdk.JavaMonitorEnter", "jdk.ThreadPark", "jdk.ActiveSetting",
}

// events mirrors ParseEvent over the whole chunk: each record is a size
// and a type; the types the parser decodes are read field by field, the
// others skipped by size.
func (c *checker) events() (int64, error) {
	type decoded struct {
		id  int64
		cls *mclass
	}
	var dec []decoded
	for _, n := range decodedEvents {
		d := decoded{id: -1} // the parser's id for a type the chunk lacks
		if cl := c.byName[n]; cl != nil {
			d = decoded{id: cl.id, cls: cl}
		}
		dec = append(dec, d)
	}
	var events int64
	c.pos = headerSize
	for c.pos != len(c.b) {
		start := c.pos
		size, err := c.varLong()
		if err != nil {
			return 0, fmt.Errorf("event at chunk byte %d: %w", start, err)
		}
		typ, err := c.varLong()
		if err != nil {
			return 0, fmt.Errorf("event at chunk byte %d: %w", start, err)
		}
		if size == 0 || size > uint64(len(c.b)-start) {
			return 0, fmt.Errorf("event at chunk byte %d: size %d does not fit in the chunk", start, size)
		}
		for i, d := range dec {
			if d.id != int64(typ) {
				continue
			}
			if d.cls == nil {
				if decodedEvents[i] == "jdk.ObjectAllocationSample" {
					// The parser decodes with a nil binding: it would panic.
					return 0, fmt.Errorf("event at chunk byte %d: type id %d", start, int64(typ))
				}
				break
			}
			if err := c.fields(d.cls.fields, false); err != nil {
				return 0, fmt.Errorf("event at chunk byte %d: %s: %w", start, d.cls.name, err)
			}
			break
		}
		if typ > 1 { // 0 is the metadata, 1 a constant pool
			events++
		}
		c.pos = start + int(size)
	}
	return events, nil
}
