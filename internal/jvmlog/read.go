package jvmlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// MaxLine is the longest line ReadPauses reads; longer ones are skipped
// (counted in Stats.TooLong). The JVM's gc and safepoint lines are about
// 200 bytes.
const MaxLine = 4096

// Stats counts what ReadPauses read.
type Stats struct {
	// Bytes counts the bytes of the complete lines read: the file up to
	// its size when the reading began, less an unterminated last line.
	Bytes int64
	Lines int64 // lines read, the skipped ones included
	// Skipped counts the lines that gave no pause: other messages of the
	// gc and safepoint tags (Concurrent Mark Cycle, ...), other tags, and
	// the Malformed, TooLong and Untimed lines.
	Skipped int64
	// Malformed counts lines that do not parse: no decorations, or a
	// safepoint or GC pause line with bad fields.
	Malformed int64
	TooLong   int64 // lines longer than MaxLine
	// Untimed counts pause lines without a wall-clock time (no time,
	// utctime or timemillis decoration, nor a nanosecond one in a file
	// that has them).
	Untimed int64
	// Partial is 1 when the file ends in a line without its newline (the
	// JVM was writing it), which is not read.
	Partial int64
	// Safepoints and GCs count the safepoint and GC pause lines read;
	// Merged the GC pauses merged into the safepoint they happened in.
	Safepoints, GCs, Merged int64
	Pauses                  int64 // JVMPauses handed to fn
	// ClockSteps counts the times the wall clock jumped against the
	// nanosecond clock within the file (see Precision).
	ClockSteps int64
	// Precision is the largest uncertainty (either way) of the times
	// handed to fn: how well the file pins down the wall-clock time of
	// its nanosecond decorations (a few µs for a file of a minute or
	// more with Start's decorators), or 0.5 ms for lines with only a
	// millisecond wall-clock time.
	Precision time.Duration
}

// ReadPauses reads a unified-logging file of the gc and safepoint tags
// (as Start writes it, or any -Xlog output with a wall-clock decoration)
// and calls fn with a JVMPause for each safepoint, and for each GC pause
// line not inside a logged safepoint; see the package documentation for
// the formats and the merging. Pauses come in file order, which is the
// order of their ends. fn may keep the JVMPause. An error from fn stops the
// reading and is returned as it is; an I/O error is one line that starts
// with "jvmlog: PATH: line N:". Lines that do not parse are counted, not
// fatal.
//
// The file is read twice (the first pass fits the clocks, see clock.go),
// up to its size when the first pass began, in memory bounded by MaxLine
// and a few small tables.
func ReadPauses(path string, fn func(*event.JVMPause) error) (Stats, error) {
	// Regular files only, checked before the open: the file is read
	// twice, and a FIFO in its place would block the open forever.
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return Stats{}, fmt.Errorf("jvmlog: %w", err)
	}
	defer in.Close()
	st, err := read(in.File(), fn)
	var ce *callbackError
	if errors.As(err, &ce) {
		return st, ce.err
	}
	if err != nil {
		return st, fmt.Errorf("jvmlog: %s: %w", path, err)
	}
	return st, nil
}

