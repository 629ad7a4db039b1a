package wire

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchRequest is a Fetch request for one partition of topic from
// fetchOffset, sent by replica (-1: a consumer) in both the places the
// versions keep it; the encoder writes the one its version has.
func fetchRequest(topic string, id [16]byte, partition int32, fetchOffset int64, replica int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = replica
	req.ReplicaState.ID = replica
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = topic, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset = partition, fetchOffset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// TestFetchReplicaAndOffsets: a Fetch request's replica id comes from the
// body before v15 and from the ReplicaState tag from v15 on (KIP-903),
// -1 for a consumer; each partition carries its fetch offset, 0 included.
func TestFetchReplicaAndOffsets(t *testing.T) {
	id := [16]byte{1, 2, 3}
	tests := []struct {
		name    string
		version int16
		replica int32
		offset  int64
	}{
		{"v4 follower", 4, 2, 1234},
		{"v11 consumer", 11, -1, 77},
		{"v12 follower (flexible)", 12, 3, 1 << 40},
		{"v13 follower (topic ids)", 13, 2, 5},
		{"v14 follower", 14, 0, 9},
		{"v15 follower (ReplicaState)", 15, 2, 480},
		{"v15 consumer (no ReplicaState)", 15, -1, 480},
		{"v17 follower", 17, 1, 0},
		{"v18 follower", 18, 4, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConversation(40200)
			c.handshake()
			c.send(true, requestFrame(fetchRequest("orders", id, 3, tt.offset, tt.replica), tt.version, 5, "broker-2-fetcher-0"), 1000, time.Millisecond)
			got, st := run(c.segs)
			if len(got) != 1 || st.DecodeErrors != 0 {
				t.Fatalf("got %d requests, stats %+v", len(got), st)
			}
			r := got[0]
			if r.ReplicaID == nil || *r.ReplicaID != tt.replica {
				t.Errorf("replica id %v, want %d", r.ReplicaID, tt.replica)
			}
			if len(r.Partitions) != 1 || r.Partitions[0].Partition != 3 {
				t.Fatalf("partitions %+v", r.Partitions)
			}
			if fo := r.Partitions[0].FetchOffset; fo == nil || *fo != tt.offset {
				t.Errorf("fetch offset %v, want %d", fo, tt.offset)
			}
			if r.Acks != nil || r.Partitions[0].BaseOffset != nil {
				t.Errorf("produce fields on a fetch: %+v", r)
			}
		})
	}
}

// TestFetchOffsetsPerPartition: every partition of a request keeps its
// own offset, and a partition only the response names (an incremental
// session) has none.
func TestFetchOffsetsPerPartition(t *testing.T) {
	req := fetchRequest("a", [16]byte{}, 0, 10, 2)
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset = 1, 20
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	t2 := kmsg.NewFetchRequestTopic()
	t2.Topic = "b"
	p.Partition, p.FetchOffset = 0, 30
	t2.Partitions = append(t2.Partitions, p)
	req.Topics = append(req.Topics, t2)
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "c"
	rt.Partitions = append(rt.Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)

	c := newConversation(40201)
	c.handshake()
	c.send(true, requestFrame(req, 11, 1, "broker-2-fetcher-0"), 1000, time.Millisecond)
	c.send(false, responseFrame(resp, 11, 1), 1000, time.Millisecond)
	got, _ := run(c.segs)
	if len(got) != 1 || len(got[0].Partitions) != 4 {
		t.Fatalf("got %+v", got)
	}
	want := []struct {
		topic  string
		part   int32
		offset int64 // -1: none
	}{{"a", 0, 10}, {"a", 1, 20}, {"b", 0, 30}, {"c", 0, -1}}
	for i, w := range want {
		p := got[0].Partitions[i]
		if p.Topic != w.topic || p.Partition != w.part {
			t.Errorf("partition %d: %s-%d, want %s-%d", i, p.Topic, p.Partition, w.topic, w.part)
		}
		switch {
		case w.offset < 0 && p.FetchOffset != nil:
			t.Errorf("%s-%d: fetch offset %d, want none (not in the request)", p.Topic, p.Partition, *p.FetchOffset)
		case w.offset >= 0 && (p.FetchOffset == nil || *p.FetchOffset != w.offset):
			t.Errorf("%s-%d: fetch offset %v, want %d", p.Topic, p.Partition, p.FetchOffset, w.offset)
		}
	}
}

