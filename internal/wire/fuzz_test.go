package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// FuzzFrames feeds arbitrary bytes as the two directions of a connection,
// cut into segments at fuzzer-chosen sizes, with the default frame limit
// or (odd sizes) one of 1024 bytes, so that frames over it are common.
// The decoder must not panic, everything it emits must be internally
// consistent, and the frames in progress must have given back their
// share of the budget once it is closed.
func FuzzFrames(f *testing.F) {
	f.Add(requestFrame(produceRequest("orders", 1, -1, "m-1", "m-2"), 9, 7, "producer-1"),
		responseFrame(produceResponse("orders", 1), 9, 7), uint8(13))
	f.Add(requestFrame(produceRequest("t", 0, 1, "a"), 3, 1, "c"), responseFrame(produceResponse("t", 0), 3, 1), uint8(200))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, []byte{0, 0, 0, 4, 0, 0, 0, 1}, uint8(3))
	// A follower's Fetch (ReplicaState tag, v15+) and a produce response
	// with a base offset: the paths that fill replica ids and offsets.
	f.Add(requestFrame(fetchRequest("orders", [16]byte{9}, 2, 480, 2), 15, 4, "broker-2-fetcher-0"),
		responseFrame(kmsg.NewPtrFetchResponse(), 15, 4), uint8(40))
	based := produceResponse("orders", 1)
	based.Topics[0].Partitions[0].BaseOffset = 1 << 33
	f.Add(requestFrame(produceRequest("orders", 1, -1, "m-1"), 9, 8, "p"), responseFrame(based, 9, 8), uint8(90))
	// A request over a 1024-byte limit (odd segment size), answered.
	f.Add(requestFrame(produceRequest("t", 0, 1, manyIDs(100)...), 9, 3, "c"), responseFrame(produceResponse("t", 0), 9, 3), uint8(201))
	// The consumer side: a fetch answered with two batches, the second
	// cut short; an OffsetCommit; a JoinGroup and a
	// ConsumerGroupHeartbeat answered.
	b2 := batchAt(3, 20, 30, "c", "d")
	fetched := fetchResponse("orders", [16]byte{9}, fetchedPartition{2, 0, 500, 1, append(batchAt(1, 10, 11, "a", "b"), b2[:len(b2)-4]...)})
	f.Add(requestFrame(fetchRequest("orders", [16]byte{9}, 2, 1, -1), 13, 5, "consumer-1"), responseFrame(fetched, 13, 5), uint8(120))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Topics = "g", []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2, Offset: 3}}}}
	committed := kmsg.NewPtrOffsetCommitResponse()
	committed.Topics = []kmsg.OffsetCommitResponseTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 2, ErrorCode: 22}}}}
	f.Add(requestFrame(commit, 8, 6, "consumer-1"), responseFrame(committed, 8, 6), uint8(60))
	joined := kmsg.NewPtrJoinGroupResponse()
	joined.Generation, joined.MemberID, joined.LeaderID, joined.Members = 3, "m-1", "m-1", []kmsg.JoinGroupResponseMember{{MemberID: "m-1"}}
	f.Add(requestFrame(kmsg.NewPtrJoinGroupRequest(), 9, 7, "consumer-1"), responseFrame(joined, 9, 7), uint8(80))
	beat := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	beat.MemberEpoch, beat.Assignment = 4, &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{{Partitions: []int32{0, 1}}}}
	f.Add(requestFrame(kmsg.NewPtrConsumerGroupHeartbeatRequest(), 0, 8, "consumer-1"), responseFrame(beat, 0, 8), uint8(100))
	f.Fuzz(func(t *testing.T, req, resp []byte, mss uint8) {
		seg := int(mss)%1400 + 1
		c := newConversation(40100)
		c.handshake()
		c.send(true, req, seg, time.Millisecond)
		c.send(false, resp, seg, time.Millisecond)
		c.send(true, req, seg, time.Millisecond)
		cfg := DefaultConfig()
		if mss%2 == 1 {
			cfg.MaxFrameBytes, cfg.MaxKeepBytes = 1024, 1024
		}
		got, d := decodeConfig(c.segs, cfg)
		st := d.Stats()
		pooled := 0
		for _, b := range d.partial.pool {
			pooled += cap(b)
		}
		if d.partial.used != int64(pooled) || d.partial.used > d.partial.limit {
			t.Fatalf("%d bytes of the partial-frame budget still used after the close, %d of them pooled", d.partial.used, pooled)
		}
		if st.ClockStepped != 0 || st.Unfinished > st.Partial {
			t.Fatalf("counters: %+v", st)
		}
		for _, r := range got {
			if r.Answered && r.End.Before(r.Arrival) {
				t.Fatalf("end before arrival: %+v", r)
			}
			if !r.Answered && r.LatencyMs != 0 {
				t.Fatalf("unanswered with latency: %+v", r)
			}
			if r.ReplicaID != nil && r.APIKey != 1 {
				t.Fatalf("replica id on a %s request", r.API)
			}
			for _, p := range r.Partitions {
				if p.BaseOffset != nil && (r.APIKey != 0 || p.ErrorCode != 0 || *p.BaseOffset < 0) {
					t.Fatalf("base offset %d on a %s partition with error %d", *p.BaseOffset, r.API, p.ErrorCode)
				}
				if p.HighWatermark != nil && (r.APIKey != 1 || p.ErrorCode != 0 || *p.HighWatermark < 0) {
					t.Fatalf("high watermark %d on a %s partition with error %d", *p.HighWatermark, r.API, p.ErrorCode)
				}
				if p.FetchOffset != nil && r.APIKey != 1 {
					t.Fatalf("fetch offset on a %s request", r.API)
				}
				checkConsumerFields(t, r, &p)
			}
			if r.GroupResult != (event.GroupResult{}) && (!r.Answered || r.APIKey != 11 && r.APIKey != 68) {
				t.Fatalf("group result %+v on a %s request (answered %v)", r.GroupResult, r.API, r.Answered)
			}
		}
		if st.Requests < st.Responses {
			t.Fatalf("more responses than requests: %+v", st)
		}
		checkSkipped(t, c.segs, cfg, got, st)
		checkLent(t, c.segs, cfg, got, st)
	})
}

