package clients

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/event"
)

// client is one row while requests come in.
type client struct {
	key      key
	conns    int
	requests int64
	bytes    int64
	failed   int64
	// unanswered counts requests that got no response (acks=0 produce
	// requests apart): the connection closed, or the capture ended first.
	unanswered int64
	errors     map[int16]int64
	// software counts requests by the software their connection
	// announced. Keyed by the two strings, not by "name/version": that
	// key would be built, an allocation, for every request. The counts
	// are pointers so that a connection keeps its own (conn.software):
	// hashing the two strings for every request was a sixth of Add.
	software map[softwareKey]*int64
	apis     map[apiVersion]*use
	producer *producer
	consumer *consumer
	groups   map[string]*groupUse
	// follower is set when the client fetched as a replica: a broker.
	follower bool
	// first and last are when its requests arrived: rates are over the
	// time it was active, not over the whole capture.
	first, last time.Time

	metadata, allTopics, handshakes, saslAuths int64
}

type apiVersion struct{ key, version int16 }

// softwareKey is the client software a connection announced.
type softwareKey struct{ name, version string }

// use counts requests of one API version, and when they were seen.
type use struct {
	requests    int64
	first, last time.Time
}

type groupUse struct {
	classic, consumer bool
	members           map[string]bool
}

// maxMembers bounds the member ids kept per group.
const maxMembers = 1000

func newClient(k key) *client {
	return &client{key: k, errors: map[int16]int64{}, software: map[softwareKey]*int64{}, apis: map[apiVersion]*use{},
		groups: map[string]*groupUse{}}
}

// add counts r for the client; cn is its connection (nil when not
// followed).
func (c *client) add(a *Aggregator, cn *conn, r *event.Request) {
	c.requests++
	if c.first.IsZero() || r.Arrival.Before(c.first) {
		c.first = r.Arrival
	}
	c.last = later(c.last, r.Arrival)
	c.bytes += int64(r.RequestBytes + r.ResponseBytes)
	if !r.Answered && (r.APIKey != apiProduce || r.Acks == nil || *r.Acks != 0) {
		c.unanswered++
	}
	// An ApiVersions answered UNSUPPORTED_VERSION is the protocol's
	// negotiation (the client asked for a newer version than the broker
	// has, and asks again), not a failure.
	if r.ErrorCode != nil && *r.ErrorCode != 0 && !(r.APIKey == apiVersionsKey && *r.ErrorCode == unsupportedVersion) {
		c.failed++
		if _, ok := c.errors[*r.ErrorCode]; ok || len(c.errors) < maxDistinct {
			c.errors[*r.ErrorCode]++
		}
	}
	if r.SoftwareName != "" || r.SoftwareVersion != "" {
		c.countSoftware(cn, softwareKey{r.SoftwareName, r.SoftwareVersion})
	}
	u := c.use(cn, apiVersion{r.APIKey, r.APIVersion}, r.Arrival)
	u.requests++
	u.last = later(u.last, r.Arrival)
	c.addByAPI(cn, r)
}

// use returns the count of API version av, first seen at, for a request
// of connection cn (nil when untracked). A connection mostly sends one API
// at one version: its last is compared first instead of hashed.
func (c *client) use(cn *conn, av apiVersion, at time.Time) *use {
	if cn != nil && cn.lastUse != nil && cn.lastAPI == av {
		return cn.lastUse
	}
	asked := av
	u := c.apis[av]
	if u == nil {
		if len(c.apis) >= maxAPIVersions {
			av = apiVersion{-1, -1}
			if u = c.apis[av]; u == nil {
				u = &use{first: at}
				c.apis[av] = u
			}
		} else {
			u = &use{first: at}
			c.apis[av] = u
		}
	}
	if cn != nil {
		cn.lastAPI, cn.lastUse = asked, u
	}
	return u
}

// countSoftware counts a request of connection cn (nil when untracked)
// for the software k. A connection announces its software once and the
// wire decoder stamps it on all its requests, interned: comparing with
// the connection's last key is cheap where hashing it is not.
func (c *client) countSoftware(cn *conn, k softwareKey) {
	if cn != nil && cn.softwareCount != nil && cn.software == k {
		*cn.softwareCount++
		return
	}
	n := c.software[k]
	if n == nil {
		if len(c.software) >= maxDistinct {
			return
		}
		n = new(int64)
		c.software[k] = n
	}
	*n++
	if cn != nil {
		cn.software, cn.softwareCount = k, n
	}
}

// maxDistinct bounds the error codes and software versions kept per
// client: the wire may name any.
const maxDistinct = 32

// unsupportedVersion is Kafka's UNSUPPORTED_VERSION error code.
const unsupportedVersion = 35

// maxAPIVersions bounds the (API, version) pairs kept per client: Kafka
// has under 100 APIs of a few versions each; a hostile stream may name
// any key.
const maxAPIVersions = 512

// addByAPI counts what the request's API says of the client.
func (c *client) addByAPI(cn *conn, r *event.Request) {
	switch r.APIKey {
	case apiProduce:
		if c.producer == nil {
			c.producer = newProducer()
		}
		c.producer.add(cn, r)
	case apiFetch:
		if r.ReplicaID != nil && *r.ReplicaID >= 0 {
			c.follower = true
			return
		}
		if c.consumer == nil {
			c.consumer = newConsumer()
		}
		c.consumer.add(r)
	case apiMetadata:
		c.metadata++
		if r.AllTopics {
			c.allTopics++
		}
	case apiSaslHandshake:
		c.handshakes++
	case apiSaslAuth:
		c.saslAuths++
	}
	if r.Group.ID != "" {
		c.group(r)
	}
}

