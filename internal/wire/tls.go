package wire

import (
	"slices"
	"sort"
	"time"

	"github.com/kscope-dev/kscope/internal/tlsdecrypt"
)

// tlsLayer decrypts one connection's TLS records (package tlsdecrypt) and
// feeds their plaintext to the connection's frame parsers, timed by the
// packets that carried each record: the same Kafka decoding as on a
// plaintext listener, one layer down.
type tlsLayer struct {
	s    *stream
	conn *tlsdecrypt.Conn
	// marks are the capture times of the packets of each direction
	// (index 0: client to broker) whose bytes are not decrypted yet.
	marks [2]streamMarks
	pos   [2]int64 // stream bytes fed, by direction
	used  [2]int64 // stream bytes up to the end of the last record decrypted
	rt    recordTime
	emit  tlsdecrypt.EmitFunc
	// decrypted and stopped say the connection was counted in Stats as
	// decrypting and as stopped (a live capture's connections last for
	// hours: they are counted when it happens, not when they close).
	decrypted, stopped bool
	done               bool // closed
}

func newTLSLayer(s *stream, keys tlsdecrypt.KeySource) *tlsLayer {
	l := &tlsLayer{s: s, conn: tlsdecrypt.New(keys)}
	l.emit = l.plaintext
	// Records held while waiting for secrets come out in capture order,
	// both directions interleaved: a SaslHandshake v0 response before the
	// raw token that follows it.
	l.conn.SetOrder(func(dir tlsdecrypt.Direction, end int64) int64 {
		return l.marks[dir].at(end - 1).UnixNano()
	})
	s.d.stats.TLSConnections++
	// Decryption starts at the handshake, so the Kafka bytes start at a
	// frame.
	s.conn.req.syncing, s.conn.resp.syncing = false, false
	return l
}

// feed decrypts a chunk of direction dir (0 client to broker), preceded by
// skip bytes the capture lost.
func (l *tlsLayer) feed(dir, skip int, data []byte, ts *chunkTime) {
	if skip != 0 {
		l.conn.Gap(tlsdecrypt.Direction(dir), skip)
		l.count()
		if skip > 0 {
			l.pos[dir] += int64(skip)
			if l.conn.Status() <= tlsdecrypt.Decrypting {
				// The records after the gap are looked for; the Kafka
				// frames in them are too.
				l.parser(dir).gap(skip, ts.fallback)
			}
		}
	}
	if l.conn.Status() > tlsdecrypt.Decrypting {
		l.pos[dir] += int64(len(data))
		return
	}
	l.marks[dir].add(l.pos[dir], ts, len(data))
	l.pos[dir] += int64(len(data))
	_ = l.conn.Feed(tlsdecrypt.Direction(dir), data, l.emit) // Status says why it stopped
	for i := range l.marks {
		l.marks[i].forget(l.conn.Held(tlsdecrypt.Direction(i)))
	}
	l.count()
}

// count counts the connection in Stats when it first decrypts and when
// its decryption stops (with a problem naming it and why): a stop after
// records decrypted is counted apart from the stops before, so that each
// connection ends in one kind (Stats.TLSBuckets).
func (l *tlsLayer) count() {
	st := &l.s.d.stats
	status := l.conn.Status()
	if !l.decrypted && status == tlsdecrypt.Decrypting {
		l.decrypted = true
		st.TLSDecrypted++
	}
	if l.stopped || status <= tlsdecrypt.Decrypting {
		return
	}
	l.stopped = true
	switch {
	case l.decrypted:
		st.TLSDecryptedThenStopped++
	case status == tlsdecrypt.NoKeys:
		st.TLSNoKeys++
	case status == tlsdecrypt.Lost:
		st.TLSLost++
	case status == tlsdecrypt.NotTLS:
		st.TLSNotTLS++
	default:
		st.TLSFailed++
	}
	l.s.d.tlsProblem(TLSProblem{
		Client: l.s.conn.client, Broker: l.s.conn.broker,
		Status: status.String(), Reason: l.conn.Reason(), Decrypted: l.decrypted,
	})
}

// plaintext hands a decrypted record to its direction's frame parser.
func (l *tlsLayer) plaintext(dir tlsdecrypt.Direction, plain []byte, rec tlsdecrypt.Record) {
	l.used[dir] = rec.End
	l.rt = recordTime{marks: &l.marks[dir], rec: rec}
	l.parser(int(dir)).feed(plain, &l.rt)
}

// parser is the frame parser of direction dir (0: client to broker).
func (l *tlsLayer) parser(dir int) *frameParser {
	if dir == int(tlsdecrypt.ServerToClient) {
		return l.s.conn.resp
	}
	return l.s.conn.req
}

