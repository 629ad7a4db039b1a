package wire

import (
	"encoding/binary"
	"slices"
	"sort"
	"time"
)

// timeSource gives the capture time of a byte of the chunk being parsed.
type timeSource interface {
	at(offset int) time.Time
	// latest is the latest capture time among the bytes at [a, b): when
	// all of them had arrived.
	latest(a, b int) time.Time
}

// frame is one complete Kafka frame (request or response) handed to a
// frameSink. body excludes the 4-byte size and is only valid during the
// call.
type frame struct {
	body  []byte
	size  int       // body size announced by the frame
	first time.Time // capture time of the first byte
	// last is when the frame was complete at the capture point: the
	// latest capture time of its bytes (the last byte's, unless an
	// earlier one was retransmitted after it).
	last     time.Time
	lost     bool // bytes of this frame fell into a capture gap
	cut      bool // body longer than the keep limit: only a prefix is in body
	resynced bool // first frame after resynchronisation: tentative
	// overBudget: the body was cut because the frames in progress held
	// their budget, not because it was too large.
	overBudget bool
}

// oversized says the frame was cut for being too large to keep.
func (f *frame) oversized() bool { return f.cut && !f.lost && !f.overBudget }

// frameSink receives the frames of one direction of a connection.
type frameSink interface {
	// onFrame handles a frame and reports whether it decoded; a frame that
	// was found by resynchronisation and does not decode sends the parser
	// back to searching.
	onFrame(f *frame) bool
	// plausible reports whether b starts a frame this direction could
	// carry, or how many bytes it needs to decide (need > len(b)).
	plausible(b []byte) (ok bool, need int)
	// minFrame is the smallest body size this direction can carry.
	minFrame() int
	// plausibleOversized is plausible for a frame whose size is over
	// the largest accepted: does its header say it is one all the same
	// (in sync, a header backs the size up)?
	plausibleOversized(b []byte) (ok bool, need int)
}

// maxCarry bounds the bytes kept between chunks while searching for a frame:
// enough for a size, a request header and the longest client id we accept.
const maxCarry = 4 + 10 + 256

// frameParser splits one direction of a TCP stream into Kafka frames.
type frameParser struct {
	sink     frameSink
	stats    *Stats
	maxFrame int // largest frame size accepted as plausible
	maxKeep  int // largest body kept for decoding
	// budget bounds the bodies of frames in progress on all
	// connections; reserved is what this parser's body holds of it.
	budget   *partialBudget
	reserved int
	// probe collects the header of a frame whose size is over maxFrame,
	// until the sink says whether it is a frame (probing).
	probe   []byte
	probing bool
	// keepLimit is the current frame's body bytes to keep: maxKeep, or
	// only its header's for an oversized frame.
	keepLimit  int
	overBudget bool // the current frame's body could not be kept whole

	sizeBuf [4]byte
	sizeN   int
	size    int
	body    []byte
	got     int // body bytes seen (kept or not)
	first   time.Time
	latest  time.Time // of the frame's bytes so far
	lost    bool
	stopped bool // body bytes after a gap are not kept (the body is no longer contiguous)

	syncing    bool
	resynced   bool // the current frame was found by resynchronisation
	hold       int  // bytes kept while no frame is plausible (0: maxCarry)
	carry      []byte
	carryMarks []mark
	marks      []mark
	scanned    int  // carry positions already searched in vain
	final      bool // the stream has ended: undecided positions are rejected
	scan       []byte
	shifted    shiftedTime
	rescanTS   fixedTime
	// cur is the frame handed to the sink: kept here, not on the stack,
	// because a pointer passed to an interface method escapes (an
	// allocation per frame otherwise). A sink never completes a frame of
	// its own parser, so cur is not overwritten during onFrame.
	cur frame
}

// fixedTime is a timeSource with one time for every byte.
type fixedTime time.Time

func (t *fixedTime) at(int) time.Time { return time.Time(*t) }

func (t *fixedTime) latest(int, int) time.Time { return time.Time(*t) }

func newFrameParser(sink frameSink, stats *Stats, budget *partialBudget, maxFrame, maxKeep int, syncing bool) *frameParser {
	return &frameParser{sink: sink, stats: stats, budget: budget, maxFrame: maxFrame, maxKeep: maxKeep, syncing: syncing}
}

