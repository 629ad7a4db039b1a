package wire

import (
	"net"
	"strconv"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/reassembly"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/tlsdecrypt"
)

// Config sets what the decoder accepts and keeps.
type Config struct {
	// Ports are the brokers' ports: the side of a connection on one of
	// them is the broker.
	Ports []uint16
	// MessageIDHeader is the record header whose values are collected as
	// message ids; empty disables it (and decompression).
	MessageIDHeader string
	// MaxMessageIDs bounds the ids kept per partition of a request.
	MaxMessageIDs int
	// MessageIDsMinLatency, when positive, reads a produce request's
	// message ids only if it is at least this slow (or unanswered): the
	// agent's slow-request log wants them, nothing else does. Its record
	// batches are copied aside until the response (see slowids.go).
	MessageIDsMinLatency time.Duration
	// ProduceIDsOnly collects message ids from produce requests only:
	// fetch responses are then counted from their batch headers, without
	// reading (or decompressing) a record (the agent's hot path).
	ProduceIDsOnly bool
	// BatchStats fills event.Partition.BatchStats for produce requests
	// (kscope model --from-capture). It decompresses every batch.
	BatchStats bool
	// Skip names the fields of the requests emitted that are not decoded,
	// because nothing reading them uses those (the agent with some of its
	// views off). Zero: everything is decoded.
	Skip Extras
	// Recycle lends each event to emit instead of giving it: emit keeps
	// neither the event nor its Partitions (the slice, or a pointer into
	// it) once it returns, and the decoder reuses both for a later
	// request. It saves the two largest allocations per request (the
	// agent, whose metrics and views copy what they keep).
	Recycle bool
	// MaxFrameBytes is the largest frame treated as plausible (Kafka's
	// socket.request.max.bytes defaults to 100 MiB).
	MaxFrameBytes int
	// MaxKeepBytes is the largest frame body buffered for decoding;
	// larger frames are timed but their bodies are not decoded.
	MaxKeepBytes int
	// MaxPartialBytes bounds the bodies of frames in progress (those not
	// whole in one reassembled chunk) buffered on all connections
	// together: a frame that does not fit is timed, not decoded, and
	// counted (Stats.OverBudget).
	MaxPartialBytes int
	// MaxInflight bounds the requests waiting for responses per
	// connection.
	MaxInflight int
	// GapTimeout is how long (capture time) out-of-order data waits for
	// a missing segment before the gap is accepted as lost.
	GapTimeout time.Duration
	// IdleTimeout closes connections idle this long (capture time); their
	// waiting requests are reported unanswered.
	IdleTimeout time.Duration
	// MaxBufferedPages bounds reassembly memory (pages of 1900 bytes).
	MaxBufferedPages int
	// TLSKeys are the session secrets for connections to TLS listeners
	// (a key log: *tlskeys.File, *tlskeys.Keys). nil: TLS connections
	// are recognised and counted, not decrypted.
	TLSKeys tlsdecrypt.KeySource
}

// DefaultConfig returns the defaults used by kscope requests.
func DefaultConfig() Config {
	return Config{
		Ports:            []uint16{9092},
		MessageIDHeader:  "message-id",
		MaxMessageIDs:    10000,
		MaxFrameBytes:    100 << 20,
		MaxKeepBytes:     64 << 20,
		MaxPartialBytes:  64 << 20,
		MaxInflight:      4096,
		GapTimeout:       2 * time.Second,
		IdleTimeout:      10 * time.Minute,
		MaxBufferedPages: 1 << 16,
	}
}

