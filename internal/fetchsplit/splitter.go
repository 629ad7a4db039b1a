package fetchsplit

import (
	"cmp"
	"slices"

	"github.com/kscope-dev/kscope/internal/partmap"

	"github.com/kscope-dev/kscope/internal/event"
)

// Options configure a Splitter.
type Options struct {
	// SendRate is the bytes per second a response is expected to pass
	// the capture point at (0: DefaultSendRate): its sending beyond that
	// counts as slow.
	SendRate float64
	// MaxPartitions bounds the partitions whose high watermarks are
	// followed, and the consumer positions kept (0:
	// DefaultMaxPartitions); beyond it, fetches are split without that
	// history (BasisAssumed where it was needed) and counted.
	MaxPartitions int
}

// DefaultSendRate: 50 MB/s, under half a gigabit link: a response slower
// than that was held by something.
const DefaultSendRate = 50e6

// DefaultMaxPartitions bounds the partitions followed.
const DefaultMaxPartitions = 100_000

// maxMarks bounds the high watermark marks kept per partition: enough
// for the fetches in flight on it; older marks fall off first.
const maxMarks = 64

// Splitter splits consumer fetches, following each partition's high
// watermark through the requests it is given. It is not safe for
// concurrent use.
type Splitter struct {
	o     Options
	marks *partmap.Map[history]
	// next is each consumer connection's next offset per partition: a
	// fetch session (KIP-227) leaves the unchanged ones out of a request.
	next map[clientPartition]int64
	// followers: the capture has shown a follower's fetch, so an acks=1
	// produce's offsets are not yet below the high watermark when it is
	// answered.
	followers bool
	// Untracked counts partitions not followed (past MaxPartitions).
	Untracked int64
}

type topicPartition struct {
	topic     string
	partition int32
}

type clientPartition struct {
	client string
	tp     topicPartition
}

// mark: from at (unix ns) on, the partition's high watermark was at
// least hwm.
type mark struct{ at, hwm int64 }

// New returns a Splitter.
func New(o Options) *Splitter {
	if !(o.SendRate > 0) {
		o.SendRate = DefaultSendRate
	}
	o.MaxPartitions = cmp.Or(max(o.MaxPartitions, 0), DefaultMaxPartitions)
	return &Splitter{o: o, marks: partmap.New[history](), next: map[clientPartition]int64{}}
}

// Add takes one request; for an answered consumer fetch it returns its
// split (ok), for anything else it only learns the partitions' high
// watermarks.
func (s *Splitter) Add(r *event.Request) (Split, bool) { return s.AddWith(r, Reading{}) }

// AddWith is Add with what a recording's traces say of the fetch's
// reading.
func (s *Splitter) AddWith(r *event.Request, rd Reading) (Split, bool) {
	switch {
	case r.APIKey == apiProduce:
		s.produced(r)
		return Split{}, false
	case r.APIKey != apiFetch:
		return Split{}, false
	}
	if r.ReplicaID != nil && *r.ReplicaID >= 0 {
		s.followers = true
		s.fetched(r)
		return Split{}, false
	}
	if !Splittable(r) {
		return Split{}, false
	}
	t := timesOf(r)
	sp := s.o.split(r, t, s.available(r), rd)
	s.fetched(r)
	s.advance(r)
	return sp, true
}

// Splittable says whether r is a fetch with times to split: answered,
// its end after its arrival.
func Splittable(r *event.Request) bool {
	return r.APIKey == apiFetch && r.Answered && !r.ClockStep && !r.Arrival.IsZero() && r.End.After(r.Arrival)
}

// Kafka API keys the splitter reads.
const (
	apiProduce = 0
	apiFetch   = 1
)

// produced marks the offsets an answered produce appended as below the
// high watermark from its response's start: for acks=all the leader
// answers once the followers have them; for acks=1 only when no
// follower is seen (else the high watermark moves later, when they
// fetch).
func (s *Splitter) produced(r *event.Request) {
	if !r.Answered || r.Acks == nil || (*r.Acks == 1 && s.followers) || *r.Acks == 0 {
		return
	}
	at := timesOf(r).respStart
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if p.ErrorCode == 0 && p.BaseOffset != nil && p.Records > 0 {
			s.mark(p.Topic, p.Partition, at, *p.BaseOffset+int64(p.Records))
		}
	}
}

