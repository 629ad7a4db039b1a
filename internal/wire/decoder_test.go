package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

func TestProducePairing(t *testing.T) {
	for _, version := range []int16{3, 7, 8, 9, 11, 12} {
		c := newConversation(40000)
		c.handshake()
		c.send(true, requestFrame(produceRequest("orders", 3, -1, "m-1", "m-2"), version, 7, "prod-1"), 1000, time.Millisecond)
		c.now = c.now.Add(40 * time.Millisecond)
		c.send(false, responseFrame(produceResponse("orders", 3), version, 7), 1000, time.Millisecond)
		got, st := run(c.segs)
		if len(got) != 1 {
			t.Fatalf("v%d: got %d requests, want 1 (stats %+v)", version, len(got), st)
		}
		r := got[0]
		if r.API != "Produce" || r.APIVersion != version || r.CorrelationID != 7 || r.ClientID != "prod-1" || !r.Answered {
			t.Errorf("v%d: got %+v", version, r)
		}
		if r.Acks == nil || *r.Acks != -1 {
			t.Errorf("v%d: acks = %v", version, r.Acks)
		}
		if len(r.Partitions) != 1 || r.Partitions[0].Topic != "orders" || r.Partitions[0].Partition != 3 ||
			r.Partitions[0].Records != 2 || len(r.Partitions[0].MessageIDs) != 2 || r.Partitions[0].MessageIDs[1] != "m-2" {
			t.Errorf("v%d: partitions %+v", version, r.Partitions)
		}
		if r.LatencyMs < 40 || r.LatencyMs > 45 {
			t.Errorf("v%d: latency %v ms, want about 41", version, r.LatencyMs)
		}
		if r.Client != "127.0.0.2:40000" || r.Broker != "127.0.0.1:9092" {
			t.Errorf("v%d: client %s broker %s", version, r.Client, r.Broker)
		}
	}
}

