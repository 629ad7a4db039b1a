package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// batchAt is makeBatch's batch at base offset base, its first timestamp
// firstMs and its largest maxMs (CRC fixed).
func batchAt(base, firstMs, maxMs int64, ids ...string) []byte {
	b := makeBatch(ids...)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint64(b[27:], uint64(firstMs))
	binary.BigEndian.PutUint64(b[35:], uint64(maxMs))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fetchedPartition is one partition of a fetch response built by
// fetchResponse.
type fetchedPartition struct {
	partition      int32
	errCode        int16
	highWatermark  int64
	logStartOffset int64
	batches        []byte
}

// fetchResponse answers for partitions of topic (named and with id, the
// encoder writes the one its version has).
func fetchResponse(topic string, id [16]byte, parts ...fetchedPartition) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic, rt.TopicID = topic, id
	for _, p := range parts {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.HighWatermark = p.partition, p.errCode, p.highWatermark
		rp.LogStartOffset, rp.RecordBatches = p.logStartOffset, p.batches
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// BenchmarkFetchResponses decodes consumer fetches whose responses carry
// two record batches in each of three partitions, as the agent does
// (batch headers only) and as kscope requests does (message ids).
func BenchmarkFetchResponses(b *testing.B) {
	id := [16]byte{7}
	batches := append(batchAt(1000, 1_764_000_000_000, 1_764_000_000_005, manyIDs(20)...), batchAt(1020, 1_764_000_000_006, 1_764_000_000_009, manyIDs(20)...)...)
	c := newConversation(40500)
	c.handshake()
	for corr := range int32(200) {
		req := fetchRequest("orders", id, 0, 1000, -1)
		for p := int32(1); p < 3; p++ {
			tp := kmsg.NewFetchRequestTopicPartition()
			tp.Partition, tp.FetchOffset = p, 1000
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, tp)
		}
		resp := fetchResponse("orders", id, fetchedPartition{0, 0, 5000, 0, batches}, fetchedPartition{1, 0, 5000, 0, batches}, fetchedPartition{2, 0, 5000, 0, batches})
		c.send(true, requestFrame(req, 13, corr, "consumer-1"), 1448, time.Microsecond)
		c.send(false, responseFrame(resp, 13, corr), 1448, time.Microsecond)
	}
	var bytes int64
	for _, s := range c.segs {
		bytes += int64(len(s.data))
	}
	for _, bc := range []struct {
		name           string
		produceIDsOnly bool
	}{{"agent", true}, {"requests", false}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.ProduceIDsOnly = bc.produceIDsOnly
			b.SetBytes(bytes)
			b.ReportAllocs()
			for b.Loop() {
				if _, d := decodeConfig(c.segs, cfg); d.Stats().Responses != 200 {
					b.Fatalf("stats %+v", d.Stats())
				}
			}
		})
	}
}

// extent is what a test expects of a fetched partition's offsets and
// times; -1 for a value that must be absent.
type extent struct {
	highWatermark, logStart, first, last, firstMs, maxMs int64
}

// extentOf reads a partition's values as an extent.
func extentOf(p *event.Partition) extent {
	v := func(x *int64) int64 {
		if x == nil {
			return -1
		}
		return *x
	}
	return extent{v(p.HighWatermark), v(p.LogStartOffset), v(p.FirstOffset), v(p.LastOffset), v(p.FirstTimestamp), v(p.MaxTimestamp)}
}

