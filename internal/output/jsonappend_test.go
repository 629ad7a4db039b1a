package output

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// requestJSONCases are requests whose hand-written encoding must equal
// encoding/json's, byte for byte.
func requestJSONCases() map[string]*event.Request {
	t0 := time.Date(2026, 11, 22, 4, 5, 6, 123456789, time.UTC)
	ec, acks := int16(-1), int16(0)
	replica, zero, off, neg := int32(2), int64(0), int64(1)<<40, int64(-1)
	odd := "quote\" back\\slash <&> \x1b[31m\n\t \xff\xfe été \u2028 \x7f"
	return map[string]*event.Request{
		"zero": {},
		"typical produce": {Arrival: t0, End: t0.Add(1500 * time.Microsecond), LatencyMs: 1.5, QueuedMs: 0, BrokerMs: 1.25, ResponseMs: 0.003,
			Client: "127.0.0.1:53210", Broker: "127.0.0.1:9092", API: "Produce", APIKey: 0, APIVersion: 13, CorrelationID: 42,
			ClientID: "producer-1", RequestBytes: 16198, ResponseBytes: 80, Acks: &acks, Answered: true,
			Partitions: []event.Partition{{Topic: "orders", TopicID: "AAAAAAAAAAAAAAAAAAAAAA", Partition: 3, Records: 200, Bytes: 16000,
				MessageIDs: []string{"orders-1", "orders-2"}}, {Topic: "", Partition: -1}}},
		"unanswered, error, odd strings": {Arrival: t0.In(time.FixedZone("x", 5*3600+30*60)), API: "unknown(99)", APIKey: 99,
			Client: odd, ClientID: odd, ErrorCode: &ec, Partial: true,
			Partitions: []event.Partition{{Topic: odd, MessageIDs: []string{odd, ""}, ErrorCode: 6}}},
		"TCP trouble":                      {Arrival: t0, Acks: &acks, Retransmits: 3, ResponseRetransmits: 1, ZeroWindows: 2},
		"follower fetch":                   {Arrival: t0, API: "Fetch", APIKey: 1, ReplicaID: &replica, Partitions: []event.Partition{{Topic: "t", FetchOffset: &zero}, {Topic: "t", Partition: 1, FetchOffset: &off}, {Topic: "u"}}},
		"produce offsets":                  {Arrival: t0, Acks: &ec, Partitions: []event.Partition{{Topic: "t", Records: 2, BaseOffset: &off}, {Topic: "t", Partition: 1, BaseOffset: &zero}}},
		"fetch high watermarks":            {Arrival: t0, API: "Fetch", APIKey: 1, Partitions: []event.Partition{{Topic: "t", FetchOffset: &zero, HighWatermark: &off}, {Topic: "t", Partition: 1, HighWatermark: &zero}}},
		"empty partition list":             {Arrival: t0, Partitions: []event.Partition{}},
		"empty id list":                    {Arrival: t0, Partitions: []event.Partition{{Topic: "t", MessageIDs: []string{}}}},
		"floats":                           {Arrival: t0, LatencyMs: 1e-7, QueuedMs: 123456789012345678901234.0, BrokerMs: -0.5, ResponseMs: 1e21},
		"whole-second time":                {Arrival: t0.Truncate(time.Second), End: t0.Truncate(time.Second).Add(time.Millisecond)},
		"local time":                       {Arrival: t0.Local()},
		"far future (encoding/json fails)": {Arrival: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"batch stats (encoding/json)":      {Arrival: t0, Partitions: []event.Partition{{Topic: "t", BatchStats: &event.BatchStats{Batches: 2, Magic: 2}}}},
		"NaN (encoding/json fails)":        {Arrival: t0, LatencyMs: math.NaN()},
		"SASL":                             {Arrival: t0, SASLMechanism: "SCRAM-SHA-512", Principal: "al,i\"ce<"},
		"client details": {Arrival: t0, SoftwareName: "apache-kafka-java", SoftwareVersion: odd,
			Producer:   event.Producer{Batches: 3, Magic: 2, Codec: "zstd", ProducerID: 4000, Transactional: true, TransactionalID: odd},
			Fetch:      event.FetchParams{MaxWaitMs: 500, MinBytes: 1, MaxBytes: 52428800, IsolationLevel: 1, SessionID: 7, SessionEpoch: -1},
			Group:      event.Group{ID: odd, MemberID: "m-1", InstanceID: "i", Generation: 4, ProtocolType: "consumer", SessionTimeoutMs: 45000, RebalanceTimeoutMs: 300000},
			AllTopics:  true,
			Partitions: []event.Partition{{Topic: "t", Batches: 2}}},
		"zero-valued details": {Arrival: t0, Producer: event.Producer{ProducerID: -1}, Fetch: event.FetchParams{SessionEpoch: -1}, Group: event.Group{Generation: -1}},
		"consumer fetch": {Arrival: t0, API: "Fetch", APIKey: 1, Partitions: []event.Partition{
			{Topic: "t", FetchOffset: &off, HighWatermark: &off, FirstOffset: &zero, LastOffset: &off, FirstTimestamp: &neg, MaxTimestamp: &off, LogStartOffset: &zero},
			{Topic: "t", Partition: 1, LogStartOffset: &off}, {Topic: "t", Partition: 2, FirstOffset: &off}}},
		"offset commit": {Arrival: t0, API: "OffsetCommit", APIKey: 8, Group: event.Group{ID: "g", Generation: 3},
			Partitions: []event.Partition{{Topic: "t", CommittedOffset: &zero, ErrorCode: 22}, {Topic: "u", TopicID: "AAAAAAAAAAAAAAAAAAAAAA", CommittedOffset: &off}}},
		"group results": {Arrival: t0, API: "JoinGroup", APIKey: 11, Group: event.Group{ID: "g", Generation: -1},
			GroupResult: event.GroupResult{Generation: 7, MemberID: odd, Leader: "m-0", Protocol: "range", Members: 3, Assigned: -2}, AllTopics: true},
		"zero-valued group result but the generation": {Arrival: t0, GroupResult: event.GroupResult{Generation: -1}},
		"clock step": {Arrival: t0, End: t0.Add(-10 * time.Second), LatencyMs: -10000, Answered: true, ClockStep: true},
	}
}

func TestAppendRequestJSON(t *testing.T) {
	for name, r := range requestJSONCases() {
		t.Run(name, func(t *testing.T) { checkRequestJSON(t, r) })
	}
}

func checkRequestJSON(t *testing.T, r *event.Request) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, gerr := AppendRequestJSON([]byte("prefix"), r)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("error %v, encoding/json's %v", gerr, werr)
	}
	if werr != nil {
		if string(got) != "prefix" {
			t.Errorf("on error the buffer is %q, want it as given", got)
		}
		return
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Errorf("got  %s\nwant prefix%s", got, want)
	}
}

