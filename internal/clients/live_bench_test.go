package clients

import (
	"fmt"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// agentMix is the request mix the agent meets under bench/agent.sh's
// fixed loads (kscope bench run: 8 franz-go producers sending one
// 900-byte message per produce request to 4 partitions, acks=all and
// idempotent; a group of 2 consumers), by requests per 100: 10 000
// messages/s came with about 12 400 requests/s there. Each connection
// begins with ApiVersions (its software), which Add holds until the
// connection's next request.
var agentMix = []struct {
	what string
	per  int
}{{"produce", 78}, {"fetch", 18}, {"heartbeat", 2}, {"offset-commit", 1}, {"metadata", 1}}

// mixRequests returns n requests of agentMix, 100 µs apart (10 000
// requests/s), spread over the producers' and consumers' connections,
// each connection's first request an ApiVersions.
func mixRequests(n int) []event.Request {
	const producers, consumers = 8, 2
	var kinds []string
	for _, m := range agentMix {
		for range m.per {
			kinds = append(kinds, m.what)
		}
	}
	out := make([]event.Request, 0, n+producers+consumers)
	for i := range producers + consumers {
		out = append(out, mixAPIVersions(i))
	}
	for i := 0; len(out) < cap(out); i++ {
		r := mixRequest(kinds[(i*37)%len(kinds)], i)
		out = append(out, r)
	}
	for i := range out {
		out[i].Arrival = t0.Add(time.Duration(i) * 100 * time.Microsecond)
		out[i].End = out[i].Arrival.Add(2 * time.Millisecond)
	}
	return out
}

func mixConn(i int) (addr, clientID string) {
	return fmt.Sprintf("127.0.0.1:%d", 40000+i), fmt.Sprintf("kscope-bench-%d", i)
}

func mixBase(conn int, key, version int16) event.Request {
	addr, id := mixConn(conn)
	return event.Request{Client: addr, Broker: "127.0.0.1:19096", APIKey: key, APIVersion: version, ClientID: id,
		RequestBytes: 120, ResponseBytes: 60, Answered: true, SoftwareName: "kgo", SoftwareVersion: "v1.20.0"}
}

func mixAPIVersions(conn int) event.Request {
	r := mixBase(conn, apiVersionsKey, 4)
	noError := int16(0)
	r.ErrorCode = &noError
	return r
}

// mixRequest is the i-th request of a kind: produce and fetch rotate
// over the producers' (0-7) and consumers' (8-9) connections and the
// topic's 4 partitions.
func mixRequest(kind string, i int) event.Request {
	switch kind {
	case "produce":
		r := mixBase(i%8, apiProduce, 11)
		acks := int16(-1)
		r.Acks, r.RequestBytes, r.ResponseBytes = &acks, 1100, 70
		r.Producer = event.Producer{Batches: 1, Magic: 2, Codec: "none", ProducerID: int64(1000 + i%8)}
		r.Partitions = []event.Partition{{Topic: "ab-agent", Partition: int32(i % 4), Records: 1, Bytes: 980, Batches: 1}}
		return r
	case "fetch":
		r := mixBase(8+i%2, apiFetch, 16)
		replica := int32(-1)
		r.ReplicaID, r.ResponseBytes = &replica, 2100
		r.Fetch = event.FetchParams{MaxWaitMs: 500, MinBytes: 1, MaxBytes: 50 << 20, SessionID: 7, SessionEpoch: int32(i)}
		r.Partitions = []event.Partition{{Topic: "ab-agent", Partition: int32(i % 4), Records: 2, Bytes: 1960},
			{Topic: "ab-agent", Partition: int32((i + 1) % 4)}}
		return r
	case "heartbeat", "offset-commit":
		key := int16(apiHeartbeat)
		if kind == "offset-commit" {
			key = 8
		}
		r := mixBase(8+i%2, key, 4)
		r.Group = event.Group{ID: "kscope-bench", MemberID: fmt.Sprintf("kgo-member-%d", i%2), Generation: 1}
		return r
	default:
		r := mixBase(i%10, apiMetadata, 12)
		r.ResponseBytes = 400
		return r
	}
}

// BenchmarkLiveAdd is the agent's cost per request of the clients view
// (Agent.onRequest calls Live.Add for every decoded request) over the
// request mix of bench/agent.sh, window rotations included: the
// synthetic clock runs at 10 000 requests/s, so a run of b.N requests
// rotates every 3 million.
func BenchmarkLiveAdd(b *testing.B) {
	reqs := mixRequests(100_000)
	span := reqs[len(reqs)-1].Arrival.Sub(t0) + 100*time.Microsecond
	l := NewLive(Options{}, 0)
	b.ReportAllocs()
	i, lap := 0, time.Duration(0)
	for b.Loop() {
		r := &reqs[i]
		// Laps over the same requests go on in time, as a live stream.
		arrival, end := r.Arrival, r.End
		r.Arrival, r.End = arrival.Add(lap), end.Add(lap)
		l.Add(r)
		r.Arrival, r.End = arrival, end
		if i++; i == len(reqs) {
			i, lap = 0, lap+span
		}
	}
}
