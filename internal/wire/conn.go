package wire

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// pending is a request waiting for its response.
type pending struct {
	ev       *event.Request
	header   requestHeader
	received time.Time // capture time of the request's last byte
	// held are the record batches read for message ids if the request
	// turns out slow (Config.MessageIDsMinLatency).
	held heldRecords
}

// conn is the state of one TCP connection between a client and a broker.
type conn struct {
	d              *Decoder
	client, broker string
	// id numbers the connection for the views (event.Request.Conn).
	id        uint64
	req, resp *frameParser
	inflight  map[int32]pending // by value: no allocation per request
	order     []int32           // correlation ids in arrival order, to evict the oldest
	reqSink   requestSink
	respSink  responseSink
	// lastEnd is when the previous response on this connection ended:
	// the broker reads the next request only after that.
	lastEnd time.Time
	// softwareName and softwareVersion are the client software the
	// connection announced (ApiVersions v3+), stamped on its requests.
	softwareName, softwareVersion string
	// early holds responses whose request has not been decoded yet:
	// when a request segment is lost, reassembly holds back the rest of
	// the request stream until the gap is given up, while the response
	// stream flows on.
	early []earlyResponse
	// signals: retransmissions and zero windows seen, client to broker
	// [0] and broker to client [1].
	signals [2]tcpSignals
	acks    ackClock
	sasl    saslState
	// clientID is the client id of the connection's last request: one
	// string per connection, not one per request.
	clientID string
}

// earlyResponse is a response frame kept until its request shows up.
type earlyResponse struct {
	correlationID int32
	frame         frame
}

// Bounds on responses kept while waiting for their requests.
const (
	// maxHeldResponseBytes is how much of an unsynchronised response
	// stream is kept until requests it may answer are decoded.
	maxHeldResponseBytes = 1 << 20
	maxEarly             = 64
	maxEarlyBodyBytes    = 1 << 20
)

func newConn(d *Decoder, client, broker string, reqSyncing, respSyncing bool) *conn {
	d.lastConn++
	c := &conn{d: d, id: d.lastConn, client: client, broker: broker, inflight: make(map[int32]pending)}
	c.reqSink.c, c.respSink.c = c, c
	c.req = newFrameParser(&c.reqSink, &d.stats, &d.partial, d.cfg.MaxFrameBytes, d.cfg.MaxKeepBytes, reqSyncing)
	c.resp = newFrameParser(&c.respSink, &d.stats, &d.partial, d.cfg.MaxFrameBytes, d.cfg.MaxKeepBytes, respSyncing)
	c.resp.hold = maxHeldResponseBytes
	return c
}

// end counts the frames the end of the connection (or of the capture)
// cut off, and closes it.
func (c *conn) end() {
	c.resp.flush()
	c.req.unfinished()
	c.resp.unfinished()
	c.close()
}

// close emits every request still waiting for a response.
func (c *conn) close() {
	c.resp.flush()
	c.d.stats.Unpaired += int64(len(c.early))
	c.early = nil
	for _, id := range c.order {
		// Deleted as it goes: a reused correlation id is in the order
		// twice, and must be emitted (and its held bytes given back) once.
		if p, ok := c.inflight[id]; ok {
			delete(c.inflight, id)
			c.d.stats.Unanswered++
			c.d.emitUnanswered(&p)
		}
	}
	clear(c.inflight)
	c.order = c.order[:0]
}

func (c *conn) addInflight(p *pending) {
	id := p.ev.CorrelationID
	for i := range c.early {
		if c.early[i].correlationID == id {
			f := c.early[i].frame
			c.early = append(c.early[:i], c.early[i+1:]...)
			c.complete(p, &f, false)
			return
		}
	}
	if old, dup := c.inflight[id]; dup {
		// A reused correlation id: the old request will not be
		// answered any more.
		c.d.stats.Unanswered++
		c.d.emitUnanswered(&old)
	}
	if len(c.inflight) >= c.d.cfg.MaxInflight {
		c.evictOldest()
	}
	c.inflight[id] = *p
	c.order = append(c.order, id)
	if len(c.order) > 2*c.d.cfg.MaxInflight {
		c.compactOrder()
	}
	c.resp.retry()
}

func (c *conn) evictOldest() {
	for len(c.order) > 0 {
		id := c.order[0]
		c.order = c.order[1:]
		if p, ok := c.inflight[id]; ok {
			delete(c.inflight, id)
			c.d.stats.Evicted++
			c.d.stats.Unanswered++
			c.d.emitUnanswered(&p)
			return
		}
	}
}

// compactOrder drops answered ids from the order list.
func (c *conn) compactOrder() {
	kept := c.order[:0]
	for _, id := range c.order {
		if _, ok := c.inflight[id]; ok {
			kept = append(kept, id)
		}
	}
	c.order = kept
}

// requestSink decodes request frames.
type requestSink struct{ c *conn }

func (s *requestSink) minFrame() int {
	if s.c.sasl.expectingRawClient() {
		return 0 // a raw SASL token may be empty
	}
	return 10
}

func (s *requestSink) plausible(b []byte) (bool, int) {
	return plausibleRequest(b, s.c.d.cfg.MaxFrameBytes)
}

