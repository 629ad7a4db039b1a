package wire

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// BenchmarkProduceRequests decodes produce requests and their responses
// as the agent meets them under bench/agent.sh (one batch of one record
// per partition, acks=all) and as kscope requests does (message ids):
// the wire decoder's share of the agent's cost per request.
func BenchmarkProduceRequests(b *testing.B) {
	const n = 200
	c := newConversation(40600)
	c.handshake()
	for corr := range int32(n) {
		req := produceRequest("orders", 0, -1, "id-a")
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = 1, makeBatch("id-b")
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
		c.send(true, requestFrame(req, 9, corr, "producer-1"), 1448, time.Microsecond)
		c.send(false, responseFrame(produceResponse("orders", 0), 9, corr), 1448, time.Microsecond)
	}
	var bytes int64
	for _, s := range c.segs {
		bytes += int64(len(s.data))
	}
	agent := DefaultConfig()
	agent.ProduceIDsOnly, agent.MessageIDHeader = true, ""
	slowLog := DefaultConfig()
	slowLog.ProduceIDsOnly, slowLog.MessageIDsMinLatency = true, time.Second
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"agent", agent}, {"agent-slowlog", slowLog}, {"requests", DefaultConfig()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(bytes)
			b.ReportAllocs()
			for b.Loop() {
				if _, d := decodeConfig(c.segs, bc.cfg); d.Stats().Responses != n {
					b.Fatalf("stats %+v", d.Stats())
				}
			}
		})
	}
}

// BenchmarkProduceBody is the part of BenchmarkProduceRequests that
// reads a produce request's body (two partitions of one batch of one
// record): per request, without the packets, reassembly and framing
// around it.
func BenchmarkProduceBody(b *testing.B) {
	req := produceRequest("orders", 0, -1, "id-a")
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = 1, makeBatch("id-b")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	req.SetVersion(9)
	body := req.AppendTo(nil)
	agent := DefaultConfig()
	agent.ProduceIDsOnly, agent.MessageIDHeader = true, ""
	slowLog := DefaultConfig()
	slowLog.ProduceIDsOnly, slowLog.MessageIDsMinLatency = true, time.Second
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"agent", agent}, {"agent-slowlog", slowLog}, {"requests", DefaultConfig()}} {
		b.Run(bc.name, func(b *testing.B) {
			d := NewDecoder(bc.cfg, &records.Decoder{}, nil, func(*event.Request) {})
			b.ReportAllocs()
			for b.Loop() {
				var ev event.Request
				p := pending{ev: &ev, header: requestHeader{key: 0, version: 9, known: true, flexible: true}}
				if _, ok := d.decodeRequestBody(&p, body); !ok || len(ev.Partitions) != 2 || ev.Producer.Batches != 2 {
					b.Fatalf("decoded %v: %+v", ok, ev)
				}
				d.releaseHeld(&p.held, &ev, true)
			}
		})
	}
}
