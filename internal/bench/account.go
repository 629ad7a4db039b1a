package bench

import (
	"encoding/binary"
	"sync"
)

// Every message carries a unique id in the idHeader header: the run's id
// (so records left in a topic by earlier runs are told apart), the
// producer, the producer's sequence number, and flags. Its send time (the
// clock's Unix ns) is in tsHeader.
const (
	idHeader = "kscope-id"
	tsHeader = "kscope-ts"
	idLen    = 4 + 4 + 8 + 1

	flagMeasured = 1 // sent in the measured part (timed), not the warm-up
)

type msgID struct {
	run      uint32
	producer uint32
	seq      uint64
	flags    byte
}

func (id msgID) put(b *[idLen]byte) {
	binary.BigEndian.PutUint32(b[0:], id.run)
	binary.BigEndian.PutUint32(b[4:], id.producer)
	binary.BigEndian.PutUint64(b[8:], id.seq)
	b[16] = id.flags
}

func parseID(b []byte) (msgID, bool) {
	if len(b) != idLen {
		return msgID{}, false
	}
	return msgID{
		run:      binary.BigEndian.Uint32(b[0:]),
		producer: binary.BigEndian.Uint32(b[4:]),
		seq:      binary.BigEndian.Uint64(b[8:]),
		flags:    b[16],
	}, true
}

// bitset is one producer's acknowledged sequence numbers. The producer's
// promise (or, in sync mode, its loop) is the only writer; it is read after
// every promise has returned.
type bitset []uint64

func (b *bitset) set(i uint64) {
	w := int(i / 64)
	if w >= len(*b) {
		n := max(2*len(*b), w+1, 1024)
		nb := make(bitset, n)
		copy(nb, *b)
		*b = nb
	}
	(*b)[w] |= 1 << (i % 64)
}

func (b bitset) has(i uint64) bool {
	w := int(i / 64)
	return w < len(b) && b[w]&(1<<(i%64)) != 0
}

// ledger is what the consumers saw: per producer, how many times each
// sequence number was consumed (saturating at 255). Consumers update it
// under mu once per poll.
type ledger struct {
	mu       sync.Mutex
	seen     [][]uint8
	consumed int64 // records of this run consumed, duplicates included
	foreign  int64 // records without this run's id
}

func newLedger(producers int) *ledger { return &ledger{seen: make([][]uint8, producers)} }

// see counts one consumption; the caller holds mu. It returns false for an
// id that is not this run's.
func (l *ledger) see(id msgID, run uint32) bool {
	if id.run != run || int(id.producer) >= len(l.seen) || id.seq > 1<<40 {
		l.foreign++
		return false
	}
	s := l.seen[id.producer]
	if id.seq >= uint64(len(s)) {
		n := max(2*uint64(len(s)), id.seq+1, 4096)
		ns := make([]uint8, n)
		copy(ns, s)
		s = ns
		l.seen[id.producer] = s
	}
	if s[id.seq] < 255 {
		s[id.seq]++
	}
	l.consumed++
	return true
}

func (l *ledger) count(p int, seq uint64) uint8 {
	s := l.seen[p]
	if seq < uint64(len(s)) {
		return s[seq]
	}
	return 0
}

// accounting is the exact outcome of a run.
type accounting struct {
	lost, duplicated, consumedUnacked int64
}

// reconcile compares the acknowledged messages of each producer (acked[p],
// sequence numbers below sent[p]) with what the consumers saw: an
// acknowledged message never seen is lost; a message seen more than once
// is duplicated; a message seen but never acknowledged (its produce failed
// or was still unanswered) is counted apart, as it is neither.
func (l *ledger) reconcile(acked []bitset, sent []uint64) accounting {
	l.mu.Lock()
	defer l.mu.Unlock()
	var a accounting
	for p := range acked {
		for seq := uint64(0); seq < sent[p]; seq++ {
			n := l.count(p, seq)
			ack := acked[p].has(seq)
			switch {
			case ack && n == 0:
				a.lost++
			case !ack && n > 0:
				a.consumedUnacked++
			}
			if n > 1 {
				a.duplicated++
			}
		}
	}
	return a
}

// missing lists the acknowledged messages the consumers have not seen yet
// (at most limit of them; the count is exact).
func (l *ledger) missing(acked []bitset, sent []uint64, limit int) (count int64, ids []msgID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range acked {
		for seq := uint64(0); seq < sent[p]; seq++ {
			if acked[p].has(seq) && l.count(p, seq) == 0 {
				count++
				if len(ids) < limit {
					ids = append(ids, msgID{producer: uint32(p), seq: seq})
				}
			}
		}
	}
	return count, ids
}

// stillMissing filters ids down to those still unseen.
func (l *ledger) stillMissing(ids []msgID) []msgID {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := ids[:0]
	for _, id := range ids {
		if l.count(int(id.producer), id.seq) == 0 {
			out = append(out, id)
		}
	}
	return out
}