// read is ReadPauses on an open file; fn's errors come back as
// *callbackError.
func read(r io.ReadSeeker, fn func(*event.JVMPause) error) (Stats, error) {
	var st Stats
	var fit clockFit
	n, partial, err := scan(r, -1, func(line int64, l []byte) error {
		if d, ok := splitDecorations(l); ok && d.hasWall && d.hasCounter {
			fit.add(line, d.wall, d.counter)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return st, fmt.Errorf("rewind for the second pass: %w", err)
	}
	st.ClockSteps = fit.steps
	if partial {
		st.Partial = 1
	}
	m := &merger{st: &st, fn: fn, clock: clockReader{segs: fit.segs}}
	if st.Bytes, _, err = scan(r, n, m.line); err != nil {
		return st, err
	}
	return st, m.flush()
}

// scan calls fn with each complete line of the first limit bytes of r
// (all of it for limit < 0), without its newline; a line longer than
// MaxLine is passed as nil. It returns the bytes of the complete lines,
// and whether an unterminated line followed them, which is not passed: a
// writer may be in the middle of it.
func scan(r io.Reader, limit int64, fn func(line int64, l []byte) error) (n int64, partial bool, err error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	br := bufio.NewReaderSize(r, MaxLine+1)
	var line int64
	for {
		l, err := br.ReadSlice('\n')
		size := int64(len(l))
		long := false
		for err == bufio.ErrBufferFull { // longer than MaxLine: skip it
			long = true
			l, err = br.ReadSlice('\n')
			size += int64(len(l))
		}
		if err == io.EOF {
			return n, size > 0, nil
		}
		line++
		if err != nil {
			return n, false, fmt.Errorf("line %d: read: %w", line, err)
		}
		n += size
		if long {
			l = nil
		} else {
			l = l[:len(l)-1]
		}
		if err := fn(line, l); err != nil {
			return n, false, err
		}
	}
}

// callbackError carries fn's error through scan unchanged.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// maxPending bounds the GC pause lines waiting for their safepoint's
// line; a file that never logs safepoints has them handed on alone.
const maxPending = 64

// mergeSlack is how far (ns) a GC pause may seem to stick out of its
// safepoint, besides the uncertainty of the two lines' times: the GC's
// duration is printed in µs.
const mergeSlack = 10_000

// pendingGC is a GC pause line not yet matched with a safepoint.
type pendingGC struct {
	start, end int64 // Unix ns
	unc        int64
	gcLine
}

// merger turns the lines of the second pass into JVMPauses.
type merger struct {
	st      *Stats
	fn      func(*event.JVMPause) error
	clock   clockReader
	pending []pendingGC
}

// line handles one line of the second pass.
func (m *merger) line(line int64, l []byte) error {
	m.st.Lines++
	if l == nil {
		m.st.TooLong++
		m.st.Skipped++
		return nil
	}
	d, ok := splitDecorations(l)
	if !ok {
		m.st.Malformed++
		m.st.Skipped++
		return nil
	}
	var sp safepointLine
	var gc gcLine
	var isSP, isGC, bad bool
	if d.tags == "" || d.tags == "safepoint" {
		sp, isSP, bad = parseSafepoint(d.msg)
	}
	if !isSP && !bad && (d.tags == "" || d.tags == "gc") {
		gc, isGC, bad = parseGC(d.msg)
	}
	switch {
	case bad:
		m.st.Malformed++
	case !isSP && !isGC:
	default:
		end, unc, ok := m.clock.at(line, &d)
		if !ok {
			m.st.Untimed++
			break
		}
		if isGC {
			m.st.GCs++
			return m.gc(pendingGC{start: end - gc.dur, end: end, unc: unc, gcLine: gc})
		}
		m.st.Safepoints++
		return m.safepoint(end-sp.total, end, unc, sp)
	}
	m.st.Skipped++
	return nil
}

// gc queues a GC pause line for the safepoint line that follows it.
func (m *merger) gc(g pendingGC) error {
	if len(m.pending) == maxPending {
		if err := m.emitGC(m.pending[0]); err != nil {
			return err
		}
		m.pending = append(m.pending[:0], m.pending[1:]...)
	}
	m.pending = append(m.pending, g)
	return nil
}

// safepoint emits the pending GC pauses that ended before the safepoint
// began, then the safepoint, merged with the GC pauses inside it.
func (m *merger) safepoint(start, end, unc int64, sp safepointLine) error {
	p := &event.JVMPause{Kind: event.KindJVMPause, Type: event.PauseSafepoint, Name: sp.name, Source: Source}
	if p.Name == "" {
		p.Name = UnknownOperation
	}
	if event.IsGCOperation(sp.name) {
		p.Type = event.PauseGC
	}
	if sp.reach >= 0 {
		p.ReachMs = float64(sp.reach) / 1e6
	}
	var longest int64 = -1
	// Lines with a ms wall clock only are placed to ±0.5 ms.
	slack := mergeSlack + unc
	keep := m.pending[:0]
	for _, g := range m.pending {
		switch {
		case g.start >= start-slack-g.unc && g.end <= end+slack+g.unc:
			m.st.Merged++
			p.Type = event.PauseGC
			if g.dur > longest {
				longest, p.Name, p.Cause = g.dur, g.name, g.cause
			}
		case g.end < start-slack-g.unc:
			if err := m.emitGC(g); err != nil {
				return err
			}
		default:
			keep = append(keep, g)
		}
	}
	m.pending = keep
	return m.emit(p, start, end, unc)
}

// flush hands on the GC pauses still waiting at the end of the file.
func (m *merger) flush() error {
	for _, g := range m.pending {
		if err := m.emitGC(g); err != nil {
			return err
		}
	}
	m.pending = nil
	return nil
}

// emitGC hands on a GC pause that no logged safepoint holds.
func (m *merger) emitGC(g pendingGC) error {
	p := &event.JVMPause{Kind: event.KindJVMPause, Type: event.PauseGC, Name: g.name, Cause: g.cause, Source: Source}
	return m.emit(p, g.start, g.end, g.unc)
}

func (m *merger) emit(p *event.JVMPause, start, end, unc int64) error {
	p.Start, p.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	p.LatencyMs = float64(end-start) / 1e6
	m.st.Precision = max(m.st.Precision, time.Duration(unc))
	m.st.Pauses++
	if err := m.fn(p); err != nil {
		return &callbackError{err}
	}
	return nil
}
