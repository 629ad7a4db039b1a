package jfr

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/grafana/jfr-parser/parser"
	"github.com/grafana/jfr-parser/parser/types/def"

	"github.com/kscope-dev/kscope/internal/event"
)

// PauseSource is the JVMPause.Source of the pauses ReadPauses reads.
const PauseSource = "jfr"

// The events ReadPauses reads (jfr-parser decodes none of them).
const (
	evSafepointBegin = "jdk.SafepointBegin"
	evSafepointEnd   = "jdk.SafepointEnd"
	evSafepointSync  = "jdk.SafepointStateSynchronization"
	evVMOperation    = "jdk.ExecuteVMOperation"
	evGCPhasePause   = "jdk.GCPhasePause"
	evG1GC           = "jdk.G1GarbageCollection"
)

// pauseEvents are the event types ReadPauses decodes, with evGC.
var pauseEvents = []string{evSafepointBegin, evSafepointEnd, evSafepointSync, evVMOperation, evGCPhasePause, evGC, evG1GC}

// PauseStats counts what ReadPauses read.
type PauseStats struct {
	Bytes  int64 // size of the file
	Chunks int64 // chunks read
	// Events counts the event records of those chunks, of every type.
	Events int64
	// Safepoints counts the safepoints with both their jdk.SafepointBegin
	// and jdk.SafepointEnd; GCPauses the jdk.GCPhasePause events; Merged
	// the GC pauses merged into the safepoint they happened in.
	Safepoints, GCPauses, Merged int64
	Pauses                       int64 // JVMPauses handed to fn
	// Unpaired counts safepoint events whose partner never came (the
	// recording began or ended inside the safepoint, or a chunk lost it).
	Unpaired int64
	// Skipped counts events whose time does not fit in a time.Time.
	Skipped int64
}

// ReadPauses reads the JFR file at path and calls fn with a JVMPause for
// each safepoint and each GC pause outside a recorded safepoint, the way
// internal/jvmlog's ReadPauses does for a log (docs/jvmpauses.md):
//
//   - a safepoint spans from its jdk.SafepointBegin's start to its
//     jdk.SafepointEnd's end (paired by safepointId); ReachMs is its
//     jdk.SafepointStateSynchronization's duration; its Name is the
//     operation of the jdk.ExecuteVMOperation with its safepointId;
//   - a jdk.GCPhasePause inside a safepoint makes it a PauseGC with the
//     GC's name and cause (jdk.GarbageCollection and, for G1's young
//     collections, jdk.G1GarbageCollection, by gcId): "Pause Young
//     (Normal)" / "G1 Evacuation Pause", "Pause Full" / "System.gc()";
//   - a safepoint without one is a PauseGC if its operation collects
//     garbage (event.IsGCOperation), else a PauseSafepoint;
//   - a GCPhasePause outside every recorded safepoint is a PauseGC alone.
//
// Source is "jfr". Pauses come chunk by chunk, each chunk's in order of
// their start. Every chunk passes the same check as for ReadLockWaits
// before jfr-parser reads its metadata and pools; the events themselves
// and the pools of names are read by this package's bounded decoder.
// fn may keep the JVMPause; an error from fn stops the reading and is
// returned as it is. A file damaged after some chunks gives the pauses of
// those chunks and an error naming the chunk.
func ReadPauses(path string, fn func(*event.JVMPause) error) (PauseStats, error) {
	return readPath(path, func(data []byte) (PauseStats, error) { return readPauses(data, fn) })
}

// readPauses decodes data, a whole JFR file, chunk by chunk.
func readPauses(data []byte, fn func(*event.JVMPause) error) (PauseStats, error) {
	st := PauseStats{Bytes: int64(len(data))}
	if len(data) == 0 {
		return st, errors.New("empty file")
	}
	if len(data) < len(chunkMagic) || string(data[:len(chunkMagic)]) != chunkMagic {
		return st, fmt.Errorf("not a JFR file (first bytes % x)", data[:min(len(data), 4)])
	}
	ps := newPauseState(&st, fn)
	for off := 0; off < len(data); {
		n := st.Chunks + 1
		err := func() error {
			size, err := chunkSize(data[off:])
			if err != nil {
				return err
			}
			chunk := data[off : off+size]
			events, err := check(chunk)
			if err != nil {
				return err
			}
			if err := ps.readChunk(chunk); err != nil {
				return err
			}
			st.Chunks++
			st.Events += events
			off += size
			return ps.finish(false)
		}()
		if err != nil {
			var ce *callbackError
			if errors.As(err, &ce) {
				return st, err
			}
			// What the chunks before held still counts.
			if ferr := ps.finish(true); ferr != nil {
				return st, ferr
			}
			return st, fmt.Errorf("chunk %d at offset %d: %w", n, off, err)
		}
	}
	return st, ps.finish(true)
}