// close ends decryption and counts how the connection ended.
func (l *tlsLayer) close() {
	if l.done {
		return
	}
	l.done = true
	l.conn.Close() // one still waiting for its secrets stops now
	l.count()
	st := &l.s.d.stats
	st.TLSResyncs += int64(l.conn.Resyncs())
	switch {
	case l.conn.Status() == tlsdecrypt.Handshaking:
		st.TLSHandshakeOnly++
	case l.stopped:
		st.TLSUndecryptedBytes += l.pos[0] - l.used[0] + l.pos[1] - l.used[1]
	}
}

// TLSProblem is a TLS connection whose decryption stopped, and why.
type TLSProblem struct {
	Client, Broker string
	Status         string // no-keys, failed, not-tls, lost
	Reason         string
	// Decrypted: records of the connection decrypted before it stopped.
	Decrypted bool
}

// maxTLSProblems bounds the problems a decoder keeps (Stats counts all).
const maxTLSProblems = 100

func (d *Decoder) tlsProblem(p TLSProblem) {
	if len(d.tlsProblems) < maxTLSProblems {
		d.tlsProblems = append(d.tlsProblems, p)
	}
}

// TLSProblems returns the first connections that could not be decrypted
// (up to 100; Stats counts them all).
func (d *Decoder) TLSProblems() []TLSProblem { return slices.Clone(d.tlsProblems) }

// streamMark says that stream bytes from pos on were first captured at ts.
type streamMark struct {
	pos int64
	ts  time.Time
}

// streamMarks are one direction's packet times by stream offset, for the
// bytes the TLS layer still holds.
type streamMarks struct {
	m []streamMark
}

// maxStreamMarks bounds the packets remembered per direction: a record is
// at most 18 KiB, and a connection waiting for its secrets holds 256 KiB.
const maxStreamMarks = 8192

// add marks the packets of a chunk of n bytes at stream offset base.
func (s *streamMarks) add(base int64, ts *chunkTime, n int) {
	if n == 0 {
		return
	}
	if len(s.m) >= maxStreamMarks {
		return // the bytes take the last mark's time
	}
	first := len(s.m)
	s.m = append(s.m, streamMark{pos: base, ts: ts.at(0)})
	ts.packets(0, n, func(off int, t time.Time) {
		if off > 0 && len(s.m) < maxStreamMarks {
			s.m = append(s.m, streamMark{pos: base + int64(off), ts: t})
		}
	})
	added := s.m[first:]
	slices.SortStableFunc(added, func(a, b streamMark) int { return int(a.pos - b.pos) })
}

// forget drops the marks wholly before stream offset held.
func (s *streamMarks) forget(held int64) {
	i := sort.Search(len(s.m), func(i int) bool { return s.m[i].pos > held })
	if i > 1 {
		s.m = append(s.m[:0], s.m[i-1:]...)
	}
}

// at is the capture time of the packet that carried stream offset pos.
func (s *streamMarks) at(pos int64) time.Time {
	i := sort.Search(len(s.m), func(i int) bool { return s.m[i].pos > pos })
	if i == 0 {
		if len(s.m) == 0 {
			return time.Time{}
		}
		return s.m[0].ts
	}
	return s.m[i-1].ts
}

// latest is when all of stream bytes [a, b) had been captured.
func (s *streamMarks) latest(a, b int64) time.Time {
	last := s.at(a)
	i := sort.Search(len(s.m), func(i int) bool { return s.m[i].pos > a })
	for ; i < len(s.m) && s.m[i].pos < b; i++ {
		if s.m[i].ts.After(last) {
			last = s.m[i].ts
		}
	}
	return last
}

// recordTime gives the plaintext of one record the capture times of its
// ciphertext: the byte at plaintext offset off is taken to have come with
// the ciphertext byte at the same distance from the record's header, and
// nothing in it was readable before the whole record (its authentication
// tag is at its end) had come.
type recordTime struct {
	marks *streamMarks
	rec   tlsdecrypt.Record
}

func (r *recordTime) pos(off int) int64 {
	return min(r.rec.Start+5+int64(off), r.rec.End-1)
}

func (r *recordTime) at(off int) time.Time { return r.marks.at(r.pos(off)) }

func (r *recordTime) latest(int, int) time.Time { return r.marks.latest(r.rec.Start, r.rec.End) }

// packets lists the packets that start inside plaintext [base, base+n),
// with offsets from base, for the frame parser's carried bytes.
func (r *recordTime) packets(base, n int, fn func(off int, ts time.Time)) {
	from, to := r.rec.Start+5+int64(base), r.rec.Start+5+int64(base+n)
	for _, m := range r.marks.m {
		if m.pos > from && m.pos < to {
			fn(int(m.pos-from), m.ts)
		}
	}
}
