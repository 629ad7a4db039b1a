package wire

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// withProducer rewrites a magic 2 batch's attributes and producer id, and
// fixes its CRC.
func withProducer(batch []byte, codec int16, transactional bool, producerID int64) []byte {
	b := append([]byte(nil), batch...)
	attrs := codec
	if transactional {
		attrs |= 0x10
	}
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint64(b[43:], uint64(producerID))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestClientDetails sends one connection's requests of each kind a client
// view reads, and checks what each event says of the client.
func TestClientDetails(t *testing.T) {
	str := func(s string) *string { return &s }
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = "apache-kafka-java", "3.9.1"

	produce := produceRequest("orders", 0, 1, "a", "b", "c")
	produce.TransactionID = str("tx-1")
	produce.Topics[0].Partitions[0].Records = append(withProducer(makeBatch("a", "b"), 0, true, 42), withProducer(makeBatch("c"), 0, true, 42)...)
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, makeBatch("d")
	produce.Topics[0].Partitions = append(produce.Topics[0].Partitions, p1)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes, fetch.IsolationLevel, fetch.SessionID, fetch.SessionEpoch = 800, 1024, 1<<20, 1, 9, 3

	allTopics := kmsg.NewPtrMetadataRequest()
	someTopics := kmsg.NewPtrMetadataRequest()
	someTopics.Topics = []kmsg.MetadataRequestTopic{{Topic: str("orders")}}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID, join.InstanceID, join.ProtocolType = "billing", "m-1", str("static-1"), "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 45000, 300000
	heartbeat := kmsg.NewPtrHeartbeatRequest()
	heartbeat.Group, heartbeat.MemberID, heartbeat.Generation = "billing", "m-1", 7
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = "billing", "m-1", 7
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.Members = "billing", []kmsg.LeaveGroupRequestMember{{MemberID: "m-1"}}
	offsetFetch := kmsg.NewPtrOffsetFetchRequest()
	offsetFetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "billing"}}
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = "orders-848", "m-848", 12, 60000

	type sent struct {
		req     kmsg.Request
		version int16
	}
	reqs := []sent{{apiVersions, 3}, {produce, 9}, {fetch, 11}, {allTopics, 1}, {someTopics, 9}, {kmsg.NewPtrMetadataRequest(), 0},
		{join, 5}, {heartbeat, 4}, {commit, 8}, {leave, 3}, {offsetFetch, 8}, {cgh, 0}}
	c := newConversation(40100)
	c.handshake()
	for i, s := range reqs {
		c.send(true, requestFrame(s.req, s.version, int32(i), "client-x"), 1400, time.Millisecond)
	}
	got, st := run(c.segs)
	if len(got) != len(reqs) {
		t.Fatalf("got %d requests, want %d (stats %+v)", len(got), len(reqs), st)
	}
	if st.DecodeErrors != 0 || st.BatchErrors != 0 {
		t.Errorf("stats %+v", st)
	}
	for i, r := range got {
		if r.SoftwareName != "apache-kafka-java" || r.SoftwareVersion != "3.9.1" {
			t.Errorf("request %d (%s): software %q %q, want the connection's", i, r.API, r.SoftwareName, r.SoftwareVersion)
		}
	}
	wantProducer := event.Producer{Batches: 3, Magic: 2, Codec: "none", ProducerID: 42, Transactional: true, TransactionalID: "tx-1"}
	if got[1].Producer != wantProducer {
		t.Errorf("producer %+v, want %+v", got[1].Producer, wantProducer)
	}
	if b := []int{got[1].Partitions[0].Batches, got[1].Partitions[1].Batches}; b[0] != 2 || b[1] != 1 {
		t.Errorf("batches per partition %v, want [2 1]", b)
	}
	if want := (event.FetchParams{MaxWaitMs: 800, MinBytes: 1024, MaxBytes: 1 << 20, IsolationLevel: 1, SessionID: 9, SessionEpoch: 3}); got[2].Fetch != want {
		t.Errorf("fetch %+v, want %+v", got[2].Fetch, want)
	}
	if !got[3].AllTopics || got[4].AllTopics || !got[5].AllTopics {
		t.Errorf("all topics: v1 null %v, v9 one topic %v, v0 empty %v; want true false true", got[3].AllTopics, got[4].AllTopics, got[5].AllTopics)
	}
	wantGroups := []event.Group{
		{ID: "billing", MemberID: "m-1", InstanceID: "static-1", Generation: -1, ProtocolType: "consumer", SessionTimeoutMs: 45000, RebalanceTimeoutMs: 300000},
		{ID: "billing", MemberID: "m-1", Generation: 7},
		{ID: "billing", MemberID: "m-1", Generation: 7},
		{ID: "billing", MemberID: "m-1", Generation: -1},
		{ID: "billing", Generation: -1},
		{ID: "orders-848", MemberID: "m-848", Generation: 12, RebalanceTimeoutMs: 60000},
	}
	for i, want := range wantGroups {
		if r := got[6+i]; r.Group != want {
			t.Errorf("%s: group %+v, want %+v", r.API, r.Group, want)
		}
	}
	for _, r := range got[:6] {
		if r.Group != (event.Group{}) {
			t.Errorf("%s: group %+v, want none", r.API, r.Group)
		}
	}
}

// TestSoftwareBoundedAndOld: an ApiVersions request before v3 announces
// nothing, and a hostile client's long software name is cut.
func TestSoftwareBoundedAndOld(t *testing.T) {
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'a'
	}
	v3 := kmsg.NewPtrApiVersionsRequest()
	v3.ClientSoftwareName, v3.ClientSoftwareVersion = string(long), "1"
	c := newConversation(40101)
	c.handshake()
	c.send(true, requestFrame(kmsg.NewPtrApiVersionsRequest(), 2, 1, "old"), 1400, time.Millisecond)
	c.send(true, requestFrame(v3, 3, 2, "new"), 1400, time.Millisecond)
	got, _ := run(c.segs)
	if len(got) != 2 {
		t.Fatalf("got %d requests", len(got))
	}
	if got[0].SoftwareName != "" {
		t.Errorf("v2 announced %q", got[0].SoftwareName)
	}
	if n := len(got[1].SoftwareName); n != maxClientString {
		t.Errorf("software name of %d bytes kept, want %d", n, maxClientString)
	}
}