// Decoder reassembles TCP segments on Kafka ports and emits one
// event.Request per request. It is not safe for concurrent use.
type Decoder struct {
	cfg     Config
	emit    func(*event.Request)
	batches BatchSummarizer
	topics  *TopicNames
	// topicIDs is the last topic id looked up in topics.
	topicIDs topicIDMemo
	stats    Stats
	// partial is what the frames in progress on all connections hold.
	partial partialBudget

	ports     [65536 / 64]uint64
	asm       *reassembly.Assembler
	lastFlush time.Time
	ctxSlab   []packetContext
	// streams finds a connection's stream from a packet, to look at its
	// state before reassembly sees the packet.
	streams map[connKey]*stream
	// generations are the connections that reuse the ports of one the
	// decoder still has a stream for, by their packets' flows in both
	// directions (reuse.go); lastGeneration numbers them.
	generations    map[connKey]generation
	lastGeneration uint64
	// lastConn is the number given to the last connection seen
	// (event.Request.Conn).
	lastConn uint64
	// tlsProblems are the first TLS connections not decrypted.
	tlsProblems []TLSProblem
	// accepted is the stream reassembly handed the packet being
	// assembled (its Accept), in direction acceptedDir; nil if none, or
	// if the packet ended the connection. Reassembly has looked the
	// connection up already: a map lookup of its own hashed two flows
	// per packet.
	accepted    *stream
	acceptedDir int

	// The bodies decoded on every request, reused: kmsg decodes into
	// them again, keeping their top-level arrays. Their strings point
	// into the frame (UnsafeReadFrom): names are interned before an
	// event keeps them.
	produceReq  kmsg.ProduceRequest
	produceResp kmsg.ProduceResponse
	fetchReq    kmsg.FetchRequest
	fetchResp   kmsg.FetchResponse
	names       interner
	int16s      slab[int16]
	int32s      slab[int32]
	int64s      slab[int64]
	// Produce requests' record batches held for their message ids
	// (MessageIDsMinLatency): bytes held now, copies free for reuse.
	heldBytes int
	heldFree  [][]byte
	// freeRequests are emitted events ready for reuse (Config.Recycle).
	freeRequests []*event.Request
}

// NewDecoder returns a decoder that calls emit for every request, in the
// order requests complete (response seen, or known to have none). emit may
// keep the event. batches may be nil (no record counts or ids); topics may
// be nil.
func NewDecoder(cfg Config, batches BatchSummarizer, topics *TopicNames, emit func(*event.Request)) *Decoder {
	def := DefaultConfig()
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = def.MaxFrameBytes
	}
	if cfg.MaxKeepBytes <= 0 {
		cfg.MaxKeepBytes = def.MaxKeepBytes
	}
	if cfg.MaxPartialBytes <= 0 {
		cfg.MaxPartialBytes = def.MaxPartialBytes
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = def.MaxInflight
	}
	if cfg.GapTimeout <= 0 {
		cfg.GapTimeout = def.GapTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.MaxBufferedPages <= 0 {
		cfg.MaxBufferedPages = def.MaxBufferedPages
	}
	if cfg.MaxMessageIDs <= 0 {
		cfg.MaxMessageIDs = def.MaxMessageIDs
	}
	if topics == nil {
		topics = NewTopicNames()
	}
	d := &Decoder{cfg: cfg, emit: emit, batches: batches, topics: topics,
		streams: make(map[connKey]*stream), generations: make(map[connKey]generation)}
	d.partial.limit = int64(cfg.MaxPartialBytes)
	for _, p := range cfg.Ports {
		d.ports[p/64] |= 1 << (p % 64)
	}
	pool := reassembly.NewStreamPool(&streamFactory{d: d})
	d.asm = reassembly.NewAssembler(pool)
	d.asm.MaxBufferedPagesTotal = cfg.MaxBufferedPages
	d.asm.MaxBufferedPagesPerConnection = max(cfg.MaxBufferedPages/16, 64)
	return d
}

// Stats returns the counters so far.
func (d *Decoder) Stats() Stats { return d.stats }

// Gauges are a decoder's current state, as opposed to its counters.
type Gauges struct {
	// Connections are the TCP connections tracked now.
	Connections int
	// InFlight counts requests waiting for their response, by API.
	InFlight map[string]int
}

// Gauges counts the connections tracked and the requests in flight. It
// walks every connection: call it about once a second, not per packet.
func (d *Decoder) Gauges() Gauges {
	g := Gauges{InFlight: make(map[string]int)}
	for _, s := range d.streams {
		if s.conn == nil {
			continue
		}
		g.Connections++
		for _, p := range s.conn.inflight {
			g.InFlight[p.ev.API]++
		}
	}
	return g
}

// Topics returns the topic id table the decoder fills from Metadata
// responses.
func (d *Decoder) Topics() *TopicNames { return d.topics }

