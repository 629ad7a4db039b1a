package consumers

import (
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// BenchmarkLiveAdd is the agent's cost per request of the consumers view
// (Agent.onRequest calls Live.Add for every decoded request) under a
// steady stream like bench/agent.sh's: 10 000 requests/s, four of five
// a produce request of one record to one of 4 partitions, answered in
// 2 ms; the fifth a consumer's fetch of one partition, answered in 5 ms
// with what was produced to it since its last fetch.
func BenchmarkLiveAdd(b *testing.B) {
	const parts = 4
	l := NewLive(Options{}, 0)
	produce := &event.Request{Client: "127.0.0.1:40000", Broker: "127.0.0.1:9092", APIKey: apiProduce, APIVersion: 11,
		ClientID: "producer", Answered: true, Partitions: []event.Partition{{Topic: "orders", Records: 1, Bytes: 980, BaseOffset: new(int64)}}}
	fetchReq := &event.Request{Client: "127.0.0.1:40001", Broker: "127.0.0.1:9092", APIKey: apiFetch, APIVersion: 16,
		ClientID: "consumer", Answered: true, ReplicaID: new(int32),
		Partitions: []event.Partition{{Topic: "orders", FetchOffset: new(int64), HighWatermark: new(int64), FirstOffset: new(int64),
			LastOffset: new(int64), FirstTimestamp: new(int64), MaxTimestamp: new(int64)}}}
	*fetchReq.ReplicaID = -1
	var produced, consumed [parts]int64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		if i%5 == 4 {
			p := (i / 5) % parts
			fp := &fetchReq.Partitions[0]
			fp.Partition = int32(p)
			*fp.FetchOffset, *fp.HighWatermark = consumed[p], produced[p]
			*fp.FirstOffset, *fp.LastOffset, fp.Bytes = consumed[p], produced[p]-1, int(980*(produced[p]-consumed[p]))
			*fp.FirstTimestamp, *fp.MaxTimestamp = now.UnixMilli()-5, now.UnixMilli()
			consumed[p] = produced[p]
			fetchReq.Arrival, fetchReq.End = now, now.Add(5*time.Millisecond)
			l.Add(fetchReq)
		} else {
			p := i % parts
			pp := &produce.Partitions[0]
			pp.Partition, *pp.BaseOffset = int32(p), produced[p]
			produced[p]++
			produce.Arrival, produce.End = now, now.Add(2*time.Millisecond)
			l.Add(produce)
		}
		i++
	}
}
