package wire

import (
	"bytes"
	"encoding/binary"
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
