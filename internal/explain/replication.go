package explain

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseReplication: an acks=all request's own appends were done early and
// the response came only much later: it waited for the followers, whose
// fetches passing its last offset are matched where the capture has them.
const CauseReplication = "replication"

func init() {
	register(cause{
		name:  CauseReplication,
		order: 30,
		short: "replication",
		help:  "acks=all: appended early, answered late (followers)",
		measure: func(m *measuring) measured {
			var ahead []replPiece
			if prev, ok := m.ahead(); ok {
				ahead = moreOf[*replWait](prev).pieces
			}
			return m.e.replication(m.r, m.reqCtx, m.f, m.replicating && m.sw.allOwn, m.sw.ownEnd, ahead)
		},
		inherited: true,
		named:     replicationNamed,
		detail:    func(f *Finding) string { return replicationDetail(f) + alsoDetail(f) },
	})
}

// replicationNamed names, in a replication finding, the request ahead it
// waited behind with that one's follower fetches, and the follower that
// ended the wait with what held it.
func replicationNamed(m *measuring, own measured) {
	if w := moreOf[*replWait](own); w != nil && w.queuedNs > 0 {
		m.f.QueuedBehind = &QueuedBehind{CorrelationID: m.prev.corr, Cause: m.prev.cause, ReplicationMs: ms(w.queuedNs), Replication: w.queuedFetches}
	}
	setFollower(m.f)
}

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
	// SilentMs is the longest the follower went without a fetch to the
	// leader, from its last fetch before the append to this one: a
	// follower stopped (a pause, a hung disk) is silent; one slow to
	// catch up keeps fetching.
	SilentMs float64 `json:"silent_ms"`
	// PrevFetchArrival is the follower's fetch before it (on any
	// partition); PrevFetchOffset that fetch's offset for this partition,
	// when it named it (an incremental session leaves out partitions
	// whose offset did not change).
	PrevFetchArrival *time.Time `json:"prev_fetch_arrival,omitempty"`
	PrevFetchOffset  *int64     `json:"prev_fetch_offset,omitempty"`
	// Decisive marks the fetch that ended the wait: the last one the
	// request needed.
	Decisive bool `json:"decisive,omitempty"`
	// Follower is the follower's side of the wait for a decisive fetch,
	// when its broker's recording was read too (follower.go).
	Follower *FollowerWait `json:"follower_wait,omitempty"`
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
	// respStart is when its response's first byte passed the capture
	// (unix ns; 0 unanswered).
	respStart int64
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
		if !r.End.IsZero() {
			rf.respStart = r.End.UnixNano() - int64(r.ResponseMs*1e6)
		}
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

// replPiece is a span of a request's wait for followers and the follower
// fetches it rests on: a request queued behind it inherits the spans that
// fall in its own wait on the connection, each with its evidence.
type replPiece struct {
	iv      interval
	fetches []ReplicaFetch
}

