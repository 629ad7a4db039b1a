package jfr

import (
	"fmt"
	"math"

	"github.com/grafana/jfr-parser/parser"
	"github.com/grafana/jfr-parser/parser/types"
	"github.com/grafana/jfr-parser/parser/types/def"
)

// pauseReader reads the pause events of one chunk into a pauseState.
type pauseReader struct {
	ps   *pauseState
	p    *parser.Parser
	conv *converter
	d    *decoder
	want map[def.TypeID]*def.Class // the pause event types the chunk defines
	// poolTypes are the constant-pool types of the fields that name
	// things (jdk.types.VMOperationType, GCName, GCCause, G1YCType);
	// pools their constants by key, as strings.
	poolTypes map[def.TypeID]bool
	pools     map[def.TypeID]map[uint64]string
}

// maxPauseEvents bounds the safepoints, GC pauses and collections one
// chunk may hold, so that memory stays a small multiple of the chunk: a
// real chunk of 12 MB holds a few thousand.
const maxPauseEvents = 1 << 20

// readPools walks the chunk's constant-pool chain as jfr-parser does
// (check walked it the same way: it stays in the chunk and does not
// loop), keeping the constants of poolTypes.
func (r *pauseReader) readPools(pos int) error {
	seen := map[int]bool{}
	for {
		if pos < headerSize || pos >= len(r.d.b) || seen[pos] {
			return fmt.Errorf("constant pool at chunk byte %d: outside the chunk or looping", pos)
		}
		seen[pos] = true
		delta, err := r.readPool(pos)
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

// readPool reads one checkpoint event: size, type, start, duration,
// delta to the next, flush, and the constants of each type in it.
func (r *pauseReader) readPool(pos int) (int64, error) {
	d := r.d
	d.pos, d.end = pos, len(d.b)
	size, err := d.varLong()
	if err != nil {
		return 0, err
	}
	if size == 0 || size > uint64(len(d.b)-pos) {
		return 0, fmt.Errorf("size %d does not fit in the chunk", size)
	}
	d.end = pos + int(size)
	var delta uint64
	for i := range 5 { // type, start, duration, delta, flush
		v, err := d.varLong()
		if err != nil {
			return 0, err
		}
		if i == 3 {
			delta = v
		}
	}
	n, err := d.count("pool type")
	if err != nil {
		return 0, err
	}
	d.steps = 256 + 8*d.left()
	for range n {
		t, err := d.varLong()
		if err != nil {
			return 0, err
		}
		cl := d.tm.IDMap[def.TypeID(t)]
		if cl == nil {
			return 0, d.errf("constants of unknown type %d", int64(t))
		}
		if err := r.constants(cl); err != nil {
			return 0, fmt.Errorf("%s: %w", oneLine(cl.Name), err)
		}
	}
	return int64(delta), nil
}

// constants reads the constants of one type: a count, then each one's key
// and fields.
func (r *pauseReader) constants(cl *def.Class) error {
	d := r.d
	if cl.Name == "jdk.types.ChunkHeader" { // as jfr-parser reads it
		if d.left() < headerSize {
			return errEOF
		}
		d.pos += headerSize
		return nil
	}
	n, err := d.count("constant")
	if err != nil {
		return err
	}
	keep := r.poolTypes[cl.ID]
	for range n {
		key, err := d.varLong()
		if err != nil {
			return err
		}
		if cl.ID == d.tString {
			if _, err := d.str(); err != nil {
				return err
			}
			continue
		}
		var s string
		var got bool
		err = d.fields(cl.Fields, 0, func(f *def.Field, x value) {
			if keep && !got {
				s, got = r.str(x)
			}
		})
		if err != nil {
			return err
		}
		if got {
			m := r.pools[cl.ID]
			if m == nil {
				m = map[uint64]string{}
				r.pools[cl.ID] = m
			}
			if len(m) >= maxPauseEvents {
				return d.errf("more than %d constants", maxPauseEvents)
			}
			m[key] = s
		}
	}
	return nil
}

// str is a string value: inline, or from the chunk's string pool; made
// safe to print.
func (r *pauseReader) str(x value) (string, bool) {
	switch x.kind {
	case vString:
		return oneLine(x.s), true
	case vStringRef:
		if i, ok := r.p.Strings.IDMap[types.StringRef(x.u)]; ok && int(i) < len(r.p.Strings.String) {
			return oneLine(r.p.Strings.String[i].String), true
		}
	}
	return "", false
}

// name is the string a naming field holds: a constant-pool reference
// into the pools read, or a string.
func (r *pauseReader) name(f *def.Field, x value) string {
	if x.kind == vRef {
		return r.pools[f.Type][x.u]
	}
	s, _ := r.str(x)
	return s
}

// readEvents walks the chunk's event records and decodes the pause ones.
func (r *pauseReader) readEvents() error {
	d := r.d
	for pos := headerSize; pos < len(d.b); {
		d.pos, d.end = pos, len(d.b)
		size, err := d.varLong()
		if err != nil {
			return fmt.Errorf("event at chunk byte %d: %w", pos, err)
		}
		typ, err := d.varLong()
		if err != nil {
			return fmt.Errorf("event at chunk byte %d: %w", pos, err)
		}
		if size == 0 || size > uint64(len(d.b)-pos) {
			return fmt.Errorf("event at chunk byte %d: size %d does not fit in the chunk", pos, size)
		}
		next := pos + int(size)
		if cl := r.want[def.TypeID(typ)]; cl != nil {
			d.end = next
			if err := r.event(cl); err != nil {
				return fmt.Errorf("event at chunk byte %d: %s: %w", pos, oneLine(cl.Name), err)
			}
		}
		pos = next
	}
	return nil
}

// pauseValues are the fields of a pause event that ReadPauses uses.
type pauseValues struct {
	start, dur, id          uint64 // id: safepointId or gcId
	hasStart, hasID         bool
	atSafepoint             bool
	name, cause, op, g1Type string
}

// event decodes one pause event into the state.
func (r *pauseReader) event(cl *def.Class) error {
	var v pauseValues
	err := r.d.event(cl.Fields, func(f *def.Field, x value) {
		switch {
		case f.Name == "startTime" && x.kind == vInt:
			v.start, v.hasStart = x.u, true
		case f.Name == "duration" && x.kind == vInt:
			v.dur = x.u
		case (f.Name == "safepointId" || f.Name == "gcId") && x.kind == vInt:
			v.id, v.hasID = x.u, true
		case f.Name == "safepoint" && x.kind == vBool:
			v.atSafepoint = x.u != 0
		case f.Name == "operation":
			v.op = r.name(f, x)
		case f.Name == "name":
			v.name = r.name(f, x)
		case f.Name == "cause":
			v.cause = r.name(f, x)
		case f.Name == "type":
			v.g1Type = r.name(f, x)
		}
	})
	if err != nil {
		return err
	}
	if !v.hasStart || !v.hasID {
		return nil
	}
	start, ok1 := r.conv.time(v.start)
	dur, ok2 := r.conv.duration(v.dur)
	if !ok1 || !ok2 || start < 0 || start > math.MaxInt64-dur {
		r.ps.st.Skipped++
		return nil
	}
	if len(r.ps.safepoints) >= maxPauseEvents || len(r.ps.phases) >= maxPauseEvents || len(r.ps.gcs) >= maxPauseEvents {
		return r.d.errf("more than %d safepoints or GC pauses", maxPauseEvents)
	}
	r.apply(cl.Name, &v, start, dur)
	return nil
}

// apply records one event's values.
func (r *pauseReader) apply(typ string, v *pauseValues, start, dur int64) {
	ps := r.ps
	switch typ {
	case evSafepointBegin:
		s := ps.safepoint(v.id)
		s.start, s.hasBegin = start, true
	case evSafepointEnd:
		s := ps.safepoint(v.id)
		s.end, s.hasEnd = start+dur, true
	case evSafepointSync:
		ps.safepoint(v.id).reach = dur
	case evVMOperation:
		if v.atSafepoint && v.op != "" {
			ps.safepoint(v.id).op = v.op
		}
	case evGCPhasePause:
		ps.st.GCPauses++
		ps.phases = append(ps.phases, gcPhase{gcID: v.id, start: start, end: start + dur, name: v.name, chunk: ps.chunk})
	case evGC:
		g := ps.gc(v.id)
		g.name, g.cause = v.name, v.cause
	case evG1GC:
		ps.gc(v.id).g1Type = v.g1Type
	}
}