// safepoint is what the events with one safepointId said.
type safepoint struct {
	start, end       int64 // Unix ns
	hasBegin, hasEnd bool
	reach            int64 // ns; -1 unknown
	op               string
	chunk            int64 // the chunk it was first seen in
}

// gcPhase is one jdk.GCPhasePause.
type gcPhase struct {
	gcID       uint64
	start, end int64
	name       string
	chunk      int64
}

// gcInfo is what jdk.GarbageCollection and jdk.G1GarbageCollection said
// of a collection.
type gcInfo struct {
	name, cause, g1Type string
	chunk               int64
}

// pauseState collects the pause events of the chunks read and hands on
// the pauses they complete. What a later chunk may still complete (a
// safepoint whose end comes after a chunk rotation) waits one chunk.
type pauseState struct {
	st         *PauseStats
	fn         func(*event.JVMPause) error
	chunk      int64
	safepoints map[uint64]*safepoint
	phases     []gcPhase
	gcs        map[uint64]*gcInfo
}

func newPauseState(st *PauseStats, fn func(*event.JVMPause) error) *pauseState {
	return &pauseState{st: st, fn: fn, safepoints: map[uint64]*safepoint{}, gcs: map[uint64]*gcInfo{}}
}

func (ps *pauseState) safepoint(id uint64) *safepoint {
	s := ps.safepoints[id]
	if s == nil {
		s = &safepoint{reach: -1, chunk: ps.chunk}
		ps.safepoints[id] = s
	}
	return s
}

func (ps *pauseState) gc(id uint64) *gcInfo {
	g := ps.gcs[id]
	if g == nil {
		g = &gcInfo{chunk: ps.chunk}
		ps.gcs[id] = g
	}
	return g
}

// readChunk reads one chunk that check accepted.
func (ps *pauseState) readChunk(chunk []byte) error {
	ps.chunk++
	p := parser.NewParser(chunk, parser.Options{ChunkSizeLimit: len(chunk)})
	// The first ParseEvent reads the metadata and the constant pools
	// (threads, strings) whatever the events are.
	if _, err := parseEvent(p); err != nil && err != io.EOF {
		return err
	}
	conv, err := newConverter(p)
	if err != nil {
		return err
	}
	r := &pauseReader{ps: ps, p: p, conv: conv, d: newDecoder(&p.TypeMap, chunk), want: map[def.TypeID]*def.Class{},
		poolTypes: map[def.TypeID]bool{}, pools: map[def.TypeID]map[uint64]string{}}
	for _, n := range pauseEvents {
		if cl := p.TypeMap.NameMap[n]; cl != nil {
			r.want[cl.ID] = cl
			for _, f := range cl.Fields {
				if f.ConstantPool && nameFields[f.Name] {
					r.poolTypes[f.Type] = true
				}
			}
		}
	}
	if len(r.want) == 0 {
		return nil
	}
	if err := r.readPools(int(header(chunk).cpOffset)); err != nil {
		return err
	}
	return r.readEvents()
}

// nameFields are the fields whose values ReadPauses needs as strings: an
// operation, a GC's name and cause, G1's young collection type.
var nameFields = map[string]bool{"operation": true, "name": true, "cause": true, "type": true}

// newDecoder is a decoder over chunk with the chunk's primitive types.
func newDecoder(tm *def.TypeMap, chunk []byte) *decoder {
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
	return d
}