// feed parses a chunk of in-order stream bytes.
func (p *frameParser) feed(data []byte, ts timeSource) {
	off := 0
	for off < len(data) {
		if p.syncing {
			p.resync(data[off:], ts, off)
			return
		}
		if p.probing {
			off += p.probeOversized(data[off:])
			continue
		}
		if p.sizeN < 4 {
			if p.sizeN == 0 {
				p.first = ts.at(off)
				p.latest = time.Time{}
			}
			n := copy(p.sizeBuf[p.sizeN:], data[off:])
			p.noteLatest(ts.latest(off, off+n))
			p.sizeN += n
			off += n
			if p.sizeN < 4 {
				continue
			}
			size := int(int32(binary.BigEndian.Uint32(p.sizeBuf[:])))
			switch {
			case size > p.maxFrame:
				// Too large, unless its header says it is a
				// frame all the same.
				p.probing, p.probe = true, append(p.probe[:0], p.sizeBuf[:]...)
			case size < p.sink.minFrame():
				p.lostSync(p.sizeBuf[1:])
			default:
				p.size, p.got, p.body, p.keepLimit = size, 0, p.body[:0], p.maxKeep
				if size == 0 {
					p.finish(p.first)
				}
			}
			continue
		}
		take := min(p.size-p.got, len(data)-off)
		p.noteLatest(ts.latest(off, off+take))
		if p.got == 0 && take == p.size && p.size <= p.keepLimit {
			// The whole body is in this chunk: decode in place.
			p.got = take
			off += take
			p.finishWith(data[off-take:off], p.latest)
			continue
		}
		if !p.stopped && len(p.body) < p.keepLimit {
			p.keepBody(data[off : off+min(take, p.keepLimit-len(p.body))])
		}
		p.got += take
		off += take
		if p.got == p.size {
			p.finish(p.latest)
		}
	}
}

func (p *frameParser) finish(last time.Time) { p.finishWith(p.body, last) }

// noteLatest keeps the latest capture time of the current frame's bytes.
func (p *frameParser) noteLatest(t time.Time) {
	if t.After(p.latest) {
		p.latest = t
	}
}

func (p *frameParser) finishWith(body []byte, last time.Time) {
	p.cur = frame{
		body:       body,
		size:       p.size,
		first:      p.first,
		last:       last,
		lost:       p.lost,
		cut:        len(body) < p.size,
		resynced:   p.resynced,
		overBudget: p.overBudget,
	}
	f := &p.cur
	ok := p.sink.onFrame(f)
	wasResynced := p.resynced
	p.reset()
	if !ok && wasResynced {
		// A false start: the bytes were not a frame after all. Search
		// them again from the byte after the false size.
		p.stats.SkippedBytes++
		p.syncing = true
		if !f.cut {
			again := append(append(make([]byte, 0, 3+len(body)), p.sizeBuf[1:]...), body...)
			p.carry = p.carry[:0]
			p.carryMarks = p.carryMarks[:0]
			p.scanned = 0
			p.rescanTS = fixedTime(f.last)
			p.resync(again, &p.rescanTS, 0)
		} else {
			p.stats.SkippedBytes += int64(f.size) + 3
		}
	}
	p.cur.body = nil // not to pin a reassembly page until the next frame
}

func (p *frameParser) reset() {
	p.sizeN, p.size, p.got = 0, 0, 0
	p.releaseBody()
	p.lost, p.stopped, p.resynced = false, false, false
	p.probing, p.probe = false, p.probe[:0]
}

// lostSync starts searching for a frame again at carried, the bytes after
// the first of a size no frame backs up.
func (p *frameParser) lostSync(carried []byte) {
	p.stats.Resyncs++
	p.stats.SkippedBytes++
	first := p.first
	p.carry = append(p.carry[:0], carried...)
	p.reset()
	p.syncing = true
	p.carryMarks = append(p.carryMarks[:0], mark{off: 0, ts: first})
	p.scanned = 0
}