// TestFetchExtent: a fetch response's partitions carry the first and last
// offsets and timestamps of the whole batches they returned, and their
// log start offset (v5+), for consumers and followers alike; a trailing
// batch cut short is not counted, and an error leaves nothing.
func TestFetchExtent(t *testing.T) {
	const t0 = int64(1_764_000_000_000)
	b1 := batchAt(100, t0, t0+5, "a", "b", "c") // offsets 100-102
	b2 := batchAt(103, t0+10, t0+40, "d", "e")  // offsets 103-104
	hostile := append([]byte(nil), b2...)       // a length no batch can have
	binary.BigEndian.PutUint32(hostile[8:], 0x7ffffff0)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	none := extent{-1, -1, -1, -1, -1, -1}
	tests := []struct {
		name        string
		version     int16
		replica     int32
		answers     []fetchedPartition // all for partition 2
		want        extent
		records     int
		batchErrors int64
	}{
		{"v4 consumer: no log start offset before v5", 4, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2)}}, extent{500, -1, 100, 104, t0, t0 + 40}, 5, 0},
		{"v5 consumer", 5, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2)}}, extent{500, 7, 100, 104, t0, t0 + 40}, 5, 0},
		{"v11 follower", 11, 3, []fetchedPartition{{2, 0, 500, 0, b1}}, extent{500, 0, 100, 102, t0, t0 + 5}, 3, 0},
		{"v12 consumer (flexible)", 12, -1, []fetchedPartition{{2, 0, 1 << 40, 1 << 39, cat(b1, b2)}}, extent{1 << 40, 1 << 39, 100, 104, t0, t0 + 40}, 5, 0},
		{"v13 consumer (topic ids)", 13, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2)}}, extent{500, 7, 100, 104, t0, t0 + 40}, 5, 0},
		{"v16 follower (topic ids)", 16, 2, []fetchedPartition{{2, 0, 500, 7, b2}}, extent{500, 7, 103, 104, t0 + 10, t0 + 40}, 2, 0},
		{"v17 consumer", 17, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2)}}, extent{500, 7, 100, 104, t0, t0 + 40}, 5, 0},
		{"no batches: offsets, no extent", 13, -1, []fetchedPartition{{2, 0, 500, 7, nil}}, extent{500, 7, -1, -1, -1, -1}, 0, 0},
		{"partial trailing batch, header whole: the whole one only", 13, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2[:len(b2)-3])}}, extent{500, 7, 100, 102, t0, t0 + 5}, 3, 0},
		{"partial trailing batch, header cut", 13, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, b2[:30])}}, extent{500, 7, 100, 102, t0, t0 + 5}, 3, 0},
		{"only a partial batch: nothing delivered", 13, -1, []fetchedPartition{{2, 0, 500, 7, b2[:len(b2)-1]}}, extent{500, 7, -1, -1, -1, -1}, 0, 0},
		{"hostile batch length after a whole batch", 13, -1, []fetchedPartition{{2, 0, 500, 7, cat(b1, hostile)}}, extent{500, 7, 100, 102, t0, t0 + 5}, 3, 1},
		{"hostile batch length first", 13, -1, []fetchedPartition{{2, 0, 500, 7, hostile}}, extent{500, 7, -1, -1, -1, -1}, 0, 1},
		{"error: nothing", 13, -1, []fetchedPartition{{2, 1, 500, 7, nil}}, none, 0, 0},
		{"error with batches (hostile): nothing", 13, -1, []fetchedPartition{{2, 6, 500, 7, b1}}, none, 3, 0},
		{"negative log start offset", 13, -1, []fetchedPartition{{2, 0, 500, -1, b1}}, extent{500, -1, 100, 102, t0, t0 + 5}, 3, 0},
		// Each answer's values belong to its error code: a second
		// answer with an error leaves no high watermark of the first.
		{"answered twice, then with an error", 13, -1, []fetchedPartition{{2, 0, 500, 7, b1}, {2, 6, -1, -1, nil}}, none, 0, 0},
		{"answered twice, then with batches", 13, -1, []fetchedPartition{{2, 0, 500, 7, b1}, {2, 0, 600, 8, b2}}, extent{600, 8, 103, 104, t0 + 10, t0 + 40}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := [16]byte{4, 2}
			c := newConversation(40220)
			c.handshake()
			c.send(true, requestFrame(fetchRequest("orders", id, 2, 100, tt.replica), tt.version, 1, "c"), 1400, time.Millisecond)
			c.send(false, responseFrame(fetchResponse("orders", id, tt.answers...), tt.version, 1), 1400, time.Millisecond)
			got, st := run(c.segs)
			if len(got) != 1 || !got[0].Answered || len(got[0].Partitions) != 1 || st.DecodeErrors != 0 {
				t.Fatalf("got %+v, stats %+v", got, st)
			}
			p := &got[0].Partitions[0]
			if e := extentOf(p); e != tt.want {
				t.Errorf("extent %+v, want %+v", e, tt.want)
			}
			if p.Records != tt.records || st.BatchErrors != tt.batchErrors {
				t.Errorf("%d records, %d batch errors; want %d, %d", p.Records, st.BatchErrors, tt.records, tt.batchErrors)
			}
			if p.CommittedOffset != nil {
				t.Errorf("committed offset on a fetch")
			}
		})
	}
}