func TestPipelinedAndSplit(t *testing.T) {
	c := newConversation(40001)
	c.handshake()
	var reqs []byte
	for corr := int32(1); corr <= 3; corr++ {
		reqs = append(reqs, requestFrame(produceRequest("t", corr, 1, "id"), 9, corr, "c")...)
	}
	c.send(true, reqs, 100000, time.Millisecond) // all three in one segment
	var resps []byte
	for corr := int32(1); corr <= 3; corr++ {
		resps = append(resps, responseFrame(produceResponse("t", corr), 9, corr)...)
	}
	c.send(false, resps, 7, time.Millisecond) // responses in 7-byte segments
	got, _ := run(c.segs)
	if len(got) != 3 {
		t.Fatalf("got %d requests, want 3", len(got))
	}
	for i, r := range got {
		if r.CorrelationID != int32(i+1) || !r.Answered || r.Partitions[0].Partition != int32(i+1) {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

func TestAcksZeroAndUnknownAPI(t *testing.T) {
	c := newConversation(40002)
	c.handshake()
	c.send(true, requestFrame(produceRequest("t", 0, 0, "x"), 9, 1, "c"), 1500, time.Millisecond)
	// API key 999, version 0: unknown to kmsg, still listed and paired.
	unknown := kbin.AppendInt16(nil, 999)
	unknown = kbin.AppendInt16(unknown, 0)
	unknown = kbin.AppendInt32(unknown, 2)
	unknown = kbin.AppendInt16(unknown, -1)
	unknown = append(unknown, 1, 2, 3)
	c.send(true, append(kbin.AppendInt32(nil, int32(len(unknown))), unknown...), 1500, time.Millisecond)
	c.send(false, append(kbin.AppendInt32(nil, 6), 0, 0, 0, 2, 9, 9), 1500, time.Millisecond)
	got, st := run(c.segs)
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2: %+v", len(got), st)
	}
	if got[0].Answered || *got[0].Acks != 0 || !got[0].End.IsZero() {
		t.Errorf("acks=0: %+v", got[0])
	}
	if got[1].API != "unknown(999)" || !got[1].Answered || got[1].ResponseBytes != 10 {
		t.Errorf("unknown: %+v", got[1])
	}
	if st.NoResponse != 1 || st.UnknownAPIs != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestApiVersionsHeaderV0(t *testing.T) {
	c := newConversation(40003)
	c.handshake()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kscope", "1"
	c.send(true, requestFrame(req, 3, 0, "c"), 1500, time.Millisecond)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ThrottleMillis = 17
	c.send(false, responseFrame(resp, 3, 0), 1500, time.Millisecond)
	got, st := run(c.segs)
	if len(got) != 1 || got[0].API != "ApiVersions" || !got[0].Answered || got[0].ThrottleMs != 17 {
		t.Fatalf("got %+v, stats %+v", got, st)
	}
	if st.DecodeErrors != 0 {
		t.Errorf("decode errors: %+v", st)
	}
}

// A capture that starts inside a frame must skip to the next request.
func TestMidStreamStart(t *testing.T) {
	c := newConversation(40004)
	first := requestFrame(produceRequest("t", 0, 1, "a"), 9, 10, "c")
	second := requestFrame(produceRequest("t", 1, 1, "b"), 9, 11, "c")
	c.send(true, first[25:], 1500, time.Millisecond) // no SYN, mid-frame
	c.send(true, second, 1500, time.Millisecond)
	c.send(false, responseFrame(produceResponse("t", 1), 9, 11), 1500, time.Millisecond)
	got, st := run(c.segs)
	if len(got) != 1 || got[0].CorrelationID != 11 || !got[0].Answered {
		t.Fatalf("got %+v stats %+v", got, st)
	}
	if st.SkippedBytes != int64(len(first)-25) {
		t.Errorf("skipped %d bytes, want %d", st.SkippedBytes, len(first)-25)
	}
}

// A lost segment inside one request's body must not cost the others.
func TestGapInsideFrame(t *testing.T) {
	c := newConversation(40005)
	c.handshake()
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = "id"
	}
	c.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 1, "c"), 1500, time.Millisecond)
	c.send(true, requestFrame(produceRequest("t", 1, 1, ids...), 9, 2, "c"), 1000, time.Millisecond)
	c.send(true, requestFrame(produceRequest("t", 2, 1, "c"), 9, 3, "c"), 1500, time.Millisecond)
	for corr := int32(1); corr <= 3; corr++ {
		c.send(false, responseFrame(produceResponse("t", corr-1), 9, corr), 1500, time.Millisecond)
	}
	// Drop the second segment of request 2 (index: 2 handshake + 1 + 1).
	segs := append(append([]testSegment(nil), c.segs[:4]...), c.segs[5:]...)
	got, st := run(segs)
	if len(got) != 3 {
		t.Fatalf("got %d requests, want 3 (stats %+v)", len(got), st)
	}
	for _, r := range got {
		if !r.Answered {
			t.Errorf("request %d not answered", r.CorrelationID)
		}
		if r.CorrelationID == 2 != r.Partial {
			t.Errorf("request %d partial=%v", r.CorrelationID, r.Partial)
		}
	}
	if st.Gaps != 1 || st.SkippedBytes != 1000 {
		t.Errorf("stats %+v", st)
	}
}

// Hostile sizes: a 2 GB claim and negative sizes must not allocate or
// panic, and the stream must recover on the next real frame.
func TestHostileFrameSizes(t *testing.T) {
	for _, size := range []int32{0x7fffffff, -5, 3} {
		c := newConversation(40006)
		c.handshake()
		c.send(true, kbin.AppendInt32(nil, size), 1500, time.Millisecond)
		c.send(true, []byte{0, 0, 0, 0}, 1500, time.Millisecond)
		c.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 5, "c"), 1500, time.Millisecond)
		c.send(false, responseFrame(produceResponse("t", 0), 9, 5), 1500, time.Millisecond)
		got, st := run(c.segs)
		if len(got) != 1 || got[0].CorrelationID != 5 || !got[0].Answered {
			t.Errorf("size %d: got %+v stats %+v", size, got, st)
		}
	}
}

func TestUnansweredAtEnd(t *testing.T) {
	c := newConversation(40007)
	c.handshake()
	c.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 1, "c"), 1500, time.Millisecond)
	got, st := run(c.segs)
	if len(got) != 1 || got[0].Answered || st.Unanswered != 1 {
		t.Fatalf("got %+v stats %+v", got, st)
	}
}

