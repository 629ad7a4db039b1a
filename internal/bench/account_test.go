package bench

import (
	"testing"
)

func TestMsgIDRoundTrip(t *testing.T) {
	for _, id := range []msgID{{}, {run: 0xdeadbeef, producer: 3, seq: 1 << 40, flags: flagMeasured}, {run: 1, producer: 1023, seq: 12345}} {
		var b [idLen]byte
		id.put(&b)
		got, ok := parseID(b[:])
		if !ok || got != id {
			t.Errorf("round trip %+v = %+v, %v", id, got, ok)
		}
	}
	for _, b := range [][]byte{nil, make([]byte, idLen-1), make([]byte, idLen+1)} {
		if _, ok := parseID(b); ok {
			t.Errorf("parseID(%d bytes) accepted", len(b))
		}
	}
}

func TestBitset(t *testing.T) {
	var b bitset
	set := []uint64{0, 1, 63, 64, 65, 1000, 1 << 20}
	for _, i := range set {
		b.set(i)
	}
	for _, i := range set {
		if !b.has(i) {
			t.Errorf("has(%d) = false", i)
		}
	}
	for _, i := range []uint64{2, 62, 66, 999, 1<<20 + 1, 1 << 30} {
		if b.has(i) {
			t.Errorf("has(%d) = true", i)
		}
	}
}

// The ledger finds every lost, duplicated and unacknowledged message.
func TestReconcile(t *testing.T) {
	const run = 42
	type seen struct {
		p   uint32
		seq uint64
		n   int
	}
	tests := []struct {
		name    string
		sent    []uint64
		acked   [][]uint64 // per producer
		seen    []seen
		foreign int
		want    accounting
	}{
		{
			name:  "all acked, all seen once",
			sent:  []uint64{3, 2},
			acked: [][]uint64{{0, 1, 2}, {0, 1}},
			seen:  []seen{{0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {1, 0, 1}, {1, 1, 1}},
		},
		{
			name:  "one lost, one duplicated twice, one seen three times",
			sent:  []uint64{4},
			acked: [][]uint64{{0, 1, 2, 3}},
			seen:  []seen{{0, 0, 2}, {0, 1, 3}, {0, 3, 1}},
			want:  accounting{lost: 1, duplicated: 2},
		},
		{
			name:  "failed produce that was written anyway is not lost and not a duplicate",
			sent:  []uint64{3},
			acked: [][]uint64{{0, 2}},
			seen:  []seen{{0, 0, 1}, {0, 1, 1}, {0, 2, 1}},
			want:  accounting{consumedUnacked: 1},
		},
		{
			name:  "failed produce never written: nothing to report",
			sent:  []uint64{2},
			acked: [][]uint64{{0}},
			seen:  []seen{{0, 0, 1}},
		},
		{
			name:    "records of other runs are foreign, not duplicates",
			sent:    []uint64{1},
			acked:   [][]uint64{{0}},
			seen:    []seen{{0, 0, 1}},
			foreign: 5,
		},
		{
			name:  "nothing consumed: all lost",
			sent:  []uint64{1000, 10},
			acked: [][]uint64{rangeSeq(1000), rangeSeq(10)},
			want:  accounting{lost: 1010},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(len(tt.sent))
			acked := make([]bitset, len(tt.sent))
			for p, seqs := range tt.acked {
				for _, s := range seqs {
					acked[p].set(s)
				}
			}
			l.mu.Lock()
			var consumed int64
			for _, s := range tt.seen {
				for i := 0; i < s.n; i++ {
					if !l.see(msgID{run: run, producer: s.p, seq: s.seq}, run) {
						t.Fatalf("see(%+v) refused", s)
					}
					consumed++
				}
			}
			for i := 0; i < tt.foreign; i++ {
				if l.see(msgID{run: run + 1, producer: 0, seq: uint64(i)}, run) {
					t.Fatal("another run's record accepted")
				}
			}
			if l.see(msgID{run: run, producer: 99}, run) {
				t.Fatal("unknown producer accepted")
			}
			l.mu.Unlock()
			got := l.reconcile(acked, tt.sent)
			if got != tt.want {
				t.Errorf("reconcile = %+v, want %+v", got, tt.want)
			}
			if l.consumed != consumed || l.foreign != int64(tt.foreign)+1 {
				t.Errorf("consumed %d foreign %d, want %d and %d", l.consumed, l.foreign, consumed, tt.foreign+1)
			}
			n, ids := l.missing(acked, tt.sent, 3)
			if n != tt.want.lost || int64(len(ids)) != min(n, 3) {
				t.Errorf("missing = %d (%d listed), want %d", n, len(ids), tt.want.lost)
			}
		})
	}
}

func rangeSeq(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}

// The drain's bookkeeping: stillMissing drops what has been seen since.
func TestStillMissing(t *testing.T) {
	l := newLedger(1)
	acked := []bitset{nil}
	for i := uint64(0); i < 10; i++ {
		acked[0].set(i)
	}
	n, ids := l.missing(acked, []uint64{10}, 100)
	if n != 10 || len(ids) != 10 {
		t.Fatalf("missing = %d, %d ids", n, len(ids))
	}
	l.mu.Lock()
	for _, s := range []uint64{0, 5, 9} {
		l.see(msgID{run: 1, seq: s}, 1)
	}
	l.mu.Unlock()
	ids = l.stillMissing(ids)
	if len(ids) != 7 {
		t.Errorf("still missing %d, want 7", len(ids))
	}
	for _, id := range ids {
		if id.seq == 0 || id.seq == 5 || id.seq == 9 {
			t.Errorf("seen message %d still listed", id.seq)
		}
	}
}
