package consumers

import (
	"sort"
	"time"

	"github.com/kscope-dev/kscope/internal/partmap"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
)

// endToEnd times each message from its produce request's arrival to the
// first consumer fetch response that carried it, per topic. The two legs
// are on different connections and the decoder emits each when its
// response ends, so either may come first: each side waits for the other
// in a bounded ring per partition.
//
// It runs for every produced partition in the agent, so it keeps times
// as Unix nanoseconds (compared in one instruction, where time.Time
// compares its wall and monotonic parts) and each partition its topic's
// histogram.
type endToEnd struct {
	parts   *partmap.Map[e2ePartition]
	byTopic map[string]*hdrhistogram.Histogram
	// matched counts messages timed; dropped those whose range left a
	// ring before the other leg came.
	matched, dropped int64
}

// e2eRing bounds what is held per partition on each side.
const e2eRing = 1024

// maxE2EPartitions bounds the partitions followed.
const maxE2EPartitions = 20_000

type e2ePartition struct {
	produced  window[producedRange]  // arrival order, oldest first
	delivered window[deliveredRange] // response order
	// hist is the partition's topic's histogram.
	hist *hdrhistogram.Histogram
}

// producedRange is one produce request's offsets of a partition.
type producedRange struct {
	first, last int64
	arrival     int64 // Unix ns
	// next is the first offset not yet delivered.
	next int64
}

// deliveredRange is what one consumer fetch response returned.
type deliveredRange struct {
	first, last int64
	at          int64 // Unix ns
	// latest is the latest at of this range and those held before it:
	// it never decreases along the ring, so a produce request finds the
	// first delivery that may have come after it by binary search.
	latest int64
}

func newEndToEnd() *endToEnd {
	return &endToEnd{parts: partmap.New[e2ePartition](), byTopic: map[string]*hdrhistogram.Histogram{}}
}

func (e *endToEnd) part(topic string, partition int32) *e2ePartition {
	p := e.parts.Get(topic, partition)
	if p == nil && e.parts.Len() < maxE2EPartitions {
		h := e.byTopic[topic]
		if h == nil {
			h = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
			e.byTopic[topic] = h
		}
		p = &e2ePartition{hist: h}
		e.parts.Put(topic, partition, p)
	}
	return p
}

// produced holds a produce request's appended ranges, and times the
// messages a fetch already delivered.
func (e *endToEnd) produced(r *event.Request) {
	if !r.Answered {
		return
	}
	arrival := r.Arrival.UnixNano()
	for i := range r.Partitions {
		pp := &r.Partitions[i]
		if pp.BaseOffset == nil || pp.Records <= 0 || pp.ErrorCode != 0 {
			continue
		}
		p := e.part(pp.Topic, pp.Partition)
		if p == nil {
			continue
		}
		pr := producedRange{first: *pp.BaseOffset, last: *pp.BaseOffset + int64(pp.Records) - 1, arrival: arrival}
		pr.next = pr.first
		delivered := p.delivered.items()
		for _, d := range delivered[p.deliveredSince(arrival):] {
			e.match(p, &pr, d)
			if pr.next > pr.last {
				break // all delivered: the later deliveries match nothing
			}
		}
		if pr.next <= pr.last {
			if old, ok := p.produced.push(pr, e2eRing); ok {
				e.dropped += old.last - old.next + 1
			}
		}
	}
}

// fetched times the produced messages a consumer fetch response carried,
// and holds what it carried for produce requests not seen yet.
func (e *endToEnd) fetched(r *event.Request) {
	if !r.Answered || r.End.IsZero() {
		return
	}
	end := r.End.UnixNano()
	for i := range r.Partitions {
		fp := &r.Partitions[i]
		if fp.FirstOffset == nil || fp.LastOffset == nil || fp.ErrorCode != 0 {
			continue
		}
		p := e.part(fp.Topic, fp.Partition)
		if p == nil {
			continue
		}
		d := deliveredRange{first: *fp.FirstOffset, last: *fp.LastOffset, at: end, latest: end}
		if held := p.delivered.items(); len(held) > 0 {
			d.latest = max(d.latest, held[len(held)-1].latest)
		}
		produced := p.produced.items()
		kept := 0
		for j := range produced {
			pr := produced[j]
			e.match(p, &pr, d)
			if pr.next <= pr.last {
				produced[kept] = pr
				kept++
			}
		}
		p.produced.keep(kept)
		p.delivered.push(d, e2eRing)
	}
}

// deliveredSince returns the index of the first held delivery that may
// have come at or after t (Unix ns): every one before it came before t,
// and match passes over those. Scanning the whole ring for each produce
// request made the view cost microseconds per request once a consumer
// had filled it (1024 deliveries a partition).
func (p *e2ePartition) deliveredSince(t int64) int {
	held := p.delivered.items()
	n := len(held)
	if n == 0 || held[n-1].latest < t {
		return n // the common case in the agent: none came after t yet
	}
	// Else a few came after t, at the ring's end (in the cache, where a
	// binary search's first probes are not): walk back over a few, then
	// search the rest.
	i := n - 1
	for range 8 {
		if i == 0 || held[i-1].latest < t {
			return i
		}
		i--
	}
	return sort.Search(i, func(j int) bool { return held[j].latest >= t })
}

// match times pr's undelivered messages that d carried: the first fetch
// response after the produce request arrived that holds them.
func (e *endToEnd) match(p *e2ePartition, pr *producedRange, d deliveredRange) {
	if d.at < pr.arrival || d.last < pr.next || d.first > pr.last {
		return
	}
	// A response carries a contiguous range: the messages from
	// max(next, d.first) to min(last, d.last). Messages before d.first
	// stay undelivered only if d starts inside the range, which a
	// consumer reading in order does not do; they are left to a later
	// response.
	if d.first > pr.next {
		return
	}
	end := min(pr.last, d.last)
	n := end - pr.next + 1
	us := max(1, (d.at-pr.arrival)/int64(time.Microsecond))
	_ = p.hist.RecordValues(min(us, p.hist.HighestTrackableValue()), n)
	e.matched += n
	pr.next = end + 1
}
