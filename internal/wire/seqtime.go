package wire

import "time"

// seqTimes remembers when the packets of one direction of a connection
// were captured, by TCP sequence range, so that any delivered byte can be
// given the capture time of the first packet that carried it.
//
// reassembly can only report the capture time of a byte that sits in a
// packet it delivers directly or in the first page of a buffered packet
// (and panics otherwise), and after a gap most data is delivered from
// buffered pages. Tracking sequence numbers ourselves gives exact times for
// reordered and held-back data too.
type seqTimes struct {
	known bool   // next is valid
	next  uint32 // sequence number of the next byte to be delivered
	recs  []seqRec
	head  int
	// end is one past the highest sequence number captured.
	end     uint32
	haveEnd bool
}

type seqRec struct {
	seq uint32
	n   uint32
	ts  time.Time
	dup bool // every byte was captured before (a retransmission of nothing new)
}

// maxSeqRecs bounds the packets remembered per direction: enough for
// reassembly's per-connection buffering.
const maxSeqRecs = 8192

// packet records a captured segment with payload, and reports whether
// it carried bytes captured before (a retransmission).
func (s *seqTimes) packet(seq uint32, n int, ts time.Time) (retransmitted bool) {
	if n == 0 {
		return false
	}
	retransmitted = s.haveEnd && int32(seq-s.end) < 0
	dup := retransmitted && s.covered(seq, uint32(n))
	if e := seq + uint32(n); !s.haveEnd || int32(e-s.end) > 0 {
		s.end, s.haveEnd = e, true
	}
	if len(s.recs)-s.head >= maxSeqRecs {
		s.head++
	}
	if s.head > len(s.recs)/2 && s.head > 64 {
		s.recs = append(s.recs[:0], s.recs[s.head:]...)
		s.head = 0
	}
	s.recs = append(s.recs, seqRec{seq: seq, n: uint32(n), ts: ts, dup: dup})
	return retransmitted
}

// covered reports whether every byte of [seq, seq+n) is in a remembered
// packet: a retransmission that brought nothing new. Only retransmissions
// ask, so the scan is off the common path.
func (s *seqTimes) covered(seq, n uint32) bool {
	pos, end := seq, seq+n
	for int32(end-pos) > 0 {
		advanced := false
		for _, r := range s.recs[s.head:] {
			if pos-r.seq < r.n { // r.seq <= pos < r.seq+r.n
				pos, advanced = r.seq+r.n, true
			}
		}
		if !advanced {
			return false
		}
	}
	return true
}

// syn sets the sequence number of the first data byte.
func (s *seqTimes) syn(seq uint32) {
	s.known, s.next = true, seq+1
}

// deliver is called before a chunk of length bytes, preceded by skip lost
// bytes, is parsed; afterwards at(off) answers for its bytes.
func (s *seqTimes) deliver(skip int) {
	if !s.known {
		// A stream picked up without its SYN starts at the first
		// packet reassembly accepted.
		if s.head < len(s.recs) {
			s.known, s.next = true, s.recs[s.head].seq
		}
		return
	}
	if skip > 0 {
		s.next += uint32(skip)
	}
}

// done advances past a parsed chunk and forgets packets wholly before it.
func (s *seqTimes) done(length int) {
	s.next += uint32(length)
	for s.head < len(s.recs) {
		r := s.recs[s.head]
		if int32(r.seq+r.n-s.next) > 0 {
			break
		}
		s.head++
	}
}

// at returns the capture time of the earliest packet that carried the byte
// at offset off of the chunk being parsed, or fallback.
func (s *seqTimes) at(off int, fallback time.Time) time.Time {
	if !s.known {
		return fallback
	}
	seq := s.next + uint32(off)
	var best time.Time
	for _, r := range s.recs[s.head:] {
		if seq-r.seq < r.n && (best.IsZero() || r.ts.Before(best)) {
			best = r.ts
		}
	}
	if best.IsZero() {
		return fallback
	}
	return best
}

// latest returns the latest first capture among the bytes at chunk
// offsets [a, b): the time the last of them reached the capture point, so
// that a hole filled by a retransmission after later bytes had arrived
// completes the range only then. Packets that carried nothing new (a
// spurious retransmission) do not count. Without packet records: at(b-1).
func (s *seqTimes) latest(a, b int, fallback time.Time) time.Time {
	last := s.at(b-1, fallback)
	if !s.known || b <= a {
		return last
	}
	lo, hi := s.next+uint32(a), s.next+uint32(b)
	for _, r := range s.recs[s.head:] {
		if r.dup || int32(r.seq+r.n-lo) <= 0 || int32(r.seq-hi) >= 0 {
			continue
		}
		if r.ts.After(last) {
			last = r.ts
		}
	}
	return last
}

// lostInCapture reports whether the peer acknowledged bytes of this
// direction that were never delivered while later bytes wait in
// reassembly: the peer received them, so no retransmission will come and
// the gap is the capture's loss, not the network's.
func (s *seqTimes) lostInCapture(ack uint32) bool {
	return s.known && s.haveEnd && int32(ack-s.next) > 0 && int32(s.end-s.next) > 0
}

// packets calls fn with the chunk offset (clipped to 0) and capture time of
// every remembered packet that overlaps chunk bytes [base, base+n).
func (s *seqTimes) packets(base, n int, fn func(off int, ts time.Time)) {
	if !s.known {
		return
	}
	start := s.next + uint32(base)
	for _, r := range s.recs[s.head:] {
		off := int(int32(r.seq - start))
		if off >= n || off+int(r.n) <= 0 {
			continue
		}
		fn(max(off, 0), r.ts)
	}
}
