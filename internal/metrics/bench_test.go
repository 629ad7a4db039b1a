package metrics

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/event"
)

// benchStream is a deterministic stream of requests as a busy broker
// sees them: produce requests naming 1–4 partitions of a few topics (some
// acks=0, so unanswered), fetch requests (some naming topics by id
// only, as Fetch v13+ does), a few group and metadata requests, a handful
// of client ids, and some error codes at both levels. Every string is a
// fresh copy, as the wire decoder hands them over, so nothing is found by
// pointer equality that would not be in the agent.
func benchStream(n int) []*event.Request {
	rng := rand.New(rand.NewPCG(1, 2))
	topics := []string{"orders", "payments", "clicks", "inventory", "audit-log", "user-events"}
	ids := make([]string, len(topics))
	for i := range ids {
		ids[i] = fmt.Sprintf("q0VD8QdVQPm1k3kZ3qKn%02d", i)
	}
	clients := []string{"order-service", "payment-service", "clickstream-producer", "inventory-sync",
		"analytics-consumer", "audit-writer", "console-consumer-4711", "rdkafka"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	parts := func(fetch bool) []event.Partition {
		ps := make([]event.Partition, 1+rng.IntN(4))
		for i := range ps {
			t := rng.IntN(len(topics))
			p := event.Partition{Topic: strings.Clone(topics[t]), Partition: int32(rng.IntN(12)),
				Records: 1 + rng.IntN(50), Bytes: 100 + rng.IntN(16000)}
			if fetch && rng.IntN(3) == 0 {
				p.Topic, p.TopicID = "", strings.Clone(ids[t])
			}
			if rng.IntN(50) == 0 {
				p.ErrorCode = []int16{6, 7, 3}[rng.IntN(3)]
			}
			ps[i] = p
		}
		return ps
	}
	out := make([]*event.Request, n)
	for i := range out {
		r := &event.Request{Arrival: t0.Add(time.Duration(i) * time.Millisecond),
			ClientID: strings.Clone(clients[rng.IntN(len(clients))]), RequestBytes: 100 + rng.IntN(20000)}
		switch x := rng.IntN(10); {
		case x < 6:
			r.API, r.APIKey, r.Partitions = "Produce", 0, parts(false)
			if rng.IntN(10) == 0 {
				r.Acks = new(int16) // acks=0: no response
			}
		case x < 9:
			r.API, r.APIKey, r.Partitions = "Fetch", 1, parts(true)
		default:
			r.API, r.APIKey = []string{"Metadata", "Heartbeat", "OffsetCommit"}[i%3], []int16{3, 12, 8}[i%3]
			if rng.IntN(20) == 0 {
				code := int16(27)
				r.ErrorCode = &code
			}
		}
		if r.Acks == nil {
			lat := time.Duration(200+rng.IntN(50000)) * time.Microsecond
			r.End, r.Answered, r.LatencyMs = r.Arrival.Add(lat), true, float64(lat)/1e6
			r.ResponseBytes = 50 + rng.IntN(30000)
		}
		out[i] = r
	}
	return out
}

// BenchmarkRequest is the agent's per-request metrics cost: Set.Request
// over benchStream, by topic and by topic-partition (--partition-label).
func BenchmarkRequest(b *testing.B) {
	stream := benchStream(4096)
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"topic", Options{}},
		{"partition", Options{PartitionLabel: true}},
		{"partition-native", Options{PartitionLabel: true, NativeHistograms: true}},
		{"bounded", Options{PartitionLabel: true, TopTopics: 3, TopClients: 3, TopPartitions: 10}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := New(prometheus.NewRegistry(), bc.opts)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range stream { // warm: every series exists
				s.Request(r)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Request(stream[i%len(stream)])
				i++
			}
		})
	}
}