// TestFetchExtentAllocations: reading a fetch response's offsets and
// times costs no allocation per partition beyond the decoder's slab.
func TestFetchExtentAllocations(t *testing.T) {
	id := [16]byte{7}
	b := batchAt(1000, 1, 2, "a", "b")
	parts := make([]fetchedPartition, 50)
	for i := range parts {
		parts[i] = fetchedPartition{int32(i), 0, 5000, 10, b}
	}
	resp := fetchResponse("orders", id, parts...)
	req := fetchRequest("orders", id, 0, 1000, -1)
	for i := int32(1); i < 50; i++ {
		tp := kmsg.NewFetchRequestTopicPartition()
		tp.Partition = i
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, tp)
	}
	cfg := DefaultConfig()
	cfg.ProduceIDsOnly = true
	d := NewDecoder(cfg, &records.Decoder{}, nil, func(*event.Request) {})
	hdr, reqBody, err := parseRequestHeader(requestFrame(req, 13, 1, "c")[4:])
	if err != nil {
		t.Fatal(err)
	}
	respBody := responseFrame(resp, 13, 1)[8:]
	p := &pending{header: hdr}
	allocs := testing.AllocsPerRun(50, func() {
		p.ev = &event.Request{Partitions: make([]event.Partition, 0, 50)}
		if !d.decodeFetchRequest(p, reqBody) || !d.decodeResponseBody(p, respBody) {
			t.Fatal("not decoded")
		}
	})
	// Before the response's offsets and times were read, 6: the event,
	// its partitions, two 64-value slab chunks (the 50 fetch offsets,
	// the 50 high watermarks) and two more. The 250 values added (log
	// start offset, first and last offsets and timestamps of 50
	// partitions) are 4 chunks more: nothing per partition.
	if allocs > 10 {
		t.Errorf("%.1f allocations per fetch of 50 partitions", allocs)
	}
}

// roundTrip decodes one request and its response, and returns the event.
func roundTrip(t *testing.T, req kmsg.Request, resp kmsg.Response, version int16) *event.Request {
	t.Helper()
	c := newConversation(40230)
	c.handshake()
	c.send(true, requestFrame(req, version, 9, "consumer-1"), 1400, time.Millisecond)
	if resp != nil {
		c.send(false, responseFrame(resp, version, 9), 1400, time.Millisecond)
	}
	got, st := run(c.segs)
	if len(got) != 1 || got[0].Answered != (resp != nil) || st.DecodeErrors != 0 {
		t.Fatalf("got %+v, stats %+v", got, st)
	}
	return got[0]
}

// TestOffsetCommit: every OffsetCommit version kmsg knows gives each
// partition it commits with its offset, the topic by name (by id from
// v10), and the response's error per partition; a partition only the
// response names is not added.
func TestOffsetCommit(t *testing.T) {
	ordersID, auditID := [16]byte{1}, [16]byte{2}
	type committed struct {
		topic     string
		id        [16]byte
		partition int32
		offset    int64
		errCode   int16
	}
	commits := []committed{{"orders", ordersID, 0, 100, 0}, {"orders", ordersID, 1, 0, 22}, {"audit", auditID, 5, 1 << 40, 0}}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = "billing", "m-1", 4
	resp := kmsg.NewPtrOffsetCommitResponse()
	for _, c := range commits {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != c.topic {
			req.Topics = append(req.Topics, kmsg.OffsetCommitRequestTopic{Topic: c.topic, TopicID: c.id})
			resp.Topics = append(resp.Topics, kmsg.OffsetCommitResponseTopic{Topic: c.topic, TopicID: c.id})
		}
		tp := kmsg.NewOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset = c.partition, c.offset
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, tp)
		resp.Topics[len(resp.Topics)-1].Partitions = append(resp.Topics[len(resp.Topics)-1].Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: c.partition, ErrorCode: c.errCode})
	}
	resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: 9, ErrorCode: 3})
	for version := int16(0); version <= req.MaxVersion(); version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			r := roundTrip(t, req, resp, version)
			if len(r.Partitions) != len(commits) {
				t.Fatalf("partitions %+v, want %d", r.Partitions, len(commits))
			}
			for i, c := range commits {
				p := &r.Partitions[i]
				topic, id := c.topic, ""
				if version >= 10 {
					topic, id = "", event.TopicIDString(c.id) // no Metadata response named the ids
				}
				if p.Topic != topic || p.TopicID != id || p.Partition != c.partition {
					t.Errorf("partition %d: %q (%q) %d, want %q (%q) %d", i, p.Topic, p.TopicID, p.Partition, topic, id, c.partition)
				}
				if p.CommittedOffset == nil || *p.CommittedOffset != c.offset || p.ErrorCode != c.errCode {
					t.Errorf("%s-%d: committed %v, error %d; want %d, %d", c.topic, c.partition, p.CommittedOffset, p.ErrorCode, c.offset, c.errCode)
				}
				if p.FetchOffset != nil || p.HighWatermark != nil || p.FirstOffset != nil {
					t.Errorf("%s-%d: fetch fields on a commit: %+v", c.topic, c.partition, p)
				}
			}
			if r.ErrorCode != nil {
				t.Errorf("top-level error %d: OffsetCommit has none", *r.ErrorCode)
			}
		})
	}
	t.Run("unanswered", func(t *testing.T) {
		r := roundTrip(t, req, nil, 8)
		if len(r.Partitions) != 3 || r.Partitions[2].CommittedOffset == nil || *r.Partitions[2].CommittedOffset != 1<<40 {
			t.Errorf("partitions %+v", r.Partitions)
		}
	})
}