// checkLent decodes segs again with the events lent (Config.Recycle):
// each request as emitted equals the one given, the counters are the
// same. An event reused while still in flight, or emitted twice, would
// show as a request changed.
func checkLent(t *testing.T, segs []testSegment, cfg Config, given []*event.Request, st Stats) {
	t.Helper()
	cfg.Recycle = true
	var lent [][]byte
	d := decodeEach(segs, cfg, func(r *event.Request) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lent = append(lent, b)
	})
	if lst := d.Stats(); lst != st {
		t.Fatalf("counters with the events lent: %+v, given: %+v", lst, st)
	}
	if len(lent) != len(given) {
		t.Fatalf("%d requests with the events lent, %d given", len(lent), len(given))
	}
	for i := range given {
		want, err := json.Marshal(given[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(lent[i]) != string(want) {
			t.Fatalf("request %d lent:\n got %s\nwant %s", i, lent[i], want)
		}
	}
}

// checkSkipped decodes segs again skipping every extra field
// (Config.Skip): the same requests minus those fields, the same counters.
func checkSkipped(t *testing.T, segs []testSegment, cfg Config, full []*event.Request, st Stats) {
	t.Helper()
	cfg.Skip = AllExtras
	skipped, d := decodeConfig(segs, cfg)
	if sst := d.Stats(); sst != st {
		t.Fatalf("counters skipping the extras: %+v, decoding them: %+v", sst, st)
	}
	if len(skipped) != len(full) {
		t.Fatalf("%d requests skipping the extras, %d decoding them", len(skipped), len(full))
	}
	for i := range full {
		got, err := json.Marshal(skipped[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := withoutExtras(t, full[i], AllExtras); string(got) != want {
			t.Fatalf("request %d skipping the extras:\n got %s\nwant %s", i, got, want)
		}
	}
}

// checkConsumerFields holds a partition's consumer-side values to where
// they belong: a fetch response's offsets and times on a Fetch answered
// without error (offsets never negative, both timestamps or neither), a
// committed offset on an OffsetCommit.
func checkConsumerFields(t *testing.T, r *event.Request, p *event.Partition) {
	t.Helper()
	for _, v := range []*int64{p.LogStartOffset, p.FirstOffset, p.LastOffset, p.FirstTimestamp, p.MaxTimestamp} {
		if v != nil && (r.APIKey != 1 || p.ErrorCode != 0) {
			t.Fatalf("fetched offsets or times on a %s partition with error %d: %+v", r.API, p.ErrorCode, p)
		}
	}
	for _, v := range []*int64{p.LogStartOffset, p.FirstOffset, p.LastOffset} {
		if v != nil && *v < 0 {
			t.Fatalf("negative offset %d: %+v", *v, p)
		}
	}
	if (p.FirstTimestamp == nil) != (p.MaxTimestamp == nil) {
		t.Fatalf("one timestamp without the other: %+v", p)
	}
	if p.CommittedOffset != nil && r.APIKey != 8 {
		t.Fatalf("committed offset on a %s request", r.API)
	}
}
