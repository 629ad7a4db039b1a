// Package metrics turns kscope's events (requests decoded from the wire,
// traced writes, journal commits, block requests) into Prometheus metrics
// for `kscope agent`: latency histograms in seconds with fine buckets from
// 100 µs to 30 s (and native histograms on request), counters of requests,
// records and bytes, errors by Kafka error name.
//
// Label values that come from the wire (topics, client ids) are bounded:
// the N topics, topic-partitions and clients with most traffic are named,
// the rest are "other" (see topN), and values are made valid, short UTF-8.
// Series of a value that loses its place are deleted, so the number of
// series stays bounded on a cluster with any number of topics and clients.
//
// Request runs for every request the agent decodes, so it resolves its
// series through a cache kept with the label values' top-N slots
// (seriesCache): a request like one seen before builds no label string,
// hashes no label values and allocates nothing; only a rerank that takes
// a value's name away empties the cache.
package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kscope-dev/kscope/internal/event"
)

// Namespace prefixes every metric.
const Namespace = "kscope"

// LatencyBuckets are the classic histogram buckets in seconds: 1, 1.5,
// 2, 3, 5 and 7 per decade from 100 µs to 30 s (34 buckets), fine enough
// to tell a 2 ms from a 3 ms p99 and a 1 s stall from a 1.5 s one.
var LatencyBuckets = func() []float64 {
	var b []float64
	for scale := 1e-4; scale < 100; scale *= 10 {
		for _, m := range []float64{1, 1.5, 2, 3, 5, 7} {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(m*scale, 'g', 6, 64), 64) // 0.00015, not 0.00015000000000000001
			if v > 30 {
				return b
			}
			b = append(b, v)
		}
	}
	return b
}()

// Options bound the labels and choose the histogram kinds.
type Options struct {
	// TopTopics, TopClients and TopPartitions are the label values named
	// (the rest are "other"). Defaults 50, 50 and 500.
	TopTopics, TopClients, TopPartitions int
	// PartitionLabel adds a partition label to the request latency
	// histogram (a request is then observed once per partition it names).
	PartitionLabel bool
	// NativeHistograms also offers Prometheus native histograms (bucket
	// factor 1.1) next to the classic buckets; a scraper that asks for
	// the protobuf format gets them.
	NativeHistograms bool
}

func (o Options) withDefaults() Options {
	if o.TopTopics <= 0 {
		o.TopTopics = 50
	}
	if o.TopClients <= 0 {
		o.TopClients = 50
	}
	if o.TopPartitions <= 0 {
		o.TopPartitions = 500
	}
	return o
}

// Set holds the metrics the agent exports. Its methods are safe for
// concurrent use: requests come from the capture, writes from the tracer.
type Set struct {
	opts Options

	reqDuration  *prometheus.HistogramVec // api, topic[, partition]
	requests     *prometheus.CounterVec   // api, topic, client_id
	records      *prometheus.CounterVec   // api, topic, client_id
	recordBytes  *prometheus.CounterVec   // api, topic, client_id
	reqBytes     *prometheus.CounterVec   // api, client_id
	respBytes    *prometheus.CounterVec   // api, client_id
	errors       *prometheus.CounterVec   // api, topic, error
	unanswered   *prometheus.CounterVec   // api
	writeLatency *prometheus.HistogramVec // topic, partition, op
	writeBytes   *prometheus.CounterVec   // topic, partition, op
	writeErrors  *prometheus.CounterVec   // topic, op
	fsSync       *prometheus.HistogramVec // device
	journal      *prometheus.HistogramVec // device, kind
	blockIO      *prometheus.HistogramVec // device, op
	blockBytes   *prometheus.CounterVec   // device, op
	runDelay     *prometheus.HistogramVec // thread
	throttled    *prometheus.CounterVec   // cgroup

	mu         sync.Mutex
	topics     *topN
	clients    *topN
	partitions *topN // keys "topic\x00partition"
	cache      seriesCache
	scratch    requestScratch
	// lastClientID is the last request's client id and lastClientLabel
	// its label: a connection's requests carry one string, compared by
	// pointer, where cleaning it scans every byte.
	lastClientID, lastClientLabel string
}

// requestScratch is Request's working space, reused (under Set's lock) so
// that a request allocates nothing.
type requestScratch struct {
	topics  []topicTraffic
	topicOf []int32 // by partition: its index in topics
}

