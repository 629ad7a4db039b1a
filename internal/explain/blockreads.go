package explain

import (
	"cmp"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// blockReads are the block reads of the traced log devices, by issue
// time, with the running sum of their bytes: how much a span of time read
// from disk is two binary searches. A Fetch whose data was not in the page
// cache is served by the network thread reading it (sendfile): the reads
// issued while it was served are what it cost the disk.
type blockReads struct {
	reads []blockRead
	// sums[i] is the bytes of reads[:i] (len(reads)+1 entries once built).
	sums  []int64
	built bool
}

type blockRead struct {
	issued int64 // unix ns
	bytes  int64
}

// AddBlock adds a block request; only reads are kept.
func (x *Index) AddBlock(b *event.BlockIO) {
	if b.Op != "read" || b.Bytes <= 0 {
		return
	}
	x.reads.reads = append(x.reads.reads, blockRead{issued: b.Start.UnixNano(), bytes: b.Bytes})
	x.reads.built = false
	x.built = false
}

func (r *blockReads) build() {
	if r.built {
		return
	}
	slices.SortStableFunc(r.reads, func(a, b blockRead) int { return cmp.Compare(a.issued, b.issued) })
	r.sums = slices.Grow(r.sums[:0], len(r.reads)+1)
	var sum int64
	r.sums = append(r.sums, 0)
	for _, rd := range r.reads {
		sum += rd.bytes
		r.sums = append(r.sums, sum)
	}
	r.built = true
}

// during counts the reads issued in [a, b) (unix ns) and their bytes.
func (r *blockReads) during(a, b int64) (n int, bytes int64) {
	if !r.built || b <= a {
		return 0, 0
	}
	at := func(t int64) int {
		i, _ := slices.BinarySearchFunc(r.reads, t, func(rd blockRead, t int64) int { return cmp.Compare(rd.issued, t) })
		return i
	}
	i, j := at(a), at(b)
	return j - i, r.sums[j] - r.sums[i]
}