func (d *Decoder) isPort(p uint16) bool { return d.ports[p/64]&(1<<(p%64)) != 0 }

// Packet hands one TCP segment to the decoder. Segments on other ports
// are ignored.
func (d *Decoder) Packet(seg capture.Segment, ci gopacket.CaptureInfo) {
	tcp := seg.TCP
	if !d.isPort(uint16(tcp.SrcPort)) && !d.isPort(uint16(tcp.DstPort)) {
		return
	}
	d.stats.Packets++
	d.stats.Bytes += int64(len(tcp.Payload))
	ts := ci.Timestamp
	d.accepted = nil
	d.asm.AssembleWithContext(d.assemblyFlow(seg.NetFlow, tcp), tcp, d.context(ci))
	s, dir := d.accepted, d.acceptedDir
	if s != nil && tcp.RST {
		s.abort()
	}
	if s != nil && tcp.ACK && s.times[1-dir].lostInCapture(tcp.Ack) {
		// The peer has acknowledged bytes the capture lost: no
		// retransmission will come, so waiting for one would only hold
		// back the data after the gap (and let this packet's response
		// bytes arrive before the requests they answer). Give up the
		// gap before this packet is assembled.
		d.asm.FlushWithOptions(reassembly.FlushOptions{T: ts.Add(time.Nanosecond), TC: ts.Add(-d.cfg.IdleTimeout)})
	}
	if d.lastFlush.IsZero() {
		d.lastFlush = ts
	}
	if ts.Sub(d.lastFlush) >= time.Second {
		d.lastFlush = ts
		d.asm.FlushWithOptions(reassembly.FlushOptions{T: ts.Add(-d.cfg.GapTimeout), TC: ts.Add(-d.cfg.IdleTimeout)})
	}
}

// Close flushes all streams (accepting every remaining gap) and reports
// the requests still waiting for a response as unanswered.
func (d *Decoder) Close() {
	d.asm.FlushAll()
}

// connKey identifies a connection by the first packet's direction.
type connKey struct {
	net, transport gopacket.Flow
}

// emitUnanswered emits a request that will get no response.
func (d *Decoder) emitUnanswered(p *pending) {
	d.releaseHeld(&p.held, p.ev, false)
	d.emitRequest(p.ev)
}

func (d *Decoder) emitRequest(ev *event.Request) {
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		if p.Topic == "" && p.TopicID != "" {
			if id, ok := event.ParseTopicID(p.TopicID); ok {
				_, p.Topic = d.topicIDs.lookup(d.topics, id)
			}
		}
	}
	d.emit(ev)
	if d.cfg.Recycle {
		d.recycle(ev)
	}
}

// Bounds on what Config.Recycle keeps after a peak of requests in flight:
// the requests free for reuse, and the partitions of one, beyond which a
// rare large request's array is left to the collector rather than held.
// At most 256 events of 64 partitions, about 3 MiB; past them a request
// allocates as it would without Recycle.
const (
	maxFreeRequests       = 256
	maxRecycledPartitions = 64
)

// newRequest returns an event to fill: a recycled one (zero, its
// Partitions empty with their array kept) or a new one.
func (d *Decoder) newRequest() *event.Request {
	if n := len(d.freeRequests); n > 0 {
		ev := d.freeRequests[n-1]
		d.freeRequests[n-1] = nil
		d.freeRequests = d.freeRequests[:n-1]
		return ev
	}
	return &event.Request{}
}

// recycle zeroes an emitted event and keeps it for newRequest.
func (d *Decoder) recycle(ev *event.Request) {
	if len(d.freeRequests) >= maxFreeRequests {
		return
	}
	parts := ev.Partitions
	if cap(parts) > maxRecycledPartitions {
		parts = nil
	}
	// Zeroed up to its capacity: what a partition pointed to (message
	// ids, offsets) is not held by a request that no longer has it.
	clear(parts[:cap(parts)])
	*ev = event.Request{Partitions: parts[:0]}
	d.freeRequests = append(d.freeRequests, ev)
}