// TestGroupResults: what JoinGroup (every version) and
// ConsumerGroupHeartbeat responses say of the member lands in
// GroupResult; an error leaves no generation or epoch.
func TestGroupResults(t *testing.T) {
	str := func(s string) *string { return &s }
	joinResp := func(errCode int16, generation int32, member, leader string, protocol *string, members int) *kmsg.JoinGroupResponse {
		r := kmsg.NewPtrJoinGroupResponse()
		r.ErrorCode, r.Generation, r.MemberID, r.LeaderID, r.Protocol, r.ProtocolType = errCode, generation, member, leader, protocol, str("consumer")
		for i := range members {
			r.Members = append(r.Members, kmsg.JoinGroupResponseMember{MemberID: fmt.Sprintf("m-%d", i), ProtocolMetadata: []byte{0, 1}})
		}
		return r
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "billing", "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}

	heartbeatResp := func(errCode int16, member *string, epoch int32, assigned ...[]int32) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		r.ErrorCode, r.MemberID, r.MemberEpoch, r.HeartbeatIntervalMillis = errCode, member, epoch, 5000
		if assigned != nil {
			r.Assignment = &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
			for i, parts := range assigned {
				r.Assignment.Topics = append(r.Assignment.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: [16]byte{byte(i + 1)}, Partitions: parts})
			}
		}
		return r
	}
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.MemberEpoch = "orders-848", "m-848", 3

	type exchangeCase struct {
		name    string
		req     kmsg.Request
		resp    kmsg.Response
		version int16
		want    event.GroupResult
		errCode int16
	}
	var tests []exchangeCase
	for version := int16(0); version <= join.MaxVersion(); version++ {
		tests = append(tests,
			exchangeCase{fmt.Sprintf("JoinGroup v%d leader", version), join, joinResp(0, 7, "m-0", "m-0", str("range"), 3), version,
				event.GroupResult{Generation: 7, MemberID: "m-0", Leader: "m-0", Protocol: "range", Members: 3}, 0},
			exchangeCase{fmt.Sprintf("JoinGroup v%d follower", version), join, joinResp(0, 7, "m-2", "m-0", str("range"), 0), version,
				event.GroupResult{Generation: 7, MemberID: "m-2", Leader: "m-0", Protocol: "range"}, 0},
			exchangeCase{fmt.Sprintf("JoinGroup v%d rebalance in progress", version), join, joinResp(27, 7, "", "", str(""), 0), version,
				event.GroupResult{Generation: -1}, 27})
	}
	tests = append(tests,
		// MEMBER_ID_REQUIRED (v4+, KIP-394): the id to join again with.
		exchangeCase{"JoinGroup v5 member id required", join, joinResp(79, -1, "m-new", "", nil, 0), 5, event.GroupResult{Generation: -1, MemberID: "m-new"}, 79},
		exchangeCase{"JoinGroup v9 null protocol", join, joinResp(0, 8, "m-1", "m-1", nil, 1), 9, event.GroupResult{Generation: 8, MemberID: "m-1", Leader: "m-1", Members: 1}, 0},
	)
	for version := int16(0); version <= cgh.MaxVersion(); version++ {
		tests = append(tests,
			exchangeCase{fmt.Sprintf("ConsumerGroupHeartbeat v%d assignment", version), cgh, heartbeatResp(0, str("m-848"), 4, []int32{0, 1}, []int32{7}), version,
				event.GroupResult{Generation: 4, MemberID: "m-848", Assigned: 3}, 0},
			exchangeCase{fmt.Sprintf("ConsumerGroupHeartbeat v%d no new assignment", version), cgh, heartbeatResp(0, str("m-848"), 4), version,
				event.GroupResult{Generation: 4, MemberID: "m-848"}, 0},
			exchangeCase{fmt.Sprintf("ConsumerGroupHeartbeat v%d empty assignment", version), cgh, heartbeatResp(0, str("m-848"), 5, []int32{}), version,
				event.GroupResult{Generation: 5, MemberID: "m-848"}, 0},
			// FENCED_MEMBER_EPOCH: the member must join again.
			exchangeCase{fmt.Sprintf("ConsumerGroupHeartbeat v%d fenced", version), cgh, heartbeatResp(110, nil, 0), version,
				event.GroupResult{Generation: -1}, 110},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := roundTrip(t, tt.req, tt.resp, tt.version)
			if r.GroupResult != tt.want {
				t.Errorf("group result %+v, want %+v", r.GroupResult, tt.want)
			}
			if r.ErrorCode == nil || *r.ErrorCode != tt.errCode {
				t.Errorf("error code %v, want %d", r.ErrorCode, tt.errCode)
			}
		})
	}
	t.Run("unanswered", func(t *testing.T) {
		if r := roundTrip(t, join, nil, 9); r.GroupResult != (event.GroupResult{}) {
			t.Errorf("group result %+v without a response", r.GroupResult)
		}
	})
}