// TestProduceBaseOffset: an appended partition's base offset comes from
// the response (0 included); a failed one, or one the response does not
// name, has none.
func TestProduceBaseOffset(t *testing.T) {
	tests := []struct {
		name     string
		version  int16
		base     int64
		errCode  int16
		answered bool // the response names the partition
		want     int64
	}{
		{"v3", 3, 4711, 0, true, 4711},
		{"v9 (flexible)", 9, 1 << 35, 0, true, 1 << 35},
		{"v12 offset 0", 12, 0, 0, true, 0},
		{"error", 9, -1, 6, true, -1},
		{"error with an offset", 9, 100, 7, true, -1},
		{"negative offset", 9, -5, 0, true, -1},
		{"not in the response", 9, 0, 0, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := produceResponse("orders", 3)
			resp.Topics[0].Partitions[0].BaseOffset = tt.base
			resp.Topics[0].Partitions[0].ErrorCode = tt.errCode
			if !tt.answered {
				resp.Topics[0].Partitions[0].Partition = 4
			}
			c := newConversation(40202)
			c.handshake()
			c.send(true, requestFrame(produceRequest("orders", 3, -1, "m-1", "m-2"), tt.version, 7, "p"), 1000, time.Millisecond)
			c.send(false, responseFrame(resp, tt.version, 7), 1000, time.Millisecond)
			got, st := run(c.segs)
			if len(got) != 1 || !got[0].Answered || st.DecodeErrors != 0 {
				t.Fatalf("got %+v, stats %+v", got, st)
			}
			p := got[0].Partitions[0]
			switch {
			case tt.want < 0 && p.BaseOffset != nil:
				t.Errorf("base offset %d, want none", *p.BaseOffset)
			case tt.want >= 0 && (p.BaseOffset == nil || *p.BaseOffset != tt.want):
				t.Errorf("base offset %v, want %d", p.BaseOffset, tt.want)
			}
			if got[0].ReplicaID != nil || p.FetchOffset != nil {
				t.Errorf("fetch fields on a produce request: %+v", got[0])
			}
		})
	}
}

// TestFetchHighWatermark: each partition the fetch response answered
// without error carries the leader's high watermark (0 included), those
// only the response named too; an error or a negative watermark leaves
// none.
func TestFetchHighWatermark(t *testing.T) {
	tests := []struct {
		name    string
		version int16
		hw      int64
		errCode int16
		want    int64 // -1: none
	}{
		{"v4", 4, 5000, 0, 5000},
		{"v12 (flexible)", 12, 1 << 40, 0, 1 << 40},
		{"v13 zero", 13, 0, 0, 0},
		{"error", 11, 5000, 1, -1},
		{"negative", 11, -1, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := [16]byte{9}
			req := fetchRequest("orders", id, 2, 100, -1)
			resp := kmsg.NewPtrFetchResponse()
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = "orders", id
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.ErrorCode = 2, tt.hw, tt.errCode
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			c := newConversation(40210)
			c.handshake()
			c.send(true, requestFrame(req, tt.version, 1, "consumer"), 1000, time.Millisecond)
			c.send(false, responseFrame(resp, tt.version, 1), 1000, time.Millisecond)
			got, st := run(c.segs)
			if len(got) != 1 || len(got[0].Partitions) != 1 || st.DecodeErrors != 0 {
				t.Fatalf("got %+v, stats %+v", got, st)
			}
			hw := got[0].Partitions[0].HighWatermark
			switch {
			case tt.want < 0 && hw != nil:
				t.Errorf("high watermark %d, want none", *hw)
			case tt.want >= 0 && (hw == nil || *hw != tt.want):
				t.Errorf("high watermark %v, want %d", hw, tt.want)
			}
		})
	}
}