// packetContext carries a packet's capture info through reassembly. They
// are allocated in slabs: reassembly keeps a pointer to the context of
// every buffered packet, so they cannot be reused, but one allocation per
// slab keeps the per-packet cost down. A context holds no pointers (the
// timestamp as nanoseconds, its location as a flag), so a slab is 24 bytes
// a packet that the garbage collector never scans.
type packetContext struct {
	unixNano       int64
	capLen, length int32
	ifIndex        int32
	utc            bool
}

func (c *packetContext) GetCaptureInfo() gopacket.CaptureInfo {
	ts := time.Unix(0, c.unixNano)
	if c.utc {
		ts = ts.UTC()
	}
	return gopacket.CaptureInfo{Timestamp: ts, CaptureLength: int(c.capLen), Length: int(c.length), InterfaceIndex: int(c.ifIndex)}
}

// context stores ci's timestamp (in UTC or local time: the locations the
// capture readers give), lengths and interface; not its AncillaryData.
func (d *Decoder) context(ci gopacket.CaptureInfo) *packetContext {
	if len(d.ctxSlab) == cap(d.ctxSlab) {
		d.ctxSlab = make([]packetContext, 0, 4096)
	}
	d.ctxSlab = append(d.ctxSlab, packetContext{
		unixNano: ci.Timestamp.UnixNano(),
		capLen:   int32(ci.CaptureLength),
		length:   int32(ci.Length),
		ifIndex:  int32(ci.InterfaceIndex),
		utc:      ci.Timestamp.Location() == time.UTC,
	})
	return &d.ctxSlab[len(d.ctxSlab)-1]
}

type streamFactory struct{ d *Decoder }

func (f *streamFactory) New(netFlow, tcpFlow gopacket.Flow, tcp *layers.TCP, ac reassembly.AssemblerContext) reassembly.Stream {
	d := f.d
	srcPort, dstPort := uint16(tcp.SrcPort), uint16(tcp.DstPort)
	// netFlow may carry a generation (reuse.go); the addresses are the
	// packet's.
	captured, _ := splitGeneration(netFlow)
	src := net.JoinHostPort(captured.Src().String(), strconv.Itoa(int(srcPort)))
	dst := net.JoinHostPort(captured.Dst().String(), strconv.Itoa(int(dstPort)))
	s := &stream{d: d, key: connKey{netFlow, tcpFlow}}
	d.streams[s.key] = s
	// The first packet's source is reassembly's "client" side; the broker
	// is whichever side is on a Kafka port.
	if d.isPort(dstPort) {
		s.requestDir = reassembly.TCPDirClientToServer
		s.conn = newConn(d, src, dst, true, true)
	} else {
		s.requestDir = reassembly.TCPDirServerToClient
		s.conn = newConn(d, dst, src, true, true)
	}
	return s
}

// stream adapts reassembly's callbacks to a conn.
type stream struct {
	d   *Decoder
	key connKey // reassembly's: the first packet's flows, with the generation (reuse.go)
	// synSeq is the sequence number of the SYN without ACK that opened
	// the connection, if it was captured (synSeen).
	synSeq     uint32
	synSeen    bool
	conn       *conn
	requestDir reassembly.TCPFlowDirection
	seen       [2]bool // first packet of each direction seen
	counted    bool    // counted in Stats.Connections (once it carried data)
	// tls decrypts the connection's TLS records; nil on a plaintext
	// connection, or before its first data says which it is.
	tls     *tlsLayer
	decided bool // the first data was seen: tls is set or never will be
	times   [2]seqTimes
	ts      chunkTime
}

// sigIndex is conn.signals' index for dir: 0 client to broker, 1 broker
// to client.
func (s *stream) sigIndex(dir reassembly.TCPFlowDirection) int {
	if dir == s.requestDir {
		return 0
	}
	return 1
}

func dirIndex(dir reassembly.TCPFlowDirection) int {
	if dir == reassembly.TCPDirServerToClient {
		return 1
	}
	return 0
}