// plausibleOversized: a request header of any size.
func (s *requestSink) plausibleOversized(b []byte) (bool, int) {
	return plausibleRequest(b, math.MaxInt32)
}

func (s *requestSink) onFrame(f *frame) bool {
	c := s.c
	if c.sasl.rawClient > 0 {
		c.sasl.clientToken(f.body)
		c.d.stats.SASLTokens++
		return true
	}
	h, body, err := parseRequestHeader(f.body)
	if c.sasl.rawUntilRequest {
		if err != nil || !h.known {
			c.sasl.clientToken(f.body)
			c.d.stats.SASLTokens++
			return true
		}
		c.sasl.rawUntilRequest = false
	}
	if err != nil {
		if !f.lost && !f.resynced {
			c.d.stats.DecodeErrors++
		}
		return false
	}
	if f.resynced && !h.known {
		return false
	}
	c.d.stats.Requests++
	ev := c.d.newRequest()
	*ev = event.Request{
		Partitions:    ev.Partitions, // a recycled request's array, empty
		Arrival:       f.first,
		Client:        c.client,
		Broker:        c.broker,
		Conn:          c.id,
		API:           apiName(h.key),
		APIKey:        h.key,
		APIVersion:    h.version,
		CorrelationID: h.correlationID,
		ClientID:      c.internClientID(h.clientID),
		RequestBytes:  f.size + 4,
		Partial:       f.lost,
	}
	if !h.known {
		ev.API = unknownAPI(h.key)
		c.d.stats.UnknownAPIs++
	}
	if f.lost || f.cut {
		c.d.stats.Partial++
		if f.oversized() {
			c.d.stats.Oversized++
		}
		ev.Partial = true
	}
	ev.Principal = c.sasl.principal
	ev.SoftwareName, ev.SoftwareVersion = c.softwareName, c.softwareVersion
	p := pending{ev: ev, header: h, received: f.last}
	if h.known && !ev.Partial {
		expectResponse, ok := c.d.decodeRequestBody(&p, body)
		if ev.SoftwareName != c.softwareName || ev.SoftwareVersion != c.softwareVersion {
			c.softwareName, c.softwareVersion = ev.SoftwareName, ev.SoftwareVersion
		}
		if !ok {
			c.d.stats.DecodeErrors++
			if f.resynced {
				c.d.stats.Requests--
				return false
			}
		}
		if h.key == apiSaslHandshake || h.key == apiSaslAuthenticate {
			c.sasl.request(ev, h, body)
		}
		if !expectResponse {
			c.d.stats.NoResponse++
			c.d.emitRequest(ev)
			return true
		}
	}
	c.addInflight(&p)
	return true
}

// responseSink decodes response frames.
type responseSink struct{ c *conn }

func (s *responseSink) minFrame() int {
	if s.c.sasl.rawServer > 0 {
		return 0 // a raw SASL token may be empty (PLAIN's is)
	}
	return 4
}

// plausible accepts a response header whose correlation id a request on
// this connection awaits, and which ends where the data ends or where
// another such header begins. A correlation id alone is weak evidence
// (small integers abound in record data), and a false start with a large
// size would swallow the real responses after it.
func (s *responseSink) plausible(b []byte) (bool, int) {
	ok, end := s.header(b, -1)
	if !ok || end == 0 {
		return ok, end
	}
	switch {
	case end > maxHeldResponseBytes:
		// Too large to wait for its end: the header must do.
		return true, 0
	case len(b) < end:
		return false, end
	case len(b) == end:
		return true, 0
	case len(b) < end+8:
		return false, end + 8
	}
	return s.follows(b[end:], int32(binary.BigEndian.Uint32(b[4:8]))), 0
}

// follows reports whether b starts a response that can come after the one
// to corr: a plausible size and a slightly larger correlation id (clients
// number a connection's requests upwards; the request it answers may have
// been lost to the capture, so it need not be awaited).
func (s *responseSink) follows(b []byte, corr int32) bool {
	if len(b) < 8 {
		return false
	}
	size := int(int32(binary.BigEndian.Uint32(b[0:4])))
	next := int32(binary.BigEndian.Uint32(b[4:8]))
	return size >= 4 && size <= s.c.d.cfg.MaxFrameBytes && next > corr && next-corr <= maxCorrelationStep
}

// plausibleOversized: a response to a request awaited, of any size.
func (s *responseSink) plausibleOversized(b []byte) (bool, int) {
	if len(b) < 8 {
		return false, 8
	}
	_, awaited := s.c.inflight[int32(binary.BigEndian.Uint32(b[4:8]))]
	return awaited, 0
}

// maxCorrelationStep bounds how far apart the correlation ids of two
// consecutive responses on a connection may be during resynchronisation.
const maxCorrelationStep = 1024