// Garbage on the Kafka port (another protocol, or random bytes) must be
// skipped and counted, and a real exchange after it still decoded.
func TestGarbageOnPort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	c := newConversation(40200)
	// No SYN: the streams start unsynchronised, as in a capture that
	// begins mid-connection.
	c.send(true, garbage, 1400, time.Millisecond)
	c.send(false, garbage[:5000], 1400, time.Millisecond)
	c.send(true, requestFrame(produceRequest("t", 0, 1, "a"), 9, 5, "c"), 1400, time.Millisecond)
	c.send(false, responseFrame(produceResponse("t", 0), 9, 5), 1400, time.Millisecond)
	got, st := run(c.segs)
	var found bool
	for _, r := range got {
		if r.CorrelationID == 5 && r.Answered && r.API == "Produce" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the real request after the garbage was not decoded: %d requests, stats %+v", len(got), st)
	}
	if st.SkippedBytes < int64(len(garbage)) {
		t.Errorf("skipped %d bytes, want at least the %d bytes of garbage", st.SkippedBytes, len(garbage))
	}
}

// TestProduceIDsOnly: with Config.ProduceIDsOnly a fetch response's
// records are counted from its batch headers (the same count) and its
// message ids are not read; a produce request keeps its ids.
func TestProduceIDsOnly(t *testing.T) {
	c := newConversation(40001)
	c.handshake()
	c.send(true, requestFrame(produceRequest("orders", 0, -1, "p-1", "p-2"), 9, 1, "c"), 1000, time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 0), 9, 1), 1000, time.Millisecond)
	fetch := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	c.send(true, requestFrame(fetch, 11, 2, "c"), 1000, time.Millisecond)
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "orders"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = append(makeBatch("f-1", "f-2", "f-3"), makeBatch("f-4")...)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	c.send(false, responseFrame(resp, 11, 2), 1000, time.Millisecond)

	for _, only := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.ProduceIDsOnly = only
		var got []*event.Request
		d := NewDecoder(cfg, &records.Decoder{}, nil, func(r *event.Request) { got = append(got, r) })
		pd := capture.NewDecoder()
		for _, s := range c.segs {
			seg, _ := pd.Decode(s.data, layers.LinkTypeRaw)
			d.Packet(seg, s.ci)
		}
		d.Close()
		if len(got) != 2 || got[0].API != "Produce" || got[1].API != "Fetch" {
			t.Fatalf("only=%v: got %d requests", only, len(got))
		}
		pp, fp := got[0].Partitions[0], got[1].Partitions[0]
		wantFetchIDs := 4
		if only {
			wantFetchIDs = 0
		}
		if len(pp.MessageIDs) != 2 || fp.Records != 4 || len(fp.MessageIDs) != wantFetchIDs {
			t.Errorf("only=%v: produce ids %v, fetch records %d ids %v", only, pp.MessageIDs, fp.Records, fp.MessageIDs)
		}
	}
}

// TestHostileTagCount: a flexible request whose last tagged-field section
// claims 2^32-1 tags in five bytes is rejected as soon as its bytes run
// out (kmsg before v1.15.1 looped for every tag claimed: about a minute
// of CPU per such frame), and the well-formed request after it on the
// connection still decodes.
func TestHostileTagCount(t *testing.T) {
	hostile := requestFrame(produceRequest("orders", 0, -1, "m-1"), 9, 1, "hostile")
	// The body ends with its top-level tagged fields: a count of 0.
	if hostile[len(hostile)-1] != 0 {
		t.Fatalf("the frame does not end with an empty tag section: % x", hostile[len(hostile)-4:])
	}
	hostile = append(hostile[:len(hostile)-1], 0xff, 0xff, 0xff, 0xff, 0x0f)
	binary.BigEndian.PutUint32(hostile, uint32(len(hostile)-4))
	c := newConversation(40100)
	c.handshake()
	c.send(true, hostile, 1400, time.Millisecond)
	c.send(true, requestFrame(produceRequest("orders", 0, -1, "m-2"), 9, 2, "ok"), 1400, time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 0), 9, 2), 1400, time.Millisecond)
	done := make(chan []*event.Request, 1)
	go func() {
		out, _ := run(c.segs)
		done <- out
	}()
	// A hang guard, not a speed goal: the decode takes microseconds.
	select {
	case out := <-done:
		for _, r := range out {
			if r.CorrelationID == 2 && r.Answered {
				return
			}
		}
		t.Errorf("the request after the hostile one was not decoded: %d requests", len(out))
	case <-time.After(20 * time.Second):
		t.Fatal("decoding a frame claiming 2^32-1 tags did not end in 20 s")
	}
}