// probeOversized adds bytes of data to the header of a frame whose size
// is over maxFrame until the sink can tell. A frame is then timed to its
// end as oversized, only its header kept; anything else lost sync, and
// the search for a frame starts at the byte after the size's first, data
// not taken (so its bytes keep their capture times). It returns the bytes
// of data taken.
func (p *frameParser) probeOversized(data []byte) int {
	before := len(p.probe)
	n := min(len(data), maxCarry-before)
	p.probe = append(p.probe, data[:n]...)
	ok, need := p.sink.plausibleOversized(p.probe)
	switch {
	case ok:
		header := p.probe[4:]
		p.probing = false
		p.size = int(int32(binary.BigEndian.Uint32(p.probe[:4])))
		p.got, p.body, p.keepLimit = 0, p.body[:0], len(header)
		p.keepBody(header)
		p.got = len(header)
	case need > len(p.probe) && len(p.probe) < maxCarry:
		// Wait for more of the header.
	default:
		p.lostSync(p.probe[1:before])
		return 0
	}
	return n
}

// partialBudget is what the bodies of frames in progress may hold on all
// connections together. Bodies given up are pooled for the next frames
// (on any connection), their bytes still counted; the pool is emptied
// before a frame is refused room.
type partialBudget struct {
	used, limit int64
	pool        [][]byte
}

// maxPooled bounds the body buffers pooled.
const maxPooled = 16

// take reserves n bytes.
func (b *partialBudget) take(n int) bool {
	if b.used+int64(n) > b.limit {
		b.drain()
	}
	if b.used+int64(n) > b.limit {
		return false
	}
	b.used += int64(n)
	return true
}

func (b *partialBudget) give(n int) { b.used -= int64(n) }

// drain frees the pooled buffers.
func (b *partialBudget) drain() {
	for _, buf := range b.pool {
		b.give(cap(buf))
	}
	clear(b.pool)
	b.pool = b.pool[:0]
}

// reuse returns a pooled buffer of at least n bytes; its reservation
// comes with it.
func (b *partialBudget) reuse(n int) ([]byte, bool) {
	for i, buf := range b.pool {
		if cap(buf) >= n {
			b.pool = slices.Delete(b.pool, i, i+1)
			return buf[:0], true
		}
	}
	return nil, false
}

// keep pools a buffer given up, with its reservation; false when the pool
// is full.
func (b *partialBudget) keep(buf []byte) bool {
	if len(b.pool) >= maxPooled {
		return false
	}
	b.pool = append(b.pool, buf[:0])
	return true
}

// retainBody is the largest body buffer a parser keeps between frames
// (outside the budget): frames of a few packets then need no allocation,
// and the buffers idle connections hold stay small.
const retainBody = 4 << 10

// keepBody appends b to the body of the frame in progress, growing it
// within the budget; when the budget cannot hold it the body is kept no
// further (the frame is timed, not decoded) and counted.
func (p *frameParser) keepBody(b []byte) {
	if need := len(p.body) + len(b); need > cap(p.body) && !p.growBody(need) {
		p.stopped, p.overBudget = true, true
		p.stats.OverBudget++
		return
	}
	p.body = append(p.body, b...)
}

// growBody gives the body room for need bytes: a pooled buffer, or twice
// what it had, as append would, but no more than the frame keeps (so a
// size no byte backs up allocates nothing), reserved from the budget.
func (p *frameParser) growBody(need int) bool {
	body, ok := p.budget.reuse(need)
	if !ok {
		newCap := max(need, min(max(2*cap(p.body), retainBody), p.keepLimit, p.size))
		switch {
		case p.budget.take(newCap):
		case newCap > need && p.budget.take(need):
			newCap = need
		default:
			return false
		}
		body = make([]byte, 0, newCap)
	}
	p.budget.give(p.reserved)
	p.reserved = cap(body)
	p.body = append(body, p.body...)
	return true
}

// releaseBody gives the body's reservation back (or pools the buffer with
// it), keeping the buffer for the next frame only if it is small.
func (p *frameParser) releaseBody() {
	if cap(p.body) > retainBody {
		if p.reserved != cap(p.body) || !p.budget.keep(p.body) {
			p.budget.give(p.reserved)
		}
		p.body = nil
	} else {
		p.budget.give(p.reserved)
	}
	p.reserved = 0
	p.overBudget = false
	p.body = p.body[:0]
}