// New creates the metrics and registers them with reg.
func New(reg prometheus.Registerer, o Options) (*Set, error) {
	o = o.withDefaults()
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		ho := prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: LatencyBuckets}
		if o.NativeHistograms {
			ho.NativeHistogramBucketFactor = 1.1
			ho.NativeHistogramMaxBucketNumber = 160
		}
		return prometheus.NewHistogramVec(ho, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	latLabels := []string{"api", "topic"}
	if o.PartitionLabel {
		latLabels = append(latLabels, "partition")
	}
	s := &Set{
		opts: o,
		reqDuration: hist("request_duration_seconds",
			"Time from a request's first packet to its response's last, as seen on the wire; once per topic the request names (\"\" for none).", latLabels...),
		requests: counter("requests_total",
			"Requests seen, once per topic the request names (\"\" for none).", "api", "topic", "client_id"),
		records: counter("records_total",
			"Records in produce requests and fetch responses, by topic.", "api", "topic", "client_id"),
		recordBytes: counter("record_bytes_total",
			"Record batch bytes in produce requests and fetch responses, by topic.", "api", "topic", "client_id"),
		reqBytes: counter("request_bytes_total",
			"Request frame bytes (size prefix included).", "api", "client_id"),
		respBytes: counter("response_bytes_total",
			"Response frame bytes (size prefix included).", "api", "client_id"),
		errors: counter("request_errors_total",
			"Error codes in responses, by Kafka error name: the request's own and each partition's.", "api", "topic", "error"),
		unanswered: counter("unanswered_requests_total",
			"Requests that got no response: acks=0 produce requests, and requests whose connection ended first.", "api"),
		writeLatency: hist("write_duration_seconds",
			"Latency of the broker's write and fsync system calls on its segment files.", "topic", "partition", "op"),
		writeBytes: counter("write_bytes_total",
			"Bytes the broker wrote to its segment files.", "topic", "partition", "op"),
		writeErrors: counter("write_errors_total",
			"Failed write and fsync calls on segment files.", "topic", "op"),
		fsSync: hist("fs_sync_duration_seconds",
			"Latency of ext4 file syncs (ext4_sync_file) of broker files, by device.", "device"),
		journal: hist("journal_commit_duration_seconds",
			"Latency of ext4 jbd2 journal commits and XFS log writes, by device.", "device", "kind"),
		blockIO: hist("block_io_duration_seconds",
			"Latency of block requests on the log dirs' devices, from issue to completion.", "device", "op"),
		blockBytes: counter("block_io_bytes_total",
			"Bytes of completed block requests on the log dirs' devices.", "device", "op"),
		runDelay: hist("run_delay_seconds",
			"The broker threads' waits for a CPU (runnable, not running) of at least the tracer's minimum, by thread class: handler, network, jvm (VM Thread, GC workers) or other.", "thread"),
		throttled: counter("cgroup_throttled_seconds_total",
			"Time the broker's cgroup (or an ancestor) was throttled by its CPU quota, by cgroup.", "cgroup"),

		topics:     newTopN(o.TopTopics),
		clients:    newTopN(o.TopClients),
		partitions: newTopN(o.TopPartitions),
		cache:      newSeriesCache(),
	}
	for _, c := range s.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Set) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.reqDuration, s.requests, s.records, s.recordBytes, s.reqBytes, s.respBytes,
		s.errors, s.unanswered, s.writeLatency, s.writeBytes, s.writeErrors, s.fsSync, s.journal, s.blockIO, s.blockBytes,
		s.runDelay, s.throttled}
}

// maxLabelBytes caps a label value from the wire.
const maxLabelBytes = 128

// cleanLabel makes a value from the wire a label value: valid UTF-8 (an
// invalid byte becomes U+FFFD, since client_golang refuses invalid
// UTF-8), control characters (C0, DEL and C1) escaped as \xNN, at most
// maxLabelBytes (cut at a character's boundary).
func cleanLabel(v string) string {
	if isCleanLabel(v) {
		return v
	}
	var b strings.Builder
	for _, r := range v { // an invalid byte is utf8.RuneError, U+FFFD
		piece := string(r)
		if unicode.IsControl(r) { // all below 0x100: two hex digits
			piece = `\x` + strconv.FormatInt(int64(r)+0x100, 16)[1:]
		}
		if b.Len()+len(piece) > maxLabelBytes {
			break
		}
		b.WriteString(piece)
	}
	return b.String()
}

// isCleanLabel reports whether v is a label value as it is: short,
// printable ASCII. It runs for every client id and topic of every
// request, so it tests each byte once: c-0x20 wraps around for bytes
// below 0x20, and 0x7f (DEL) and above are at least 0x5f after it.
func isCleanLabel(v string) bool {
	if len(v) > maxLabelBytes {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i]-0x20 >= 0x7f-0x20 {
			return false
		}
	}
	return true
}

// apiLabel bounds the api label: an unknown key would otherwise make a
// new value per key number.
func apiLabel(r *event.Request) string {
	if strings.HasPrefix(r.API, "unknown") {
		return "unknown"
	}
	return r.API
}

// UnknownErrorCode is the error label of a code franz-go's kerr does not
// know: codes come from the wire, and a label per number would be
// unbounded.
const UnknownErrorCode = "UNKNOWN_CODE"