// FuzzAppendRequestJSON holds the encoder to encoding/json's output for
// any strings, numbers and times.
func FuzzAppendRequestJSON(f *testing.F) {
	f.Add(int64(1763784306123456789), int64(1500000), 1.5, "127.0.0.1:1", "client-1", "orders", "orders-1", int32(3), true, 0)
	f.Add(int64(0), int64(-1), 1e-7, "\x00\xff", "<&>", "\u2028", "", int32(-1), false, 3600*5+1800)
	f.Fuzz(func(t *testing.T, arrivalNs, durNs int64, latency float64, client, clientID, topic, id string, partition int32, answered bool, zoneSec int) {
		loc := time.FixedZone("z", zoneSec%(48*3600))
		r := &event.Request{Arrival: time.Unix(0, arrivalNs).In(loc), LatencyMs: latency, Client: client, ClientID: clientID,
			Answered: answered, Partitions: []event.Partition{{Topic: topic, Partition: partition, MessageIDs: []string{id}}}}
		r.Retransmits, r.ResponseRetransmits, r.ZeroWindows = int(partition%5), int(partition%3), int(partition%2)
		if partition%4 == 1 {
			r.ResponseAckWaitMs = latency
			r.SASLMechanism, r.Principal = topic, id
		}
		if partition%3 == 2 {
			r.SoftwareName, r.SoftwareVersion = clientID, id
			r.Producer = event.Producer{Batches: int(partition), Codec: topic, ProducerID: durNs, TransactionalID: id, Transactional: answered}
			r.Fetch = event.FetchParams{MaxWaitMs: partition, MinBytes: -partition, SessionEpoch: int32(zoneSec)}
			r.Group = event.Group{ID: topic, MemberID: id, InstanceID: clientID, Generation: partition, RebalanceTimeoutMs: int32(zoneSec)}
			r.AllTopics = answered
			r.Partitions[0].Batches = int(partition)
		}
		if partition%5 == 3 {
			v := durNs
			p := &r.Partitions[0]
			p.FirstOffset, p.LastOffset, p.FirstTimestamp, p.MaxTimestamp, p.LogStartOffset, p.CommittedOffset = &v, &arrivalNs, &durNs, &v, &arrivalNs, &durNs
			r.GroupResult = event.GroupResult{Generation: partition, MemberID: id, Leader: clientID, Protocol: topic, Members: int(durNs % 1000), Assigned: zoneSec}
		}
		if durNs >= 0 {
			r.End = r.Arrival.Add(time.Duration(durNs))
		}
		checkRequestJSON(t, r)
	})
}
