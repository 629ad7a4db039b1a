package wire

import (
	"encoding/binary"
	"hash/crc32"
	"net"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// makeBatch builds an uncompressed magic 2 record batch whose records carry
// a message-id header per id.
func makeBatch(ids ...string) []byte {
	var recs []byte
	for i, id := range ids {
		var body []byte
		body = kbin.AppendInt8(body, 0)
		body = kbin.AppendVarlong(body, 0)
		body = kbin.AppendVarint(body, int32(i))
		body = kbin.AppendVarintBytes(body, nil)
		body = kbin.AppendVarintBytes(body, []byte("payload"))
		body = kbin.AppendVarint(body, 1)
		body = kbin.AppendVarintString(body, "message-id")
		body = kbin.AppendVarintBytes(body, []byte(id))
		recs = kbin.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(ids) - 1), ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(ids)), Records: recs}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:21], crc)
	return out
}

// requestFrame encodes a request with its header, size-prefixed.
func requestFrame(req kmsg.Request, version int16, corr int32, clientID string) []byte {
	req.SetVersion(version)
	var b []byte
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, &clientID)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	return append(kbin.AppendInt32(nil, int32(len(b))), b...)
}

// responseFrame encodes a response to req, size-prefixed.
func responseFrame(resp kmsg.Response, version int16, corr int32) []byte {
	resp.SetVersion(version)
	b := kbin.AppendInt32(nil, corr)
	if resp.IsFlexible() && resp.Key() != 18 {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	return append(kbin.AppendInt32(nil, int32(len(b))), b...)
}

// conversation builds the TCP segments of one client connection.
type conversation struct {
	client, broker net.IP
	cport, bport   uint16
	cseq, bseq     uint32
	now            time.Time
	segs           []testSegment
	zeroWindow     bool   // the next segments advertise a zero window
	rst            bool   // the next segments reset the connection
	fin            bool   // the next segments end their side of the connection
	ack            bool   // the next client segments acknowledge every broker byte sent
	ackTo          uint32 // nonzero: the next client segments acknowledge broker bytes up to it
}

// testSegment is one serialized raw-IP packet.
type testSegment struct {
	data []byte
	ci   gopacket.CaptureInfo
}

func newConversation(cport uint16) *conversation {
	return &conversation{client: net.IPv4(127, 0, 0, 2).To4(), broker: net.IPv4(127, 0, 0, 1).To4(),
		cport: cport, bport: 9092, cseq: 1000, bseq: 5000, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
}

func (c *conversation) add(fromClient bool, payload []byte, syn bool) {
	tcp := &layers.TCP{SYN: syn, ACK: !syn || !fromClient, RST: c.rst, FIN: c.fin, Window: 65535}
	if c.zeroWindow {
		tcp.Window = 0
	}
	if c.ack && fromClient {
		tcp.Ack = c.bseq
	}
	if c.ackTo != 0 && fromClient {
		tcp.Ack = c.ackTo
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP}
	if fromClient {
		tcp.SrcPort, tcp.DstPort, tcp.Seq = layers.TCPPort(c.cport), layers.TCPPort(c.bport), c.cseq
		ip.SrcIP, ip.DstIP = c.client, c.broker
		c.cseq += uint32(len(payload))
		if syn || c.fin {
			c.cseq++
		}
	} else {
		tcp.SrcPort, tcp.DstPort, tcp.Seq = layers.TCPPort(c.bport), layers.TCPPort(c.cport), c.bseq
		ip.SrcIP, ip.DstIP = c.broker, c.client
		c.bseq += uint32(len(payload))
		if syn || c.fin {
			c.bseq++
		}
	}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, tcp, gopacket.Payload(payload))
	if err != nil {
		panic(err)
	}
	data := append([]byte(nil), buf.Bytes()...)
	c.segs = append(c.segs, testSegment{data: data,
		ci: gopacket.CaptureInfo{Timestamp: c.now, CaptureLength: len(data), Length: len(data)}})
}

// handshake adds SYN and SYN-ACK.
func (c *conversation) handshake() {
	c.add(true, nil, true)
	c.add(false, nil, true)
}

// send adds payload from one side in segments of at most mss bytes, and
// advances the clock by step after each.
func (c *conversation) send(fromClient bool, payload []byte, mss int, step time.Duration) {
	for len(payload) > 0 {
		n := min(mss, len(payload))
		c.add(fromClient, payload[:n], false)
		payload = payload[n:]
		c.now = c.now.Add(step)
	}
}

// run feeds segments to a new decoder and returns what it emitted.
func run(segs []testSegment) ([]*event.Request, Stats) {
	out, d := decodeWith(segs, nil)
	return out, d.Stats()
}

func produceRequest(topic string, partition int32, acks int16, ids ...string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 30000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = makeBatch(ids...)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func produceResponse(topic string, partition int32) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	t := kmsg.NewProduceResponseTopic()
	t.Topic = topic
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition = partition
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}