// unfinished counts the frame the end of the capture or connection cut
// off, if any, and forgets it.
func (p *frameParser) unfinished() {
	if p.syncing {
		p.stats.SkippedBytes += int64(len(p.carry))
		p.carry, p.carryMarks, p.scanned = p.carry[:0], p.carryMarks[:0], 0
		return
	}
	if p.sizeN > 0 || p.probing {
		p.stats.Partial++
		p.stats.Unfinished++
	}
	p.reset()
}

// gap tells the parser that n bytes of the stream were never captured
// (n < 0: an unknown number).
func (p *frameParser) gap(n int, at time.Time) {
	p.stats.Gaps++
	if n > 0 {
		p.stats.SkippedBytes += int64(n)
	}
	if p.syncing {
		p.stats.SkippedBytes += int64(len(p.carry))
		p.carry, p.carryMarks, p.scanned = p.carry[:0], p.carryMarks[:0], 0
		return
	}
	if n > 0 && p.sizeN == 4 && p.got+n <= p.size {
		// The gap is inside the current frame: its end is still known.
		p.lost, p.stopped = true, true
		p.got += n
		if p.got == p.size {
			p.finish(at)
		}
		return
	}
	if p.sizeN == 4 && p.got > 0 {
		// The frame's end fell into the gap; hand over what we have
		// (its header may still pair a request with a response).
		p.lost = true
		p.got = p.size
		p.finish(at)
	}
	if p.probing {
		p.stats.SkippedBytes += int64(len(p.probe))
	}
	p.reset()
	p.syncing = true
	p.stats.Resyncs++
	p.carry, p.carryMarks, p.scanned = p.carry[:0], p.carryMarks[:0], 0
}

// resync searches data (after any carried bytes) for a plausible frame start.
func (p *frameParser) resync(data []byte, ts timeSource, base int) {
	window := data
	if len(p.carry) > 0 {
		p.scan = append(append(p.scan[:0], p.carry...), data...)
		window = p.scan
	}
	carried := len(window) - len(data)
	// Marks give the capture time of every byte of the window: the carried
	// marks, then one per packet of data.
	p.marks = append(p.marks[:0], p.carryMarks...)
	p.marks = appendMarks(p.marks, ts, base, len(data), carried)
	undecided, inside := -1, -1
	for i := p.candidate(min(p.scanned, len(window)), len(window)); i < len(window); i = p.candidate(i+1, len(window)) {
		ok, need := p.sink.plausible(window[i:])
		if ok && i < inside {
			// Inside the frame an undecided response header
			// claims: record data there (batch lengths followed by
			// small integers) can mimic a response that ends where
			// the data ends. Wait for the claim to be decided.
			ok = false
		}
		if ok {
			p.stats.SkippedBytes += int64(i)
			p.syncing = false
			p.scanned = 0
			p.carry = p.carry[:0]
			p.carryMarks = p.carryMarks[:0]
			inner := ts
			if s, self := ts.(*shiftedTime); self && s == &p.shifted {
				// Resynchronising again inside a resynchronised
				// window: keep the outer mapping, not a loop.
				cp := *s
				inner = &cp
			}
			p.shifted = shiftedTime{inner: inner, base: base, carried: carried, skip: i,
				marks: append(p.shifted.marks[:0], p.marks...)}
			rest := window[i:]
			if carried > 0 {
				// window aliases p.scan, which a later resync may
				// overwrite: parse from a stable copy.
				rest = append([]byte(nil), rest...)
			}
			p.feedResynced(rest)
			return
		}
		if need > len(window)-i && undecided < 0 && !p.final {
			// Undecided until more bytes come; a later position may
			// still be a sure start, unless it lies inside what this
			// one claims.
			undecided = i
			if p.hold > 0 && need <= p.hold {
				inside = i + need
			}
		}
	}
	if undecided >= 0 {
		// Keep the bytes from the first undecided position (and, for
		// a response parser, what it holds) for the next chunk.
		from := undecided
		if p.hold > 0 {
			from = min(undecided, max(0, len(window)-p.hold))
		}
		p.keep(window, from, undecided)
		return
	}
	// Nothing plausible yet. A response parser keeps up to hold bytes: the
	// requests they answer may still be held back by reassembly (a gap in
	// the request direction is given up after one in the response
	// direction), and retry searches them again once they are known.
	keepFrom := len(window)
	if p.hold > 0 {
		keepFrom = max(0, len(window)-p.hold)
	}
	p.keep(window, keepFrom, len(window))
}