// TestGroupErrorCodes: SyncGroup, Heartbeat and LeaveGroup responses of
// every version give their error; LeaveGroup v3+ (KIP-345) answers the
// member that left on its own, under a top-level NONE.
func TestGroupErrorCodes(t *testing.T) {
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation, sync.ProtocolType, sync.Protocol = "billing", "m-1", 7, kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	heartbeat := kmsg.NewPtrHeartbeatRequest()
	heartbeat.Group, heartbeat.MemberID, heartbeat.Generation = "billing", "m-1", 7
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "billing", "m-1"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m-1"}}
	leaveResp := func(top int16, members ...int16) *kmsg.LeaveGroupResponse {
		r := kmsg.NewPtrLeaveGroupResponse()
		r.ErrorCode = top
		for i, code := range members {
			r.Members = append(r.Members, kmsg.LeaveGroupResponseMember{MemberID: fmt.Sprintf("m-%d", i+1), ErrorCode: code})
		}
		return r
	}
	type errorCase struct {
		name    string
		req     kmsg.Request
		resp    kmsg.Response
		version int16
		want    int16
	}
	var tests []errorCase
	for version := int16(0); version <= sync.MaxVersion(); version++ {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = 27 // REBALANCE_IN_PROGRESS
		tests = append(tests, errorCase{fmt.Sprintf("SyncGroup v%d", version), sync, resp, version, 27})
	}
	for version := int16(0); version <= heartbeat.MaxVersion(); version++ {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = 25 // UNKNOWN_MEMBER_ID
		tests = append(tests, errorCase{fmt.Sprintf("Heartbeat v%d", version), heartbeat, resp, version, 25})
	}
	for version := int16(0); version <= leave.MaxVersion(); version++ {
		tests = append(tests,
			errorCase{fmt.Sprintf("LeaveGroup v%d top-level", version), leave, leaveResp(16, 0), version, 16},
			errorCase{fmt.Sprintf("LeaveGroup v%d ok", version), leave, leaveResp(0, 0), version, 0})
		if version >= 3 {
			tests = append(tests,
				errorCase{fmt.Sprintf("LeaveGroup v%d member unknown", version), leave, leaveResp(0, 25), version, 25},
				errorCase{fmt.Sprintf("LeaveGroup v%d another member's error", version), leave, leaveResp(0, 0, 25), version, 0})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := roundTrip(t, tt.req, tt.resp, tt.version)
			if r.ErrorCode == nil || *r.ErrorCode != tt.want {
				t.Errorf("error code %v, want %d", r.ErrorCode, tt.want)
			}
			if r.Group.ID != "billing" || r.GroupResult != (event.GroupResult{}) {
				t.Errorf("group %+v, result %+v", r.Group, r.GroupResult)
			}
		})
	}
}
