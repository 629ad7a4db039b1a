package consumers

import (
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// partition is one consumer client's position in one partition.
type partition struct {
	// position is the next offset the consumer reads: its last fetch
	// offset, moved past what the last response returned; -1 unknown.
	position int64
	// hwm is the last high watermark a response gave; -1 unknown.
	hwm int64
	// lagMs is the age of the data at the consumer's position when it
	// was last fetched (0 once it is caught up); maxLag and maxLagMs the
	// largest seen.
	lagMs          float64
	maxLag         int64
	maxLagMs       float64
	behindSince    time.Time
	lastFetch      time.Time
	fetches, empty int64
	// timed is set once a response gave the data's age.
	timed bool
}

// commit is a group's committed offset of a partition, and when.
type commit struct {
	offset int64
	at     time.Time
}

// fetched follows a consumer fetch's partitions.
func (a *Aggregator) fetched(r *event.Request) {
	k := clientKey{hostOf(r.Client), r.ClientID}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		pk := partKey{client: k, topic: p.Topic, partition: p.Partition}
		st := a.partitions[pk]
		if st == nil {
			if len(a.partitions) >= a.o.MaxPartitions {
				a.untracked++
				continue
			}
			st = &partition{position: -1, hwm: -1}
			a.partitions[pk] = st
		}
		st.update(r, p)
	}
}

// update moves the position and lag by one fetch of the partition. A
// partition that an incremental fetch session left out of the request
// kept its offset; one the response left out had nothing new.
func (st *partition) update(r *event.Request, p *event.Partition) {
	st.fetches++
	st.lastFetch = r.Arrival
	if p.FetchOffset != nil {
		st.position = *p.FetchOffset
	}
	if !r.Answered || p.ErrorCode != 0 {
		return
	}
	if p.HighWatermark != nil {
		st.hwm = *p.HighWatermark
	}
	data := p.LastOffset != nil && p.Bytes > 0
	if !data {
		st.empty++
	}
	// The data's age at the consumer's position: its batch's first
	// timestamp against the response's time.
	var ageMs float64
	aged := false
	if data && p.FirstTimestamp != nil && *p.FirstTimestamp > 0 && !r.End.IsZero() {
		ageMs = max(0, float64(r.End.UnixMicro()-*p.FirstTimestamp*1000)/1000)
		aged = true
	}
	if data && *p.LastOffset+1 > st.position {
		st.position = *p.LastOffset + 1
	}
	if st.position < 0 || st.hwm < 0 {
		return
	}
	lag := max(0, st.hwm-st.position)
	st.maxLag = max(st.maxLag, lag)
	switch {
	case lag == 0:
		st.lagMs, st.timed = 0, true
		st.behindSince = time.Time{}
	case aged:
		st.lagMs, st.timed = ageMs, true
		st.maxLagMs = max(st.maxLagMs, ageMs)
	}
	if lag > 0 && st.behindSince.IsZero() {
		st.behindSince = r.Arrival
	}
}

// committed records a group's committed offsets.
func (a *Aggregator) committed(r *event.Request) {
	if r.Group.ID == "" {
		return
	}
	m := a.commits[r.Group.ID]
	if m == nil {
		if len(a.commits) >= a.o.MaxGroups {
			return
		}
		a.commitRequests[r.Group.ID] = 0
		m = map[topicPartition]commit{}
		a.commits[r.Group.ID] = m
	}
	a.commitRequests[r.Group.ID]++
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if p.CommittedOffset == nil || p.ErrorCode != 0 || (r.Answered && r.ErrorCode != nil && *r.ErrorCode != 0) {
			continue
		}
		tp := topicPartition{p.Topic, p.Partition}
		if _, ok := m[tp]; ok || len(m) < a.o.MaxPartitions {
			m[tp] = commit{offset: *p.CommittedOffset, at: r.Arrival}
		}
	}
}