// keep carries window[from:] to the next search, counting what is dropped
// as skipped; positions before scanned were already searched.
func (p *frameParser) keep(window []byte, from, scanned int) {
	p.stats.SkippedBytes += int64(from)
	p.carry = append(p.carry[:0], window[from:]...)
	p.scanned = scanned - from
	p.carryMarks = p.carryMarks[:0]
	for i, m := range p.marks {
		if m.off >= from || i+1 < len(p.marks) && p.marks[i+1].off > from || i+1 == len(p.marks) {
			p.carryMarks = append(p.carryMarks, mark{off: max(m.off-from, 0), ts: m.ts})
		}
	}
}

// retry searches the carried bytes again: the sink now accepts more
// frames (a request was added that a held response may answer).
func (p *frameParser) retry() {
	if !p.syncing || len(p.carry) == 0 {
		return
	}
	p.scanned = 0
	var last time.Time
	if n := len(p.carryMarks); n > 0 {
		last = p.carryMarks[n-1].ts
	}
	p.rescanTS = fixedTime(last)
	p.resync(nil, &p.rescanTS, 0)
}

// flush searches the carried bytes one last time when the stream ends: a
// frame start that was waiting for more bytes will not get them, so later
// sure starts are taken instead.
func (p *frameParser) flush() {
	if !p.syncing || len(p.carry) == 0 {
		return
	}
	p.final = true
	p.retry()
	p.final = false
}

// mark says that window bytes from off on were captured at ts.
type mark struct {
	off int
	ts  time.Time
}

// packetLister is implemented by time sources that know where packets
// start, so that carried bytes keep exact capture times.
type packetLister interface {
	packets(base, n int, fn func(off int, ts time.Time))
}

func appendMarks(marks []mark, ts timeSource, base, n, carried int) []mark {
	if n == 0 {
		return marks
	}
	first := len(marks)
	marks = append(marks, mark{off: carried, ts: ts.at(base)})
	if pl, ok := ts.(packetLister); ok {
		pl.packets(base, n, func(off int, t time.Time) {
			if off > 0 {
				marks = append(marks, mark{off: carried + off, ts: t})
			}
		})
	}
	added := marks[first:]
	slices.SortStableFunc(added, func(a, b mark) int { return a.off - b.off })
	return marks
}

// candidate returns the first window offset from off on where resync
// looks for a frame start, or n if there is none before n: every offset
// for requests; for responses only where a captured packet (or the first
// chunk of the window) starts. A broker writes each response with its own
// send, so after a gap a response is looked for where a packet starts;
// record data inside a large response (batch lengths followed by small
// integers) otherwise mimics response headers. Jumping from packet start
// to packet start, not testing every offset, keeps the search again after
// every new request (retry, over up to hold bytes) proportional to the
// packets held: testing every byte made a capture that began in the
// middle of a busy consumer's responses decode at 19 MB/s.
func (p *frameParser) candidate(off, n int) int {
	if p.hold == 0 {
		return off
	}
	i := sort.Search(len(p.marks), func(i int) bool { return p.marks[i].off >= off })
	if i == len(p.marks) {
		return n
	}
	return min(p.marks[i].off, n)
}

// markAt returns the time of window offset off.
func markAt(marks []mark, off int) (time.Time, bool) {
	i := sort.Search(len(marks), func(i int) bool { return marks[i].off > off })
	if i == 0 {
		return time.Time{}, false
	}
	return marks[i-1].ts, true
}

func (p *frameParser) feedResynced(b []byte) {
	p.resynced = true
	p.feed(b, &p.shifted)
}

// shiftedTime maps offsets of a resynchronised window (carried bytes, then
// the current chunk from base) back to capture times.
type shiftedTime struct {
	inner   timeSource
	base    int
	carried int
	skip    int
	marks   []mark
}

func (s *shiftedTime) at(off int) time.Time {
	off += s.skip
	if off < s.carried {
		if ts, ok := markAt(s.marks, off); ok {
			return ts
		}
	}
	return s.inner.at(s.base + off - s.carried)
}

// latest, for a resynchronised window, is the last byte's time: the
// carried bytes keep only one time per packet.
func (s *shiftedTime) latest(_, b int) time.Time { return s.at(b - 1) }
