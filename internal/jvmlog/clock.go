package jvmlog

// The wall-clock decorations (utctime, time, timemillis) have millisecond
// resolution; the nanosecond ones (timenanos, uptimenanos) are a
// monotonic clock. A line that has both says that its wall-clock time,
// truncated to the ms, is wall, so the offset between the two clocks
// (wall clock minus counter) lies in [wall-counter, wall-counter+1ms).
// The offset stays the same while nobody steps the wall clock (NTP slews
// both alike), so the intersection of these intervals over many lines
// pins it down far better than a millisecond: lines fall at every phase
// of the millisecond, and each cuts the interval from one side. A line
// whose interval misses the current one means the wall clock was
// stepped: a new segment starts there.

// clockSegment is the offset estimate of a run of lines.
type clockSegment struct {
	line   int64 // its first line (1-based)
	lo, hi int64 // the offset lies in [lo, hi)
}

// maxSegments bounds the segments kept for a file: a file whose wall
// clock jumps more often than that (only a crafted one) has its later
// jumps folded into the last segment.
const maxSegments = 1024

// clockFit collects the segments of a file (the first pass).
type clockFit struct {
	segs  []clockSegment
	steps int64 // wall-clock steps seen (segments started after the first)
}

// add takes a line with both kinds of time.
func (c *clockFit) add(line, wall, counter int64) {
	lo, ok := sub(wall, counter)
	if !ok || lo > maxInt64-1e6 {
		return
	}
	hi := lo + 1e6
	if n := len(c.segs); n > 0 {
		s := &c.segs[n-1]
		if lo < s.hi && hi > s.lo {
			s.lo, s.hi = max(s.lo, lo), min(s.hi, hi)
			return
		}
		c.steps++
		if n == maxSegments {
			*s = clockSegment{line: s.line, lo: lo, hi: hi}
			return
		}
	}
	c.segs = append(c.segs, clockSegment{line: line, lo: lo, hi: hi})
}

const maxInt64 = 1<<63 - 1

// sub is a-b, false on overflow.
func sub(a, b int64) (int64, bool) {
	d := a - b
	if (b > 0 && d > a) || (b < 0 && d < a) {
		return 0, false
	}
	return d, true
}

// clockReader converts line times in the second pass, walking the
// segments in line order.
type clockReader struct {
	segs []clockSegment
	i    int
}

// at returns the wall-clock time (Unix ns) of a line and its uncertainty
// (ns either way); ok is false when the line has no wall-clock time.
func (r *clockReader) at(line int64, d *decorated) (t, unc int64, ok bool) {
	for r.i+1 < len(r.segs) && r.segs[r.i+1].line <= line {
		r.i++
	}
	if d.hasCounter && len(r.segs) > 0 {
		s := r.segs[r.i]
		off := s.lo + (s.hi-s.lo)/2
		if t, ok := add(d.counter, off); ok && t >= 0 {
			return t, (s.hi - s.lo + 1) / 2, true
		}
	}
	if d.hasWall && d.wall <= maxInt64-5e5 {
		return d.wall + 5e5, 5e5, true
	}
	return 0, 0, false
}

// add is a+b, false on overflow.
func add(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}