// errorName is a Kafka error code's name as franz-go's kerr has it, e.g.
// NOT_LEADER_FOR_PARTITION for 6.
func errorName(code int16) string {
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && (err != kerr.UnknownServerError || code == -1) {
		return err.Message
	}
	return UnknownErrorCode
}

// Request counts one decoded request. Its labels are resolved through
// the series cache: the topN tables are counted exactly as before, in the
// same order (the client, each topic with its bytes, then each partition
// with its topic again), so the same keys are named and evicted.
func (s *Set) Request(r *event.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	api := s.apiFor(r)
	if r.ClientID != s.lastClientID { // their zero values agree: cleanLabel("") is ""
		s.lastClientID, s.lastClientLabel = r.ClientID, cleanLabel(r.ClientID)
	}
	client := s.clientRef(s.clients.find(s.lastClientLabel, float64(r.RequestBytes+r.ResponseBytes)))
	cs := seriesOf(client, api)
	s.addRequestBytes(cs, api, client, r.RequestBytes)
	if r.ResponseBytes > 0 {
		s.addResponseBytes(cs, api, client, r.ResponseBytes)
	}
	answered := !r.End.IsZero()
	if !answered {
		s.addUnanswered(api)
	}
	seconds := r.End.Sub(r.Arrival).Seconds()
	if r.ErrorCode != nil && *r.ErrorCode != 0 {
		s.errorsFor(api, s.cache.noTopic, *r.ErrorCode).Inc()
	}

	// The topics the request names, in order, each once, with their
	// records and bytes; a request with none is counted under topic "".
	topics, topicOf := s.groupTopics(r.Partitions)
	for i := range topics {
		t := &topics[i]
		topic := s.cache.noTopic
		if t.name != "" {
			t.slot = s.topics.find(t.name, float64(t.bytes+1))
			topic = s.topicRef(t.slot)
		}
		rs := s.reqSeriesFor(seriesOf(topic, api), api, topic, client)
		rs.requests.Inc()
		if t.records > 0 {
			rs.records.Add(float64(t.records))
		}
		if t.bytes > 0 {
			rs.recordBytes.Add(float64(t.bytes))
		}
		if answered && !s.opts.PartitionLabel {
			s.topicLatency(api, topic).Observe(seconds)
		}
	}
	if answered && s.opts.PartitionLabel && len(r.Partitions) == 0 {
		s.topicLatency(api, s.cache.noTopic).Observe(seconds) // topic and partition ""
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		t := &topics[topicOf[i]]
		t.slot = s.countTopic(t, 0)
		topic, partition := s.partitionRefs(t.slot, p.Partition, 0)
		if answered && s.opts.PartitionLabel {
			s.latency(api, topic, partition).Observe(seconds)
		}
		if p.ErrorCode != 0 {
			s.errorsFor(api, topic, p.ErrorCode).Inc()
		}
	}
}

// countTopic counts weight for a topic of the request again: by its slot
// when the traffic loop counted it (a topic named "" was not), by its
// name otherwise.
func (s *Set) countTopic(t *topicTraffic, weight float64) *slot {
	if t.slot == nil {
		return s.topics.find(t.name, weight)
	}
	return s.topics.again(t.slot, weight)
}

// topicTraffic is one topic of a request: its name (cleaned), records
// and bytes, and its slot in the topics table once counted.
type topicTraffic struct {
	name           string
	records, bytes int
	slot           *slot
}

// trafficByTopic appends to out each topic of ps once (named by id when
// the name is unknown), in order of first appearance, with its records
// and bytes summed; a single entry "" when ps is empty.
func trafficByTopic(ps []event.Partition, out []topicTraffic) []topicTraffic {
	out, _ = groupByTopic(ps, out, nil)
	return out
}

// groupByTopic is trafficByTopic that also appends to topicOf, for each
// partition, its topic's index in out, so that the partitions need not be
// cleaned and matched to their topic again.
func groupByTopic(ps []event.Partition, out []topicTraffic, topicOf []int32) ([]topicTraffic, []int32) {
	for i := range ps {
		p := &ps[i]
		name := p.Topic
		if name == "" {
			name = p.TopicID
		}
		name = cleanLabel(name)
		j := slices.IndexFunc(out, func(t topicTraffic) bool { return t.name == name })
		if j < 0 {
			out = append(out, topicTraffic{name: name})
			j = len(out) - 1
		}
		out[j].records += p.Records
		out[j].bytes += p.Bytes
		topicOf = append(topicOf, int32(j))
	}
	if len(out) == 0 {
		out = append(out, topicTraffic{})
	}
	return out, topicOf
}