// header checks a response header at b: a plausible size and an awaited
// correlation id other than not. It returns the frame's end (4 + size), or
// 0 with ok false when b is too short to tell.
func (s *responseSink) header(b []byte, not int32) (ok bool, end int) {
	if len(b) < 8 {
		return false, 8
	}
	size := int(int32(binary.BigEndian.Uint32(b[0:4])))
	if size < 4 || size > s.c.d.cfg.MaxFrameBytes {
		return false, 0
	}
	corr := int32(binary.BigEndian.Uint32(b[4:8]))
	if _, awaited := s.c.inflight[corr]; !awaited || corr == not {
		return false, 0
	}
	return true, 4 + size
}

func (s *responseSink) onFrame(f *frame) bool {
	c := s.c
	if c.sasl.rawServer > 0 && !f.resynced {
		c.sasl.serverToken()
		c.d.stats.SASLTokens++
		return true
	}
	if len(f.body) < 4 {
		return false
	}
	id := int32(binary.BigEndian.Uint32(f.body[0:4]))
	p, ok := c.inflight[id]
	if !ok {
		if f.resynced {
			return false
		}
		c.keepEarly(id, f)
		return true
	}
	decoded := false
	if f.resynced {
		// A frame found by resynchronisation must prove itself: a
		// correlation id match alone is weak (small integers abound
		// in record data).
		if f.lost || f.cut || !p.header.known || !c.d.decodeResponseBody(&p, f.body[4:]) {
			return false
		}
		decoded = true
	}
	delete(c.inflight, id)
	c.complete(&p, f, decoded)
	c.answeredUpTo(id)
	return true
}

// answeredUpTo drops from the in-flight table the requests that arrived
// before the one just answered: a broker answers the requests of a
// connection in order, so their responses were lost to the capture and
// will not come.
func (c *conn) answeredUpTo(id int32) {
	for i, o := range c.order {
		if o != id {
			continue
		}
		for _, older := range c.order[:i] {
			if p, ok := c.inflight[older]; ok {
				delete(c.inflight, older)
				c.d.stats.Unanswered++
				c.d.emitUnanswered(&p)
			}
		}
		c.order = c.order[i+1:]
		return
	}
}

// keepEarly keeps a copy of a response whose request is not known yet.
func (c *conn) keepEarly(id int32, f *frame) {
	if len(c.early) >= maxEarly {
		c.d.stats.Unpaired++
		c.early = append(c.early[:0], c.early[1:]...)
	}
	kept := *f
	if len(f.body) > maxEarlyBodyBytes {
		kept.body = append([]byte(nil), f.body[:maxEarlyBodyBytes]...)
		kept.cut = true
	} else {
		kept.body = append([]byte(nil), f.body...)
	}
	c.early = append(c.early, earlyResponse{correlationID: id, frame: kept})
}

// internClientID returns id as a string, the connection's previous one
// when it is the same (a client keeps its id; comparing allocates nothing).
func (c *conn) internClientID(id []byte) string {
	if string(id) != c.clientID {
		c.clientID = string(id)
	}
	return c.clientID
}

// complete pairs a request with its response frame and emits it;
// decoded says the body was decoded into the event already.
func (c *conn) complete(p *pending, f *frame, decoded bool) {
	c.d.stats.Responses++
	ev := p.ev
	ev.End = f.last
	ev.Answered = true
	ev.LatencyMs = millis(ev.End.Sub(ev.Arrival))
	if ev.End.Before(ev.Arrival) {
		ev.ClockStep = true
		c.d.stats.ClockStepped++
	}
	start := p.received
	if c.lastEnd.After(start) {
		ev.QueuedMs = millis(c.lastEnd.Sub(start))
		start = c.lastEnd
	}
	if ev.End.After(start) {
		ev.BrokerMs = millis(ev.End.Sub(start))
	}
	if ev.End.After(c.lastEnd) {
		c.lastEnd = ev.End
	}
	ev.ResponseBytes = f.size + 4
	ev.ResponseMs = millis(f.last.Sub(f.first))
	ev.Retransmits = c.signals[0].retrans.count(ev.Arrival, ev.End)
	ev.ResponseRetransmits = c.signals[1].retrans.count(ev.Arrival, ev.End)
	ev.ZeroWindows = c.signals[0].zeroWin.count(ev.Arrival, ev.End)
	ev.BrokerZeroWindows = c.signals[1].zeroWin.count(ev.Arrival, ev.End)
	ev.ResponseAckWaitMs = millis(c.acks.heldFor(f.first))
	if f.lost || f.cut {
		c.d.stats.Partial++
		if f.oversized() {
			c.d.stats.Oversized++
		}
		ev.Partial = true
	} else {
		if p.header.known && !decoded && !c.d.decodeResponseBody(p, f.body[4:]) {
			c.d.stats.DecodeErrors++
		}
		if k := p.header.key; k == apiSaslHandshake || k == apiSaslAuthenticate {
			c.saslResponse(p, f.body[4:])
		}
	}
	c.d.releaseHeld(&p.held, ev, true)
	c.d.emitRequest(ev)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// saslResponse reads the response of a SASL request (after the
// correlation id) into the connection's authentication state.
func (c *conn) saslResponse(p *pending, body []byte) {
	if responseIsFlexible(&p.header) {
		var ok bool
		if body, ok = skipTags(body); !ok {
			return
		}
	}
	c.sasl.response(p.ev, p.header, body)
}