// fetched marks the high watermarks a fetch response gave, from its
// start.
func (s *Splitter) fetched(r *event.Request) {
	if !r.Answered {
		return
	}
	at := timesOf(r).respStart
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if p.ErrorCode == 0 && p.HighWatermark != nil {
			s.mark(p.Topic, p.Partition, at, *p.HighWatermark)
		}
	}
}

// mark notes that the partition's high watermark was at least hwm from at on.
func (s *Splitter) mark(topic string, partition int32, at, hwm int64) {
	h := s.marks.Get(topic, partition)
	if h == nil {
		if s.marks.Len() >= s.o.MaxPartitions {
			s.Untracked++
			return
		}
		h = &history{}
		s.marks.Put(topic, partition, h)
	}
	h.add(at, hwm)
}

// availability is when a fetch's data became available.
type availability struct {
	at    int64
	known bool
}

// available is when the fetch's data became available. A partition that
// returned min_bytes alone completed the fetch when its data came: the
// earliest of those; else the fetch needed several, and waited for the
// latest. Unknown when the partitions it rests on have no mark past their
// fetch offset, or their fetch offset is not known (a known earliest
// stands for an unknown one: it can only make the purgatory longer, and
// the fetch less slow).
func (s *Splitter) available(r *event.Request) availability {
	var alone, all availability
	someUnknown := false
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if p.Bytes <= 0 {
			continue
		}
		at, ok := s.partitionAvailable(r, p)
		switch {
		case !ok:
			someUnknown = true
			continue
		case int64(p.Bytes) >= int64(r.Fetch.MinBytes) && (!alone.known || at < alone.at):
			alone = availability{at: at, known: true}
		}
		if !all.known || at > all.at {
			all = availability{at: at, known: true}
		}
	}
	switch {
	case alone.known:
		return alone
	case someUnknown:
		return availability{}
	}
	return all
}

// partitionAvailable is when p's data at the fetch's offset became
// available: the first mark past it.
func (s *Splitter) partitionAvailable(r *event.Request, p *event.Partition) (int64, bool) {
	offset, ok := s.offsetOf(r, p)
	if !ok {
		return 0, false
	}
	return s.firstPast(p.Topic, p.Partition, offset)
}

// offsetOf is the offset the fetch read p from: the request's, or, for a
// partition a fetch session left out, where the connection's last fetch
// of it left off.
func (s *Splitter) offsetOf(r *event.Request, p *event.Partition) (int64, bool) {
	if p.FetchOffset != nil {
		return *p.FetchOffset, true
	}
	v, ok := s.next[clientPartition{r.Client, topicPartition{p.Topic, p.Partition}}]
	return v, ok
}

// firstPast is the time of the partition's first mark above offset.
func (s *Splitter) firstPast(topic string, partition int32, offset int64) (int64, bool) {
	h := s.marks.Get(topic, partition)
	if h == nil {
		return 0, false
	}
	ms := h.marks
	i, _ := slices.BinarySearchFunc(ms, offset, func(m mark, o int64) int { return cmp.Compare(m.hwm, o+1) })
	if i == len(ms) {
		return 0, false
	}
	return ms[i].at, true
}

// advance remembers where each partition of a consumer's fetch leaves
// its connection: after the last record returned, else where it read.
func (s *Splitter) advance(r *event.Request) {
	for i := range r.Partitions {
		p := &r.Partitions[i]
		k := clientPartition{r.Client, topicPartition{p.Topic, p.Partition}}
		next, ok := s.offsetOf(r, p)
		if p.LastOffset != nil && (!ok || *p.LastOffset >= next) {
			next, ok = *p.LastOffset+1, true
		}
		if _, seen := s.next[k]; !ok || (!seen && len(s.next) >= s.o.MaxPartitions) {
			continue
		}
		s.next[k] = next
	}
}