// groupTopics is groupByTopic into the Set's scratch space.
func (s *Set) groupTopics(ps []event.Partition) ([]topicTraffic, []int32) {
	sc := &s.scratch
	sc.topics, sc.topicOf = groupByTopic(ps, sc.topics[:0], sc.topicOf[:0])
	return sc.topics, sc.topicOf
}

// Write counts one traced write or fsync call on a segment file.
func (s *Set) Write(w *event.Write) {
	s.mu.Lock()
	defer s.mu.Unlock()
	weight := float64(w.Bytes)
	topic, partition := s.partitionRefs(s.topics.find(cleanLabel(w.Topic), weight), w.Partition, weight)
	op := cleanLabel(w.Op)
	ws := s.writeSeriesFor(topic, partition, op)
	ws.latency.Observe(w.End.Sub(w.Start).Seconds())
	if w.Bytes > 0 {
		ws.bytes.Add(float64(w.Bytes))
	}
	if w.Error != "" {
		s.writeErrors.WithLabelValues(topic.key, op).Inc()
	}
}

// Sync counts one ext4 file sync.
func (s *Set) Sync(f *event.FileSync) {
	s.fsSync.WithLabelValues(f.Dev).Observe(f.End.Sub(f.Start).Seconds())
}

// Commit counts one journal commit or XFS log write.
func (s *Set) Commit(c *event.JournalCommit) {
	s.journal.WithLabelValues(c.Dev, c.Kind).Observe(c.End.Sub(c.Start).Seconds())
}

// Block counts one block request.
func (s *Set) Block(b *event.BlockIO) {
	s.blockIO.WithLabelValues(b.Dev, b.Op).Observe(b.End.Sub(b.Start).Seconds())
	if b.Bytes > 0 {
		s.blockBytes.WithLabelValues(b.Dev, b.Op).Add(float64(b.Bytes))
	}
}

// Thread classes of RunDelay.
const (
	ThreadHandler = "handler"
	ThreadNetwork = "network"
	ThreadJVM     = "jvm"
	ThreadOther   = "other"
)

// ThreadClass is the class of a broker thread by its name (a comm, cut
// to 15 bytes): the JVM's stop-the-world threads, the request handlers
// and the network threads, whose comm is the handlers': network says the
// thread serves connections.
func ThreadClass(name string, network bool) string {
	switch {
	case network:
		return ThreadNetwork
	case event.IsStopTheWorldThread(name):
		return ThreadJVM
	case event.MaybeRequestHandler(name):
		return ThreadHandler
	}
	return ThreadOther
}

// RunDelay counts one broker thread's wait for a CPU; class is one of the
// Thread* classes (the caller knows which threads serve connections).
func (s *Set) RunDelay(d *event.RunDelay, class string) {
	s.runDelay.WithLabelValues(class).Observe(d.End.Sub(d.Start).Seconds())
}

// Throttle counts one sample of CPU-quota throttling.
func (s *Set) Throttle(t *event.CPUThrottle) {
	s.throttled.WithLabelValues(cleanLabel(t.Cgroup)).Add(t.ThrottledMs / 1000)
}

// Rerank re-elects the top topics, partitions and clients by their recent
// traffic and deletes the series of the values that lost their place
// (their traffic is "other" from now on). The agent calls it every
// minute.
func (s *Set) Rerank() {
	s.mu.Lock()
	defer s.mu.Unlock()
	named := []map[string]*slot{s.topics.named, s.clients.named, s.partitions.named} // before the rerank
	demotedTopics := s.topics.rerank()
	demotedClients := s.clients.rerank()
	demotedParts := s.partitions.rerank()
	if len(demotedTopics)+len(demotedClients)+len(demotedParts) == 0 {
		return
	}
	for _, t := range demotedTopics {
		for _, v := range []*prometheus.MetricVec{s.reqDuration.MetricVec, s.requests.MetricVec, s.records.MetricVec,
			s.recordBytes.MetricVec, s.errors.MetricVec, s.writeLatency.MetricVec, s.writeBytes.MetricVec, s.writeErrors.MetricVec} {
			v.DeletePartialMatch(prometheus.Labels{"topic": t})
		}
	}
	for _, c := range demotedClients {
		for _, v := range []*prometheus.MetricVec{s.requests.MetricVec, s.records.MetricVec, s.recordBytes.MetricVec,
			s.reqBytes.MetricVec, s.respBytes.MetricVec} {
			v.DeletePartialMatch(prometheus.Labels{"client_id": c})
		}
	}
	for _, key := range demotedParts {
		topic, partition, _ := strings.Cut(key, "\x00")
		labels := prometheus.Labels{"topic": topic, "partition": partition}
		s.writeLatency.DeletePartialMatch(labels)
		s.writeBytes.DeletePartialMatch(labels)
		if s.opts.PartitionLabel {
			s.reqDuration.DeletePartialMatch(labels)
		}
	}
	s.cache.reset(named...)
}
