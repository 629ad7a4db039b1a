package wire

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// This file reads what requests say about the client that sent them: the
// software it announced, a producer's batch settings, a Metadata request
// for every topic, the consumer group and member of group requests. kscope
// clients and consumers read these from the events.

// maxClientString bounds the client-chosen names kept on an event
// (software, group, member and transactional ids): long enough for any
// real one, short enough that a hostile client cannot make each event
// carry a frame's worth of bytes.
const maxClientString = 255

// clientString interns s, cut to maxClientString bytes.
func (d *Decoder) clientString(s string) string {
	if len(s) > maxClientString {
		s = s[:maxClientString]
	}
	return d.names.intern(s)
}

// decodeAPIVersionsRequest takes the client software an ApiVersions v3+
// request announces (KIP-511). A version the kmsg build does not know
// still gets its response timed: only the body is left unread.
func (d *Decoder) decodeAPIVersionsRequest(p *pending, body []byte) {
	if p.header.version < 3 {
		return
	}
	var req kmsg.ApiVersionsRequest
	req.SetVersion(p.header.version)
	if req.UnsafeReadFrom(body) != nil {
		return
	}
	p.ev.SoftwareName = d.clientString(req.ClientSoftwareName)
	p.ev.SoftwareVersion = d.clientString(req.ClientSoftwareVersion)
}

// addProduceHeaders adds one partition's batch header summary s (and the
// error that ended it) to the request's producer summary.
func (d *Decoder) addProduceHeaders(ev *event.Request, part *event.Partition, s records.HeaderSummary, err error) {
	if s.Batches == 0 {
		if err != nil {
			d.stats.BatchErrors++
		}
		return
	}
	part.Batches = s.Batches
	pr := &ev.Producer
	if pr.Batches == 0 {
		pr.Magic, pr.ProducerID = s.MinMagic, s.ProducerID
		pr.Codec = s.Codec()
	} else {
		pr.Magic = min(pr.Magic, s.MinMagic)
		if c := s.Codec(); c != pr.Codec {
			pr.Codec = "mixed"
		}
	}
	pr.Batches += s.Batches
	pr.Transactional = pr.Transactional || s.Transactional
}

// requestDetails takes what a decoded request of any other API says of
// its client: a Metadata request for every topic, a group request's group
// and member, an OffsetCommit's offsets.
func (d *Decoder) requestDetails(ev *event.Request, req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		// v0 asks for every topic with an empty list, v1+ with null.
		ev.AllTopics = r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	case *kmsg.JoinGroupRequest:
		ev.Group = event.Group{
			ID: d.clientString(r.Group), MemberID: d.clientString(r.MemberID),
			InstanceID: d.optString(r.InstanceID), Generation: -1,
			ProtocolType: d.clientString(r.ProtocolType), SessionTimeoutMs: r.SessionTimeoutMillis,
			RebalanceTimeoutMs: r.RebalanceTimeoutMillis,
		}
		if r.Version == 0 {
			ev.Group.RebalanceTimeoutMs = r.SessionTimeoutMillis // v0 had one timeout for both
		}
	case *kmsg.SyncGroupRequest:
		ev.Group = d.group(r.Group, r.MemberID, r.InstanceID, r.Generation)
	case *kmsg.HeartbeatRequest:
		ev.Group = d.group(r.Group, r.MemberID, r.InstanceID, r.Generation)
	case *kmsg.OffsetCommitRequest:
		ev.Group = d.group(r.Group, r.MemberID, r.InstanceID, r.Generation)
		d.committedOffsets(ev, r)
	case *kmsg.LeaveGroupRequest:
		member := r.MemberID // v0-v2 leave one member; v3+ a list (KIP-345)
		var instance *string
		if len(r.Members) > 0 {
			member, instance = r.Members[0].MemberID, r.Members[0].InstanceID
		}
		ev.Group = d.group(r.Group, member, instance, -1)
	case *kmsg.OffsetFetchRequest:
		group := r.Group // v8+ may ask for several groups: the first is named
		if len(r.Groups) > 0 {
			group = r.Groups[0].Group
		}
		ev.Group = d.group(group, "", nil, -1)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		ev.Group = d.group(r.Group, r.MemberID, r.InstanceID, r.MemberEpoch)
		ev.Group.RebalanceTimeoutMs = r.RebalanceTimeoutMillis
	}
}

// group builds an event.Group from a request's fields.
func (d *Decoder) group(id, member string, instance *string, generation int32) event.Group {
	return event.Group{ID: d.clientString(id), MemberID: d.clientString(member), InstanceID: d.optString(instance), Generation: generation}
}

// optString interns a nullable string, "" for null.
func (d *Decoder) optString(s *string) string {
	if s == nil {
		return ""
	}
	return d.clientString(*s)
}
