package wire

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
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
