package metrics

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/event"
)

// refSet is Set's request and write accounting as it was before the
// series cache (commit 8dca453): every event resolves its labels through
// string-keyed top-N tables and WithLabelValues. It is kept, frozen, only
// as the reference TestCacheMatchesReference compares Set against: the
// same events must give the same series with the same values.
type refSet struct {
	partitionLabel bool

	reqDuration  *prometheus.HistogramVec
	requests     *prometheus.CounterVec
	records      *prometheus.CounterVec
	recordBytes  *prometheus.CounterVec
	reqBytes     *prometheus.CounterVec
	respBytes    *prometheus.CounterVec
	errors       *prometheus.CounterVec
	unanswered   *prometheus.CounterVec
	writeLatency *prometheus.HistogramVec
	writeBytes   *prometheus.CounterVec
	writeErrors  *prometheus.CounterVec

	topics, clients, partitions *refTopN
}

// newRefSet registers the reference's metrics, under Set's names, with reg.
func newRefSet(reg prometheus.Registerer, o Options) *refSet {
	o = o.withDefaults()
	hist := func(name string, labels ...string) *prometheus.HistogramVec {
		ho := prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: "h", Buckets: LatencyBuckets}
		if o.NativeHistograms {
			ho.NativeHistogramBucketFactor = 1.1
			ho.NativeHistogramMaxBucketNumber = 160
		}
		return prometheus.NewHistogramVec(ho, labels)
	}
	counter := func(name string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: "h"}, labels)
	}
	latLabels := []string{"api", "topic"}
	if o.PartitionLabel {
		latLabels = append(latLabels, "partition")
	}
	s := &refSet{
		partitionLabel: o.PartitionLabel,
		reqDuration:    hist("request_duration_seconds", latLabels...),
		requests:       counter("requests_total", "api", "topic", "client_id"),
		records:        counter("records_total", "api", "topic", "client_id"),
		recordBytes:    counter("record_bytes_total", "api", "topic", "client_id"),
		reqBytes:       counter("request_bytes_total", "api", "client_id"),
		respBytes:      counter("response_bytes_total", "api", "client_id"),
		errors:         counter("request_errors_total", "api", "topic", "error"),
		unanswered:     counter("unanswered_requests_total", "api"),
		writeLatency:   hist("write_duration_seconds", "topic", "partition", "op"),
		writeBytes:     counter("write_bytes_total", "topic", "partition", "op"),
		writeErrors:    counter("write_errors_total", "topic", "op"),
		topics:         newRefTopN(o.TopTopics),
		clients:        newRefTopN(o.TopClients),
		partitions:     newRefTopN(o.TopPartitions),
	}
	reg.MustRegister(s.reqDuration, s.requests, s.records, s.recordBytes, s.reqBytes, s.respBytes, s.errors,
		s.unanswered, s.writeLatency, s.writeBytes, s.writeErrors)
	return s
}

func (s *refSet) Request(r *event.Request) {
	api := apiLabel(r)
	client := s.clients.label(cleanLabel(r.ClientID), float64(r.RequestBytes+r.ResponseBytes))
	s.reqBytes.WithLabelValues(api, client).Add(float64(r.RequestBytes))
	if r.ResponseBytes > 0 {
		s.respBytes.WithLabelValues(api, client).Add(float64(r.ResponseBytes))
	}
	answered := !r.End.IsZero()
	if !answered {
		s.unanswered.WithLabelValues(api).Inc()
	}
	seconds := r.End.Sub(r.Arrival).Seconds()
	if r.ErrorCode != nil && *r.ErrorCode != 0 {
		s.errors.WithLabelValues(api, "", errorName(*r.ErrorCode)).Inc()
	}
	for _, t := range refTrafficByTopic(r.Partitions) {
		topic := t.name
		if topic != "" {
			topic = s.topics.label(topic, float64(t.bytes+1))
		}
		// The three series are made together, as reqSeriesFor did.
		records, bytes := s.records.WithLabelValues(api, topic, client), s.recordBytes.WithLabelValues(api, topic, client)
		s.requests.WithLabelValues(api, topic, client).Inc()
		if t.records > 0 {
			records.Add(float64(t.records))
		}
		if t.bytes > 0 {
			bytes.Add(float64(t.bytes))
		}
		if answered && !s.partitionLabel {
			s.reqDuration.WithLabelValues(api, topic).Observe(seconds)
		}
	}
	if answered && s.partitionLabel && len(r.Partitions) == 0 {
		s.reqDuration.WithLabelValues(api, "", "").Observe(seconds)
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		topic, partition := s.topicPartition(p.Topic, p.TopicID, p.Partition, 0)
		if answered && s.partitionLabel {
			s.reqDuration.WithLabelValues(api, topic, partition).Observe(seconds)
		}
		if p.ErrorCode != 0 {
			s.errors.WithLabelValues(api, topic, errorName(p.ErrorCode)).Inc()
		}
	}
}

