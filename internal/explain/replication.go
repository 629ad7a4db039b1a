package explain

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// How a request's replication wait was measured (Finding.ReplicationFrom).
const (
	// ReplicationByFetch: from its own appends' end to the arrival of the
	// last follower Fetch whose fetch offset passed its last offset: the
	// leader's high watermark moved then, and the response followed.
	ReplicationByFetch = "follower-fetches"
	// ReplicationByGap: no such fetch was matched; the gap from its own
	// appends' end to its response, less the response's own transfer.
	ReplicationByGap = "response-gap"
)

// ReplicaFetch is a follower's Fetch request whose fetch offset for a
// partition passed a request's last offset there: the first such fetch of
// that follower. A follower's fetch offset is its log end, so with it the
// follower had the request's records, and the leader could move the
// partition's high watermark past them.
type ReplicaFetch struct {
	Replica   int32  `json:"replica"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LastOffset is the request's last offset in the partition (its base
	// offset + records - 1), FetchOffset the follower's.
	LastOffset  int64 `json:"last_offset"`
	FetchOffset int64 `json:"fetch_offset"`
	// FetchArrival is when the fetch reached the leader; LateMs how long
	// after the end of the leader's own append of the request's records.
	FetchArrival time.Time `json:"fetch_arrival"`
	LateMs       float64   `json:"late_ms"`
	// Client and CorrelationID name the fetch.
	Client        string `json:"client"`
	CorrelationID int32  `json:"correlation_id"`
	// PrevFetchArrival is the follower's fetch before it (on any
	// partition); PrevFetchOffset that fetch's offset for this partition,
	// when it named it (an incremental session leaves out partitions
	// whose offset did not change). A long gap is a follower that did
	// not fetch.
	PrevFetchArrival *time.Time `json:"prev_fetch_arrival,omitempty"`
	PrevFetchOffset  *int64     `json:"prev_fetch_offset,omitempty"`
	// Decisive marks the fetch that ended the wait: the last one the
	// request needed.
	Decisive bool `json:"decisive,omitempty"`
}

// maxReplicaFetchCache bounds the follower fetches kept decoded: slow
// requests come in bunches around one slow follower, so a small cache
// spares reading the same lines again.
const maxReplicaFetchCache = 1 << 16

// replicaFetch is what replication needs of a follower's Fetch request.
type replicaFetch struct {
	broker string
	client string
	corr   int32
	parts  []fetchOffset
}

// fetchOffset is one partition of a follower's Fetch request.
type fetchOffset struct {
	topic, topicID string
	partition      int32
	offset         int64
}

// replicaIndex lists the follower fetches (e.fetches positions) by
// replica, each in arrival order. Built on first use from the scan.
type replicaIndex struct {
	replicas []int32 // sorted
	byID     map[int32][]int32
	cache    map[int32]*replicaFetch
}

func (e *Explainer) replicaIndex() *replicaIndex {
	if e.replicas != nil {
		return e.replicas
	}
	ri := &replicaIndex{byID: make(map[int32][]int32), cache: make(map[int32]*replicaFetch)}
	for i, fr := range e.fetches {
		if fr.replica >= 0 {
			ri.byID[fr.replica] = append(ri.byID[fr.replica], int32(i))
		}
	}
	for id, list := range ri.byID {
		slices.SortStableFunc(list, func(a, b int32) int { return cmp.Compare(e.fetches[a].arrival, e.fetches[b].arrival) })
		ri.replicas = append(ri.replicas, id)
	}
	slices.Sort(ri.replicas)
	e.replicas = ri
	return ri
}

// fetch reads (once) the follower fetch at e.fetches[i]; nil if its line
// cannot be read.
func (e *Explainer) replicaFetch(ri *replicaIndex, i int32) *replicaFetch {
	if rf, ok := ri.cache[i]; ok {
		return rf
	}
	if len(ri.cache) >= maxReplicaFetchCache {
		clear(ri.cache)
	}
	var rf *replicaFetch
	if r, err := e.readRequest(e.fetches[i].pos); err == nil {
		rf = &replicaFetch{broker: r.Broker, client: r.Client, corr: r.CorrelationID}
		for _, p := range r.Partitions {
			if p.FetchOffset != nil {
				rf.parts = append(rf.parts, fetchOffset{topic: p.Topic, topicID: p.TopicID, partition: p.Partition, offset: *p.FetchOffset})
			}
		}
	}
	ri.cache[i] = rf
	return rf
}

// offsetOf is the fetch's offset for a produce request's partition p: by
// topic id when both have one (Produce and Fetch v13+ name topics only by
// id), else by name.
func (rf *replicaFetch) offsetOf(p *event.Partition) (int64, bool) {
	for _, fo := range rf.parts {
		if fo.partition != p.Partition {
			continue
		}
		if fo.topicID != "" && p.TopicID != "" && fo.topicID == p.TopicID || fo.topic != "" && fo.topic == p.Topic {
			return fo.offset, true
		}
	}
	return 0, false
}

// replication measures an acks=all request's wait for its followers,
// from its own appends' end (ownEnd) when every own append was found
// (measurable): for each partition, the first Fetch of each follower to
// the same broker whose fetch offset passed the request's last offset,
// between its own append's start and the response; the wait ends at the
// latest of them (the last follower the high watermark needed). Without
// such a fetch for every partition (no base offset or record count, no
// follower fetch in the capture, none passed before the response) it
// falls back to the gap from ownEnd to the response, less the response's
// own transfer, and says so. While queued on its connection, the time the
// request ahead waited for followers is this one's too, with its
// evidence (QueuedBehind.Replication, which explain fills).
func (e *Explainer) replication(r *event.Request, c *reqCtx, f *Finding, measurable bool, ownEnd int64) measured {
	m := measured{cause: CauseReplication}
	if measurable && ownEnd > 0 {
		end, fetches, why := e.followerFetches(r, f, c.E)
		if why == "" {
			f.ReplicationFrom, f.Replication = ReplicationByFetch, fetches
			if iv := clip(interval{ownEnd, end}, interval{c.A, c.E}); iv.b > iv.a {
				m.ivs = append(m.ivs, iv)
			}
		} else {
			f.ReplicationFrom, f.ReplicationUnmatched = ReplicationByGap, why
			if gap := c.E - ownEnd - int64(r.ResponseMs*1e6); gap > 0 {
				m.ivs = append(m.ivs, interval{ownEnd, ownEnd + gap})
			}
		}
	}
	m.ivs = append(m.ivs, c.queued[CauseReplication]...)
	m.ns = min(unionLen(m.ivs), c.L)
	return m
}

// followerFetches finds, for every partition of r, the follower fetches
// that passed its last offset by E (at most one per follower, the first),
// and returns the latest arrival among the partitions' last; why says
// what was missing when they were not found for every partition.
func (e *Explainer) followerFetches(r *event.Request, f *Finding, E int64) (end int64, found []ReplicaFetch, why string) {
	if e.readRequest == nil {
		return 0, nil, "no follower fetch with its replica id in the capture"
	}
	ri := e.replicaIndex()
	if len(ri.replicas) == 0 {
		return 0, nil, "no follower fetch with its replica id in the capture"
	}
	for pi := range r.Partitions {
		p := &r.Partitions[pi]
		w := f.Partitions[pi].Write
		if p.BaseOffset == nil || p.Records <= 0 || w == nil {
			return 0, nil, fmt.Sprintf("%s-%d: no base offset or record count in the capture", p.Topic, p.Partition)
		}
		last := *p.BaseOffset + int64(p.Records) - 1
		from, appended := w.Start.UnixNano(), w.End.UnixNano()
		var part []ReplicaFetch
		for _, id := range ri.replicas {
			list := ri.byID[id]
			k, _ := slices.BinarySearchFunc(list, from, func(i int32, t int64) int { return cmp.Compare(e.fetches[i].arrival, t) })
			for ; k < len(list) && e.fetches[list[k]].arrival <= E; k++ {
				rf := e.replicaFetch(ri, list[k])
				if rf == nil || rf.broker != r.Broker {
					continue
				}
				off, ok := rf.offsetOf(p)
				if !ok || off <= last {
					continue
				}
				arr := e.fetches[list[k]].arrival
				ev := ReplicaFetch{Replica: id, Topic: p.Topic, Partition: p.Partition, LastOffset: last, FetchOffset: off,
					FetchArrival: time.Unix(0, arr).UTC(), LateMs: ms(arr - appended), Client: rf.client, CorrelationID: rf.corr}
				e.previousFetch(ri, list, k, r.Broker, p, &ev)
				part = append(part, ev)
				break
			}
		}
		if len(part) == 0 {
			return 0, nil, fmt.Sprintf("%s-%d: no follower fetch passed offset %d before the response", p.Topic, p.Partition, last)
		}
		latest := slices.MaxFunc(part, func(a, b ReplicaFetch) int { return a.FetchArrival.Compare(b.FetchArrival) }).FetchArrival
		for i := range part {
			part[i].Decisive = part[i].FetchArrival.Equal(latest)
		}
		end = max(end, latest.UnixNano())
		found = append(found, part...)
	}
	// Only the fetches at the overall end decided; others were in time.
	for i := range found {
		found[i].Decisive = found[i].Decisive && found[i].FetchArrival.UnixNano() == end
	}
	slices.SortStableFunc(found, func(a, b ReplicaFetch) int { return cmp.Compare(b.LateMs, a.LateMs) })
	return end, found, ""
}

// previousFetch fills ev's previous fetch: the follower's fetch to the
// same broker before list[k].
func (e *Explainer) previousFetch(ri *replicaIndex, list []int32, k int, broker string, p *event.Partition, ev *ReplicaFetch) {
	for j := k - 1; j >= 0; j-- {
		rf := e.replicaFetch(ri, list[j])
		if rf == nil || rf.broker != broker {
			continue
		}
		t := time.Unix(0, e.fetches[list[j]].arrival).UTC()
		ev.PrevFetchArrival = &t
		if off, ok := rf.offsetOf(p); ok {
			ev.PrevFetchOffset = &off
		}
		return
	}
}

func replicationDetail(f *Finding) string {
	var own string
	if d, ok := decisive(f.Replication); ok {
		own = fetchDetail(d)
		if n := len(f.Replication); n > 1 {
			own += fmt.Sprintf(" (%d follower fetches needed)", n)
		}
	}
	if qb := f.QueuedBehind; qb != nil && qb.Cause == CauseReplication {
		s := fmt.Sprintf("acks=all: waited %.1f ms for followers, %.1f ms of it queued behind request %d", f.ExplainedMs, f.QueuedMs, qb.CorrelationID)
		if d, ok := decisive(qb.Replication); ok {
			s += ", whose " + fetchDetail(d)
		}
		if own != "" {
			s += "; then its own: " + own
		}
		return s
	}
	if own == "" {
		own = fmt.Sprintf("appended, then %.1f ms until the response (followers", f.ExplainedMs)
		if f.ReplicationUnmatched != "" {
			own += "; " + f.ReplicationUnmatched
		}
		own += ")"
	}
	return "acks=all: " + own
}

// decisive is the fetch that ended a wait, else the latest.
func decisive(fetches []ReplicaFetch) (ReplicaFetch, bool) {
	for _, rf := range fetches {
		if rf.Decisive {
			return rf, true
		}
	}
	if len(fetches) == 0 {
		return ReplicaFetch{}, false
	}
	return fetches[0], true
}

// fetchDetail names a follower and how late its fetch came, e.g.
// "follower 2 fetched t-0 past offset 41 (fetch offset 42) 480.0 ms after the append".
func fetchDetail(d ReplicaFetch) string {
	s := fmt.Sprintf("follower %d fetched %s-%d past offset %d (fetch offset %d) %.1f ms after the append", d.Replica, d.Topic, d.Partition, d.LastOffset, d.FetchOffset, d.LateMs)
	if d.PrevFetchArrival != nil {
		s += fmt.Sprintf(", %.1f ms after its previous fetch", ms(d.FetchArrival.Sub(*d.PrevFetchArrival).Nanoseconds()))
	}
	return s
}