// TestResetEndsConnection: a client that resets its connection (it closed
// the socket with a response unread) ends it at once: its request still
// waiting is emitted unanswered at the reset, not when the connection
// would be flushed as idle, minutes later. Reassembly alone waits for the
// broker's direction to end too, which after a reset it never does.
func TestResetEndsConnection(t *testing.T) {
	c := newConversation(40001)
	c.handshake()
	c.send(true, requestFrame(produceRequest("orders", 0, -1, "m-1"), 7, 1, "p"), 1000, time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 0), 7, 1), 1000, time.Millisecond)
	fetch := kmsg.NewPtrFetchRequest()
	c.send(true, requestFrame(fetch, 11, 2, "p"), 1000, time.Millisecond)
	c.rst = true
	c.add(true, nil, false)
	c.rst = false
	// Another connection's packet a second later (capture time moves on).
	other := newConversation(40002)
	other.now = c.now.Add(time.Second)
	other.handshake()

	var got []*event.Request
	d := NewDecoder(DefaultConfig(), &records.Decoder{}, nil, func(r *event.Request) { got = append(got, r) })
	pd := capture.NewDecoder()
	for _, s := range append(c.segs, other.segs...) {
		seg, _ := pd.Decode(s.data, layers.LinkTypeRaw)
		d.Packet(seg, s.ci)
	}
	if len(got) != 2 || got[1].API != "Fetch" || got[1].Answered {
		t.Fatalf("before the end of the capture: %d requests emitted, want the produce and the unanswered fetch", len(got))
	}
	if g := d.Gauges(); len(g.InFlight) != 0 {
		t.Errorf("requests in flight after the reset: %v", g.InFlight)
	}
	d.Close()
	if len(got) != 2 || d.Stats().Unanswered != 1 {
		t.Errorf("after close: %d requests, %d unanswered; want 2 and 1", len(got), d.Stats().Unanswered)
	}
}

// TestReusedCorrelationIDEmittedOnce: a correlation id reused while its
// request still waits ends the old request (unanswered), and at the end
// the new one is emitted once, though the id is in the arrival order
// twice.
func TestReusedCorrelationIDEmittedOnce(t *testing.T) {
	c := newConversation(40003)
	c.handshake()
	for range 2 {
		c.send(true, requestFrame(produceRequest("orders", 0, -1, "m-1"), 7, 5, "p"), 1000, time.Millisecond)
	}
	cfg := DefaultConfig()
	cfg.MessageIDsMinLatency = time.Millisecond
	got, d := decodeConfig(c.segs, cfg)
	if len(got) != 2 || d.Stats().Unanswered != 2 || d.heldBytes != 0 {
		t.Errorf("%d requests emitted, %d unanswered, %d bytes still held; want 2, 2, 0", len(got), d.Stats().Unanswered, d.heldBytes)
	}
}

// TestVersionsOfMatchesKmsg: the table of known keys, highest versions and
// flexible versions says what kmsg's request structs say, for every key
// and version (and one past each end).
func TestVersionsOfMatchesKmsg(t *testing.T) {
	for key := int16(-1); key <= kmsg.MaxKey+1; key++ {
		kv := versionsOf(key)
		req := kmsg.RequestForKey(key)
		if (req != nil) != kv.known {
			t.Fatalf("key %d: known %v, kmsg %v", key, kv.known, req != nil)
		}
		if req == nil {
			continue
		}
		if kv.max != req.MaxVersion() {
			t.Errorf("key %d: max version %d, kmsg %d", key, kv.max, req.MaxVersion())
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if got := kv.flexibleFrom >= 0 && v >= kv.flexibleFrom; got != req.IsFlexible() {
				t.Errorf("key %d version %d: flexible %v, kmsg %v", key, v, got, req.IsFlexible())
			}
		}
	}
}

