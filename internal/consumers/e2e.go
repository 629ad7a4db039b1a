package consumers

import (
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
)

// endToEnd times each message from its produce request's arrival to the
// first consumer fetch response that carried it, per topic. The two legs
// are on different connections and the decoder emits each when its
// response ends, so either may come first: each side waits for the other
// in a bounded ring per partition.
type endToEnd struct {
	parts   map[topicPartition]*e2ePartition
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
	produced  []producedRange  // arrival order, oldest first
	delivered []deliveredRange // response order
}

// producedRange is one produce request's offsets of a partition.
type producedRange struct {
	first, last int64
	arrival     time.Time
	// next is the first offset not yet delivered.
	next int64
}

// deliveredRange is what one consumer fetch response returned.
type deliveredRange struct {
	first, last int64
	at          time.Time
	// latest is the latest at of this range and those held before it:
	// it never decreases along the ring, so a produce request finds the
	// first delivery that may have come after it by binary search.
	latest time.Time
}

func newEndToEnd() *endToEnd {
	return &endToEnd{parts: map[topicPartition]*e2ePartition{}, byTopic: map[string]*hdrhistogram.Histogram{}}
}

func (e *endToEnd) part(topic string, partition int32) *e2ePartition {
	tp := topicPartition{topic, partition}
	p := e.parts[tp]
	if p == nil && len(e.parts) < maxE2EPartitions {
		p = &e2ePartition{}
		e.parts[tp] = p
	}
	return p
}

// produced holds a produce request's appended ranges, and times the
// messages a fetch already delivered.
func (e *endToEnd) produced(r *event.Request) {
	if !r.Answered {
		return
	}
	for i := range r.Partitions {
		pp := &r.Partitions[i]
		if pp.BaseOffset == nil || pp.Records <= 0 || pp.ErrorCode != 0 {
			continue
		}
		p := e.part(pp.Topic, pp.Partition)
		if p == nil {
			continue
		}
		pr := producedRange{first: *pp.BaseOffset, last: *pp.BaseOffset + int64(pp.Records) - 1, arrival: r.Arrival}
		pr.next = pr.first
		for _, d := range p.delivered[p.deliveredSince(r.Arrival):] {
			e.match(pp.Topic, &pr, d)
		}
		if pr.next <= pr.last {
			if len(p.produced) == e2eRing {
				e.dropped += p.produced[0].last - p.produced[0].next + 1
				p.produced = p.produced[1:]
			}
			p.produced = append(p.produced, pr)
		}
	}
}

// fetched times the produced messages a consumer fetch response carried,
// and holds what it carried for produce requests not seen yet.
func (e *endToEnd) fetched(r *event.Request) {
	if !r.Answered || r.End.IsZero() {
		return
	}
	for i := range r.Partitions {
		fp := &r.Partitions[i]
		if fp.FirstOffset == nil || fp.LastOffset == nil || fp.ErrorCode != 0 {
			continue
		}
		p := e.part(fp.Topic, fp.Partition)
		if p == nil {
			continue
		}
		d := deliveredRange{first: *fp.FirstOffset, last: *fp.LastOffset, at: r.End, latest: r.End}
		if n := len(p.delivered); n > 0 && d.latest.Before(p.delivered[n-1].latest) {
			d.latest = p.delivered[n-1].latest
		}
		kept := p.produced[:0]
		for j := range p.produced {
			pr := p.produced[j]
			e.match(fp.Topic, &pr, d)
			if pr.next <= pr.last {
				kept = append(kept, pr)
			}
		}
		p.produced = kept
		if len(p.delivered) == e2eRing {
			p.delivered = p.delivered[1:]
		}
		p.delivered = append(p.delivered, d)
	}
}

// deliveredSince returns the index of the first held delivery that may
// have come at or after t: every one before it came before t, and match
// passes over those. Scanning the whole ring for each produce request
// made the view cost microseconds per request once a consumer had filled
// it (1024 deliveries a partition).
func (p *e2ePartition) deliveredSince(t time.Time) int {
	return sort.Search(len(p.delivered), func(i int) bool { return !p.delivered[i].latest.Before(t) })
}

// match times pr's undelivered messages that d carried: the first fetch
// response after the produce request arrived that holds them.
func (e *endToEnd) match(topic string, pr *producedRange, d deliveredRange) {
	if d.at.Before(pr.arrival) || d.last < pr.next || d.first > pr.last {
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
	h := e.byTopic[topic]
	if h == nil {
		h = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
		e.byTopic[topic] = h
	}
	us := max(1, d.at.Sub(pr.arrival).Microseconds())
	_ = h.RecordValues(min(us, h.HighestTrackableValue()), n)
	e.matched += n
	pr.next = end + 1
}