func (c *client) group(r *event.Request) {
	g := c.groups[r.Group.ID]
	if g == nil {
		if len(c.groups) >= maxMembers {
			return
		}
		g = &groupUse{members: map[string]bool{}}
		c.groups[r.Group.ID] = g
	}
	switch r.APIKey {
	case apiJoinGroup, apiSyncGroup, apiHeartbeat:
		g.classic = true
	case apiConsumerGroupH:
		g.consumer = true
	}
	if m := r.Group.MemberID; m != "" && len(g.members) < maxMembers {
		g.members[m] = true
	}
}

// producer counts a client's produce requests.
type producer struct {
	requests, throttled, failed, acks0, unanswered int64
	acks                                           tally[int16]
	codecs                                         tally[string]
	idempotent, transactional                      int64
	transactionalIDs                               map[string]bool
	minMagic                                       int8
	batchesPerRequest, partitionsPerRequest, gapUs *runs
	topics                                         map[string]*topicProduce
	errors                                         map[int16]int64
	// lastName and lastTopic are the last topic looked up: a produce
	// request's partitions are mostly of one topic, and hashing its name
	// for each was a third of this view's cost in the agent.
	lastName  string
	lastTopic *topicProduce
}

// topicProduce is one topic's batches from one client.
type topicProduce struct {
	batches, records, bytes        int64
	recordsPerBatch, bytesPerBatch *runs
}

// maxTopics bounds the topics kept per client; further topics are
// counted under "other".
const maxTopics = 200

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 1<<40, 2) }

func newProducer() *producer {
	return &producer{acks: newTally[int16](0), codecs: newTally[string](0), transactionalIDs: map[string]bool{}, minMagic: 2,
		batchesPerRequest: newRuns(), partitionsPerRequest: newRuns(), gapUs: newRuns(), topics: map[string]*topicProduce{},
		errors: map[int16]int64{}}
}

func (p *producer) add(cn *conn, r *event.Request) {
	p.requests++
	if r.Acks != nil {
		p.acks.add(*r.Acks)
	}
	if r.ThrottleMs > 0 {
		p.throttled++
	}
	if !r.Answered && (r.Acks == nil || *r.Acks != 0) {
		p.unanswered++
	}
	if cn != nil {
		// The gap between a connection's produce requests: with batches
		// short of batch.size, the producer's linger.ms.
		if !cn.lastProduce.IsZero() && r.Arrival.After(cn.lastProduce) {
			p.gapUs.record(max(1, r.Arrival.Sub(cn.lastProduce).Microseconds()), 1)
		}
		cn.lastProduce = r.Arrival
	}
	pr := r.Producer
	if pr.Batches > 0 {
		p.codecs.add(pr.Codec)
		p.minMagic = min(p.minMagic, pr.Magic)
		if pr.Idempotent() {
			p.idempotent++
		}
		if pr.Transactional {
			p.transactional++
		}
		if pr.TransactionalID != "" && len(p.transactionalIDs) < maxTopics {
			p.transactionalIDs[pr.TransactionalID] = true
		}
		p.batchesPerRequest.record(int64(pr.Batches), 1)
	}
	p.partitionsPerRequest.record(max(1, int64(len(r.Partitions))), 1)
	failed := false
	for i := range r.Partitions {
		part := &r.Partitions[i]
		if part.ErrorCode != 0 {
			p.errors[part.ErrorCode]++
			failed = true
		}
		p.topic(part.Topic).add(part)
	}
	if failed {
		p.failed++
	}
}

func (p *producer) topic(name string) *topicProduce {
	if p.lastTopic != nil && name == p.lastName {
		return p.lastTopic
	}
	if t := p.topics[name]; t != nil {
		p.lastName, p.lastTopic = name, t
		return t
	}
	if len(p.topics) >= maxTopics {
		name = "other"
		if t := p.topics[name]; t != nil {
			return t
		}
	}
	t := &topicProduce{recordsPerBatch: newRuns(), bytesPerBatch: newRuns()}
	p.topics[name] = t
	return t
}

func (t *topicProduce) add(part *event.Partition) {
	if part.Batches <= 0 {
		return
	}
	t.batches += int64(part.Batches)
	t.records += int64(part.Records)
	t.bytes += int64(part.Bytes)
	// A partition's batches are counted as equal: one batch per partition
	// is what producers send.
	t.recordsPerBatch.record(max(1, int64(part.Records/part.Batches)), int64(part.Batches))
	t.bytesPerBatch.record(max(1, int64(part.Bytes/part.Batches)), int64(part.Batches))
}

// consumer counts a client's consumer fetches (a follower's are not).
type consumer struct {
	fetches, empty, answered int64
	maxWait, minBytes        tally[int32]
	maxBytes                 tally[int32]
	responseBytes            *runs
	first, last              time.Time
}

func newConsumer() *consumer {
	return &consumer{maxWait: newTally[int32](maxSettings), minBytes: newTally[int32](maxSettings), maxBytes: newTally[int32](maxSettings),
		responseBytes: newRuns()}
}

// maxSettings bounds the distinct setting values kept.
const maxSettings = 64

func (c *consumer) add(r *event.Request) {
	c.fetches++
	if c.first.IsZero() {
		c.first = r.Arrival
	}
	c.last = r.Arrival
	c.maxWait.add(r.Fetch.MaxWaitMs)
	c.minBytes.add(r.Fetch.MinBytes)
	if r.Fetch.MaxBytes > 0 {
		c.maxBytes.add(r.Fetch.MaxBytes)
	}
	if !r.Answered {
		return
	}
	c.answered++
	var data int64
	for i := range r.Partitions {
		data += int64(r.Partitions[i].Bytes)
	}
	if data == 0 {
		c.empty++
	}
	c.responseBytes.record(max(1, int64(r.ResponseBytes)), 1)
}