func (s *refSet) topicPartition(topic, topicID string, partition int32, weight float64) (string, string) {
	t := cleanLabel(topic)
	if t == "" {
		t = cleanLabel(topicID)
	}
	t = s.topics.label(t, weight)
	if t == Other {
		return Other, Other
	}
	key := t + "\x00" + strconv.Itoa(int(partition))
	if s.partitions.label(key, weight+1) == Other {
		return t, Other
	}
	return t, strconv.Itoa(int(partition))
}

// refTrafficByTopic is trafficByTopic as it was.
func refTrafficByTopic(ps []event.Partition) []topicTraffic {
	var out []topicTraffic
	for i := range ps {
		name := ps[i].Topic
		if name == "" {
			name = ps[i].TopicID
		}
		name = cleanLabel(name)
		j := slices.IndexFunc(out, func(t topicTraffic) bool { return t.name == name })
		if j < 0 {
			out = append(out, topicTraffic{name: name})
			j = len(out) - 1
		}
		out[j].records += ps[i].Records
		out[j].bytes += ps[i].Bytes
	}
	if len(out) == 0 {
		out = append(out, topicTraffic{})
	}
	return out
}

func (s *refSet) Write(w *event.Write) {
	topic, partition := s.topicPartition(w.Topic, "", w.Partition, float64(w.Bytes))
	op := cleanLabel(w.Op)
	s.writeLatency.WithLabelValues(topic, partition, op).Observe(w.End.Sub(w.Start).Seconds())
	bytes := s.writeBytes.WithLabelValues(topic, partition, op) // made with the latency's, as Set does
	if w.Bytes > 0 {
		bytes.Add(float64(w.Bytes))
	}
	if w.Error != "" {
		s.writeErrors.WithLabelValues(topic, op).Inc()
	}
}

func (s *refSet) Rerank() {
	demotedTopics := s.topics.rerank()
	demotedClients := s.clients.rerank()
	demotedParts := s.partitions.rerank()
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
		if s.partitionLabel {
			s.reqDuration.DeletePartialMatch(labels)
		}
	}
}

// refTopN is topN as it was: string-keyed maps of counts and names (with
// evictSmallest's ties broken by key, as topN's now are, so that the two
// evict the same key).
type refTopN struct {
	n, size int
	counts  map[string]float64
	named   map[string]struct{}
}

func newRefTopN(n int) *refTopN {
	return &refTopN{n: n, size: max(8*n, 256), counts: make(map[string]float64), named: make(map[string]struct{})}
}

func (t *refTopN) label(key string, weight float64) string {
	if c, ok := t.counts[key]; ok {
		t.counts[key] = c + weight
	} else {
		if len(t.counts) >= t.size {
			t.evictSmallest()
		}
		t.counts[key] = weight
	}
	if _, ok := t.named[key]; ok {
		return key
	}
	if len(t.named) < t.n {
		t.named[key] = struct{}{}
		return key
	}
	return Other
}

func (t *refTopN) evictSmallest() {
	var victim string
	found := false
	var least float64
	for k, c := range t.counts {
		if _, isNamed := t.named[k]; isNamed {
			continue
		}
		if !found || c < least || c == least && k < victim {
			victim, least, found = k, c, true
		}
	}
	if found {
		delete(t.counts, victim)
	}
}

func (t *refTopN) rerank() (demoted []string) {
	type kc struct {
		key   string
		count float64
	}
	all := make([]kc, 0, len(t.counts))
	for k, c := range t.counts {
		all = append(all, kc{k, c})
	}
	slices.SortFunc(all, func(a, b kc) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	top := make(map[string]struct{}, t.n)
	for _, e := range all[:min(t.n, len(all))] {
		top[e.key] = struct{}{}
	}
	for k := range t.named {
		if _, keep := top[k]; !keep {
			demoted = append(demoted, k)
		}
	}
	slices.Sort(demoted)
	t.named = top
	for k, c := range t.counts {
		if c /= 2; c < 1e-3 {
			delete(t.counts, k)
		} else {
			t.counts[k] = c
		}
	}
	return demoted
}
