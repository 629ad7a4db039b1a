package wire

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSlowMessageIDs: with MessageIDsMinLatency, a produce request's
// message ids are read only when it is at least that slow or gets no
// response, across two partitions in event order; record counts are
// there for every request; the held copies are all given back.
func TestSlowMessageIDs(t *testing.T) {
	twoParts := func(corr int32) *kmsg.ProduceRequest {
		req := produceRequest("orders", 0, -1, "a-1", "a-2")
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = 1
		p.Records = append(makeBatch("b-1"), makeBatch("b-2", "b-3")...)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
		return req
	}
	c := newConversation(40000)
	c.handshake()
	// corr 1 answered after 5 ms, corr 2 after 300 ms, corr 3 never.
	answer := func(corr int32, wait time.Duration) {
		c.send(true, requestFrame(twoParts(corr), 7, corr, "producer-1"), 1000, 0)
		c.now = c.now.Add(wait)
		resp := produceResponse("orders", 0)
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = 1
		resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, rp)
		c.send(false, responseFrame(resp, 7, corr), 1000, time.Millisecond)
	}
	answer(1, 5*time.Millisecond)
	answer(2, 300*time.Millisecond)
	c.send(true, requestFrame(twoParts(3), 7, 3, "producer-1"), 1000, 0)

	for _, tc := range []struct {
		name    string
		min     time.Duration
		wantIDs map[int32]bool // correlation id: ids expected
	}{
		{"off: every request", 0, map[int32]bool{1: true, 2: true, 3: true}},
		{"100ms: slow and unanswered", 100 * time.Millisecond, map[int32]bool{1: false, 2: true, 3: true}},
		{"1s: unanswered only", time.Second, map[int32]bool{1: false, 2: false, 3: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MessageIDsMinLatency = tc.min
			got, d := decodeConfig(c.segs, cfg)
			if len(got) != 3 {
				t.Fatalf("got %d requests, want 3", len(got))
			}
			for _, r := range got {
				if len(r.Partitions) != 2 || r.Partitions[0].Records != 2 || r.Partitions[1].Records != 3 {
					t.Fatalf("corr %d: partitions %+v, want records 2 and 3", r.CorrelationID, r.Partitions)
				}
				var ids0, ids1 []string
				if tc.wantIDs[r.CorrelationID] {
					ids0, ids1 = []string{"a-1", "a-2"}, []string{"b-1", "b-2", "b-3"}
				}
				if !slices.Equal(r.Partitions[0].MessageIDs, ids0) || !slices.Equal(r.Partitions[1].MessageIDs, ids1) {
					t.Errorf("corr %d (%.0f ms): ids %v %v, want %v %v", r.CorrelationID, r.LatencyMs,
						r.Partitions[0].MessageIDs, r.Partitions[1].MessageIDs, ids0, ids1)
				}
			}
			if d.heldBytes != 0 || d.Stats().IDsNotHeld != 0 {
				t.Errorf("held bytes %d after close, not held %d", d.heldBytes, d.Stats().IDsNotHeld)
			}
		})
	}
}