// TestPortReused: a client port used again for a new connection, with new
// initial sequence numbers, is a new connection, however the first one
// ended. Seen in a capture of a broker that closed connections it refused:
// the client's port was free at once, and its next connection one second
// later reused it. Before, reassembly took the broker's last ACK after both
// FINs for the start of a stream, and the new connection's SYN-ACK,
// 65538 bytes further on, for data after a gap; a client's SYN after a
// reset went to its closed direction and was dropped.
func TestPortReused(t *testing.T) {
	tests := []struct {
		name string
		end  func(c *conversation)
	}{
		{"both FINs, then the broker's last ACK", func(c *conversation) {
			c.fin = true
			c.add(false, nil, false)
			c.add(true, nil, false)
			c.fin = false
			c.add(false, nil, false)
		}},
		{"the client's FIN first", func(c *conversation) {
			c.fin = true
			c.add(true, nil, false)
			c.add(false, nil, false)
			c.fin = false
			c.add(true, nil, false)
		}},
		{"client reset", func(c *conversation) {
			c.rst = true
			c.add(true, nil, false)
			c.rst = false
		}},
		{"broker reset", func(c *conversation) {
			c.rst = true
			c.add(false, nil, false)
			c.rst = false
		}},
		{"end not captured", func(c *conversation) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConversation(43206)
			for i := range 3 {
				c.handshake()
				c.add(true, nil, false)
				c.send(true, requestFrame(produceRequest("orders", 0, 1, "m-1"), 7, int32(i+1), "p"), 1000, time.Millisecond)
				c.send(false, responseFrame(produceResponse("orders", 0), 7, int32(i+1)), 1000, time.Millisecond)
				tt.end(c)
				// The next connection: a second later, new initial
				// sequence numbers (the broker's a little ahead, as
				// Linux's clock-driven ISNs are).
				c.now = c.now.Add(time.Second)
				c.cseq += 17_000_000
				c.bseq += 70_000
			}
			out, st := run(c.segs)
			answered := 0
			for _, r := range out {
				if r.Answered {
					answered++
				}
			}
			if answered != 3 || len(out) != 3 {
				t.Errorf("%d requests, %d answered; want 3 and 3", len(out), answered)
			}
			if st.Gaps != 0 || st.SkippedBytes != 0 {
				t.Errorf("%d gaps, %d bytes skipped; want none", st.Gaps, st.SkippedBytes)
			}
			if st.Connections != 3 {
				t.Errorf("%d connections, want 3", st.Connections)
			}
		})
	}
}

// TestResyncCandidates: a request parser looks for a frame at every
// offset; a response parser only where a captured packet starts, jumping
// from one to the next (marks may repeat an offset: carried marks clamp
// to 0).
func TestResyncCandidates(t *testing.T) {
	marks := []mark{{off: 0}, {off: 0}, {off: 100}, {off: 1500}, {off: 4000}}
	tests := []struct {
		hold, off, n, want int
	}{
		{0, 0, 5000, 0},
		{0, 37, 5000, 37},
		{1 << 20, 0, 5000, 0},
		{1 << 20, 1, 5000, 100},
		{1 << 20, 100, 5000, 100},
		{1 << 20, 101, 5000, 1500},
		{1 << 20, 1501, 5000, 4000},
		{1 << 20, 4001, 5000, 5000}, // no packet starts after it
		{1 << 20, 1501, 3000, 3000}, // the next one is past the window
	}
	for _, tt := range tests {
		p := &frameParser{hold: tt.hold, marks: marks}
		if got := p.candidate(tt.off, tt.n); got != tt.want {
			t.Errorf("hold %d: candidate(%d, %d) = %d, want %d", tt.hold, tt.off, tt.n, got, tt.want)
		}
	}
}

// TestGenerationFlow: a generation's flow keeps the packet's addresses
// and gives back the flow as captured and the generation.
func TestGenerationFlow(t *testing.T) {
	captured := gopacket.NewFlow(layers.EndpointIPv4, net.IPv4(127, 0, 0, 2).To4(), net.IPv4(127, 0, 0, 1).To4())
	for _, id := range []uint64{0, 1, 77} {
		flow := captured
		if id > 0 {
			flow = withGeneration(captured, id)
		}
		got, gotID := splitGeneration(flow)
		if got != captured || gotID != id {
			t.Errorf("generation %d: split into %v, %d; want %v, %d", id, got, gotID, captured, id)
		}
		if back, _ := splitGeneration(flow.Reverse()); back != captured.Reverse() {
			t.Errorf("generation %d reversed: %v, want %v", id, back, captured.Reverse())
		}
	}
}
