package wire

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// This file reads what the consumer side's group traffic says beyond the
// group and member a request names (clientinfo.go): the offsets an
// OffsetCommit commits and the errors it got back, and what a JoinGroup or
// ConsumerGroupHeartbeat response made of the member. kscope consumers
// builds commit gaps and rebalance timelines from them.

// committedOffsets adds an OffsetCommit request's partitions, each with
// the offset it commits (as sent: the broker, not kscope, judges it).
func (d *Decoder) committedOffsets(ev *event.Request, r *kmsg.OffsetCommitRequest) {
	// Sized by the partitions kmsg decoded, not by a length the request
	// claims.
	n := requestPartitions(r.Topics, func(t *kmsg.OffsetCommitRequestTopic) int { return len(t.Partitions) })
	if n == 0 {
		return
	}
	offsets := d.int64s.take(n)
	ev.Partitions = slices.Grow(ev.Partitions[:0], n)
	for i := range r.Topics {
		t := &r.Topics[i]
		topic := d.names.intern(t.Topic) // "" from v10, which names topics by id
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			offsets = append(offsets, tp.Offset)
			part := event.Partition{Topic: topic, Partition: tp.Partition, CommittedOffset: &offsets[len(offsets)-1]}
			d.resolveTopic(&part, t.TopicID)
			ev.Partitions = append(ev.Partitions, part)
		}
	}
}

// responseDetails takes what a decoded response of any other API says of
// its request's group, after the top-level error code was taken: an
// OffsetCommit's errors per partition, a LeaveGroup's error for the member
// that left, what JoinGroup and ConsumerGroupHeartbeat made of the member.
func (d *Decoder) responseDetails(ev *event.Request, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.OffsetCommitResponse:
		d.commitErrors(ev, r)
	case *kmsg.LeaveGroupResponse:
		// v3+ (KIP-345) answers each member that left on its own: a
		// member unknown to the coordinator gets UNKNOWN_MEMBER_ID
		// there, under a top-level NONE. The request names its first
		// member; the response lists them in the request's order.
		if r.ErrorCode == 0 && len(r.Members) > 0 && r.Members[0].ErrorCode != 0 {
			code := r.Members[0].ErrorCode
			ev.ErrorCode = &code
		}
	case *kmsg.JoinGroupResponse:
		ev.GroupResult = d.joinResult(r)
	case *kmsg.ConsumerGroupHeartbeatResponse:
		ev.GroupResult = d.heartbeatResult(r)
	}
}

// commitErrors merges an OffsetCommit response's error codes into the
// request's partitions; a partition the request did not commit is
// ignored.
func (d *Decoder) commitErrors(ev *event.Request, r *kmsg.OffsetCommitResponse) {
	for i := range r.Topics {
		t := &r.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			if part := d.findPartition(ev, t.Topic, t.TopicID, rp.Partition); part != nil {
				part.ErrorCode = rp.ErrorCode
			}
		}
	}
}

// joinResult is what a JoinGroup response says of the group: the new
// generation (-1 with an error), the member id assigned (MEMBER_ID_REQUIRED
// gives one too), the leader, the assignor chosen and how many members the
// leader is told of.
func (d *Decoder) joinResult(r *kmsg.JoinGroupResponse) event.GroupResult {
	generation := r.Generation
	if r.ErrorCode != 0 {
		generation = -1
	}
	return event.GroupResult{Generation: generation, MemberID: d.clientString(r.MemberID),
		Leader: d.clientString(r.LeaderID), Protocol: d.optString(r.Protocol), Members: len(r.Members)}
}

// heartbeatResult is what a ConsumerGroupHeartbeat response (KIP-848) says
// of the member: its id, its epoch (-1 with an error: a member fenced or
// unknown has none) and how many partitions a new assignment gives it.
func (d *Decoder) heartbeatResult(r *kmsg.ConsumerGroupHeartbeatResponse) event.GroupResult {
	epoch := r.MemberEpoch
	if r.ErrorCode != 0 {
		epoch = -1
	}
	assigned := 0
	if r.Assignment != nil {
		assigned = requestPartitions(r.Assignment.Topics, func(t *kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) int { return len(t.Partitions) })
	}
	return event.GroupResult{Generation: epoch, MemberID: d.optString(r.MemberID), Assigned: assigned}
}