// replWait is what replication measured of a request beyond its time
// (measured.more): its pieces (for the request behind it), and the part
// inherited from the requests ahead of it on its connection with their
// fetches.
type replWait struct {
	pieces        []replPiece
	queuedNs      int64
	queuedFetches []ReplicaFetch
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
// own transfer, and says so. While queued on its connection (ahead: the
// pieces of the request ahead, nil when it was not queued), the parts of
// the wait of the requests ahead that fell in its own wait there are its
// too, with their fetches.
func (e *Explainer) replication(r *event.Request, c *reqCtx, f *Finding, measurable bool, ownEnd int64, ahead []replPiece) measured {
	m, w := measured{cause: CauseReplication}, &replWait{}
	if measurable && ownEnd > 0 {
		end, fetches, why := e.followerFetches(r, f, c.E)
		var iv interval
		if why == "" {
			if len(e.peers) > 0 {
				for i := range fetches {
					if fetches[i].Decisive {
						fetches[i].Follower = e.followerWait(r.Broker, &fetches[i], ownEnd)
					}
				}
			}
			f.ReplicationFrom, f.Replication = ReplicationByFetch, fetches
			iv = clip(interval{ownEnd, end}, interval{c.A, c.E})
		} else {
			f.ReplicationFrom, f.ReplicationUnmatched = ReplicationByGap, why
			iv = interval{ownEnd, max(ownEnd, c.E-int64(r.ResponseMs*1e6))}
		}
		if iv.b > iv.a {
			m.ivs = append(m.ivs, iv)
			w.pieces = append(w.pieces, replPiece{iv: iv, fetches: fetches})
		}
	}
	var queued []interval
	for _, p := range ahead {
		iv := clip(p.iv, interval{c.A, c.brokerStart})
		if iv.b <= iv.a {
			continue
		}
		queued = append(queued, iv)
		w.pieces = append(w.pieces, replPiece{iv: iv, fetches: p.fetches})
		for _, rf := range p.fetches {
			if !slices.ContainsFunc(w.queuedFetches, func(o ReplicaFetch) bool { return sameFetch(o, rf) }) {
				w.queuedFetches = append(w.queuedFetches, rf)
			}
		}
	}
	w.queuedNs = unionLen(queued)
	m.ivs = append(m.ivs, queued...)
	m.ns = min(unionLen(m.ivs), c.L)
	slices.SortStableFunc(w.queuedFetches, func(a, b ReplicaFetch) int { return cmp.Compare(b.LateMs, a.LateMs) })
	w.queuedFetches = w.queuedFetches[:min(len(w.queuedFetches), maxReplicaEvidence)]
	m.more = w
	return m
}

// maxReplicaEvidence bounds the inherited fetches listed (the latest
// first).
const maxReplicaEvidence = 8

// sameFetch reports whether a and b are one follower fetch's evidence for
// one partition and request.
func sameFetch(a, b ReplicaFetch) bool {
	return a.Client == b.Client && a.CorrelationID == b.CorrelationID && a.Topic == b.Topic && a.Partition == b.Partition && a.LastOffset == b.LastOffset
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
			// The follower's fetch before the append, then each after
			// it: the longest gap between two is how long it was silent.
			prev := e.sameBroker(ri, list, k-1, r.Broker)
			var silent int64
			for ; k < len(list) && e.fetches[list[k]].arrival <= E; k++ {
				rf := e.replicaFetch(ri, list[k])
				if rf == nil || rf.broker != r.Broker {
					continue
				}
				arr := e.fetches[list[k]].arrival
				if prev >= 0 {
					silent = max(silent, arr-e.fetches[list[prev]].arrival)
				}
				if off, ok := rf.offsetOf(p); ok && off > last {
					ev := ReplicaFetch{Replica: id, Topic: p.Topic, Partition: p.Partition, LastOffset: last, FetchOffset: off,
						FetchArrival: time.Unix(0, arr).UTC(), LateMs: ms(arr - appended), SilentMs: ms(silent), Client: rf.client, CorrelationID: rf.corr}
					if prev >= 0 {
						t := time.Unix(0, e.fetches[list[prev]].arrival).UTC()
						ev.PrevFetchArrival = &t
						if off, ok := e.replicaFetch(ri, list[prev]).offsetOf(p); ok {
							ev.PrevFetchOffset = &off
						}
					}
					part = append(part, ev)
					break
				}
				prev = k
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

// sameBroker is the last index at or before k in list of a fetch to
// broker, or -1.
func (e *Explainer) sameBroker(ri *replicaIndex, list []int32, k int, broker string) int {
	for ; k >= 0; k-- {
		if rf := e.replicaFetch(ri, list[k]); rf != nil && rf.broker == broker {
			return k
		}
	}
	return -1
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
		queued := fmt.Sprintf("%.1f ms of it queued behind request %d", qb.ReplicationMs, qb.CorrelationID)
		if d, ok := decisive(qb.Replication); ok {
			queued += ", whose " + fetchDetail(d)
		}
		// The larger part first.
		if own != "" && f.Shares[CauseReplication]-qb.ReplicationMs >= qb.ReplicationMs {
			return fmt.Sprintf("acks=all: %s; waited %.1f ms for followers in all, %s", own, f.Shares[CauseReplication], queued)
		}
		s := fmt.Sprintf("acks=all: waited %.1f ms for followers, %s", f.Shares[CauseReplication], queued)
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
// "follower 2 fetched t-0 past offset 41 (fetch offset 42) 480.0 ms after
// the append; it had not fetched for 470.2 ms".
func fetchDetail(d ReplicaFetch) string {
	s := fmt.Sprintf("follower %d fetched %s-%d past offset %d (fetch offset %d) %.1f ms after the append", d.Replica, d.Topic, d.Partition, d.LastOffset, d.FetchOffset, d.LateMs)
	if d.SilentMs > 0 {
		s += fmt.Sprintf("; it had not fetched for %.1f ms", d.SilentMs)
	}
	if d.Follower != nil {
		s += "; " + followerDetail(d.Follower)
	}
	return s
}