func (s *stream) Accept(tcp *layers.TCP, ci gopacket.CaptureInfo, dir reassembly.TCPFlowDirection, nextSeq reassembly.Sequence, start *bool, ac reassembly.AssemblerContext) bool {
	i := dirIndex(dir)
	s.d.accepted, s.d.acceptedDir = s, i
	if tcp.SYN {
		s.times[i].syn(tcp.Seq)
		if !tcp.ACK && !s.synSeen {
			s.synSeq, s.synSeen = tcp.Seq, true
		}
	} else {
		if s.times[i].packet(tcp.Seq, len(tcp.Payload), ci.Timestamp) {
			s.conn.signals[s.sigIndex(dir)].retrans.add(ci.Timestamp)
		}
		if tcp.Window == 0 && !tcp.RST && !tcp.FIN {
			s.conn.signals[s.sigIndex(dir)].zeroWin.add(ci.Timestamp)
		}
		if dir == s.requestDir {
			if tcp.ACK {
				s.conn.acks.clientAck(tcp.Ack, len(tcp.Payload), ci.Timestamp)
			}
		} else {
			s.conn.acks.brokerData(tcp.Seq, len(tcp.Payload), ci.Timestamp)
		}
	}
	if !s.seen[i] {
		s.seen[i] = true
		// A direction that starts with its SYN is in frame sync from
		// its first byte; one that starts mid-stream must search.
		if tcp.SYN {
			if dir == s.requestDir {
				s.conn.req.syncing = false
			} else {
				s.conn.resp.syncing = false
			}
		}
	}
	// Accept streams without a SYN: captures often start mid-connection.
	*start = true
	return true
}

func (s *stream) ReassembledSG(sg reassembly.ScatterGather, ac reassembly.AssemblerContext) {
	dir, _, _, skip := sg.Info()
	length, _ := sg.Lengths()
	parser := s.conn.resp
	if dir == s.requestDir {
		parser = s.conn.req
	}
	times := &s.times[dirIndex(dir)]
	times.deliver(skip)
	s.ts.times, s.ts.fallback = times, ac.GetCaptureInfo().Timestamp
	var data []byte
	if length > 0 {
		data = sg.Fetch(length)
		if !s.counted {
			// Counted on data, not on New: reassembly also makes
			// streams of the stray ACKs that follow a close.
			s.counted = true
			s.d.stats.Connections++
		}
		if !s.decided {
			s.decided = true
			// A Kafka frame starts with its size, and a size of
			// 0x14000000 (335 MB) or more is far beyond any broker's
			// socket.request.max.bytes: a TLS record header is not
			// taken for one.
			if tlsdecrypt.StartsRecord(data) {
				s.tls = newTLSLayer(s, s.d.cfg.TLSKeys)
			}
		}
	}
	switch {
	case s.tls != nil:
		s.tls.feed(s.sigIndex(dir), skip, data, &s.ts)
	default:
		if skip != 0 {
			parser.gap(skip, s.ts.fallback)
		}
		if length > 0 {
			parser.feed(data, &s.ts)
		}
	}
	times.done(length)
}

func (s *stream) ReassemblyComplete(ac reassembly.AssemblerContext) bool {
	if s.tls != nil {
		s.tls.close()
	}
	s.conn.end()
	if s.d.streams[s.key] == s {
		delete(s.d.streams, s.key)
	}
	s.d.forgetGeneration(s)
	if s.d.accepted == s {
		s.d.accepted = nil
	}
	return true
}

// abort ends the connection: its requests still waiting are unanswered.
// Reassembly completes a connection when both directions have ended, but
// a reset ends only the direction that sent it (a client that closes its
// socket with unread bytes resets it, and the broker then sends nothing):
// without this the connection's last requests would wait for the idle
// timeout, minutes, before they are counted. Closing is idempotent; a
// late retransmission after the reset is still decoded, and its requests
// are emitted when reassembly completes the connection.
func (s *stream) abort() {
	if s.tls != nil {
		s.tls.close()
	}
	s.conn.close()
}

// chunkTime gives capture times of the bytes of the chunk being parsed.
type chunkTime struct {
	times    *seqTimes
	fallback time.Time
}

func (t *chunkTime) at(off int) time.Time { return t.times.at(off, t.fallback) }

func (t *chunkTime) latest(a, b int) time.Time { return t.times.latest(a, b, t.fallback) }

func (t *chunkTime) packets(base, n int, fn func(off int, ts time.Time)) {
	t.times.packets(base, n, fn)
}