// finish hands on the pauses the chunks read so far complete. Unless
// final, a safepoint still open (begun, not ended) and the GC pauses that
// may lie in it wait for the next chunk; what waited a chunk already is
// dropped as unpaired.
func (ps *pauseState) finish(final bool) error {
	var done []*safepoint
	openFrom := int64(maxInt64)
	for id, s := range ps.safepoints {
		switch {
		case s.hasBegin && s.hasEnd:
			done = append(done, s)
			delete(ps.safepoints, id)
		case final || s.chunk < ps.chunk:
			ps.st.Unpaired++
			delete(ps.safepoints, id)
		case s.hasBegin:
			openFrom = min(openFrom, s.start)
		}
	}
	ps.st.Safepoints += int64(len(done))
	slices.SortFunc(done, func(a, b *safepoint) int { return cmpInt64(a.start, b.start) })
	merged := make([][]gcPhase, len(done))
	var alone, keep []gcPhase
	for _, g := range ps.phases {
		// The last safepoint that began by the phase's start.
		i, _ := slices.BinarySearchFunc(done, g.start+pauseSlack, func(s *safepoint, t int64) int {
			if s.start <= t {
				return -1
			}
			return 1
		})
		switch {
		case i > 0 && done[i-1].end >= g.end-pauseSlack && done[i-1].start <= g.start+pauseSlack:
			merged[i-1] = append(merged[i-1], g)
		case !final && g.start >= openFrom-pauseSlack && g.chunk == ps.chunk:
			keep = append(keep, g)
		default:
			alone = append(alone, g)
		}
	}
	ps.phases = keep
	var out []*event.JVMPause
	for i, s := range done {
		out = append(out, ps.safepointPause(s, merged[i]))
	}
	for _, g := range alone {
		out = append(out, ps.phasePause(g))
	}
	ps.expireGCs(final)
	slices.SortStableFunc(out, func(a, b *event.JVMPause) int { return a.Start.Compare(b.Start) })
	for _, p := range out {
		ps.st.Pauses++
		if err := ps.fn(p); err != nil {
			return &callbackError{err}
		}
	}
	return nil
}

// pauseSlack is how far (ns) a GC pause may stick out of its safepoint:
// the two are timed by separate reads of the same clock.
const pauseSlack = 1000

const maxInt64 = 1<<63 - 1

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// expireGCs forgets collections seen two chunks ago: their pauses are
// handed on by now.
func (ps *pauseState) expireGCs(final bool) {
	for id, g := range ps.gcs {
		if final || g.chunk < ps.chunk-1 {
			delete(ps.gcs, id)
		}
	}
}

// safepointPause is the JVMPause of a safepoint and the GC pauses in it.
func (ps *pauseState) safepointPause(s *safepoint, phases []gcPhase) *event.JVMPause {
	p := &event.JVMPause{Kind: event.KindJVMPause, Type: event.PauseSafepoint, Name: s.op, Source: PauseSource}
	if p.Name == "" {
		p.Name = event.UnknownVMOperation
	}
	if event.IsGCOperation(s.op) {
		p.Type = event.PauseGC
	}
	if s.reach >= 0 {
		p.ReachMs = float64(s.reach) / 1e6
	}
	var longest int64 = -1
	for _, g := range phases {
		ps.st.Merged++
		p.Type = event.PauseGC
		if d := g.end - g.start; d > longest {
			longest = d
			p.Name, p.Cause = ps.gcName(g)
		}
	}
	setTimes(p, s.start, max(s.end, s.start))
	return p
}

// phasePause is the JVMPause of a GC pause outside every safepoint.
func (ps *pauseState) phasePause(g gcPhase) *event.JVMPause {
	p := &event.JVMPause{Kind: event.KindJVMPause, Type: event.PauseGC, Source: PauseSource}
	p.Name, p.Cause = ps.gcName(g)
	setTimes(p, g.start, g.end)
	return p
}

func setTimes(p *event.JVMPause, start, end int64) {
	p.Start, p.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	p.LatencyMs = float64(end-start) / 1e6
}

// gcName names a GC pause as the JVM's gc log does. JFR calls G1's,
// Serial's and Parallel's main pause "GC Pause"; the collector's name
// tells young from full, and only these pauses have a cause, as in the
// log.
func (ps *pauseState) gcName(g gcPhase) (name, cause string) {
	info := ps.gcs[g.gcID]
	if info == nil {
		info = &gcInfo{}
	}
	if g.name != "" && g.name != "GC Pause" {
		// Pause Remark, Pause Cleanup, ZGC's and Shenandoah's pauses: the
		// collection's cause is that of the whole concurrent cycle, which
		// the gc log does not print with them either.
		return g.name, ""
	}
	switch info.name {
	case "G1New", "DefNew", "ParallelScavenge", "ParNew":
		name = "Pause Young"
		if info.g1Type != "" {
			name += " (" + info.g1Type + ")"
		}
	case "G1Full", "G1Old", "SerialOld", "ParallelOld", "PSMarkSweep", "ConcurrentMarkSweep":
		name = "Pause Full"
	default:
		return "GC Pause", info.cause
	}
	return name, info.cause
}
