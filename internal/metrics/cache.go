package metrics

import (
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/event"
)

// seriesCache makes a request like one seen before cost no label string,
// no label hashing in client_golang and no lookup by a string but its
// client id's and each of its topics' names (once per request): the
// series (prometheus children) Request resolved hang off the slots of
// their label values, by api.
//
// Label values are slots (see topN): a named key's label is its own slot,
// an unnamed key's one of the shared slots otherClient and otherTopic, and
// the topic of a request that names none is noTopic. Whether a key is
// named is read from its slot at every event, so a key promoted between
// reranks uses its own series at once. Only a rerank that demotes a key
// deletes series; then the cache is emptied (reset).
//
// Bounds: series hang only off named slots (at most the top N of each
// label: names are only taken away by the reranks that reset the cache)
// and the shared slots, and a topic's partitions are indexed up to
// maxIndexedPartition, so the cache holds no more than the series it
// names plus those indexes.
type seriesCache struct {
	otherClient, otherTopic, noTopic *slot

	byKey [apiKeys]wireAPI // by event.Request.APIKey: no hashing of the api name
	apis  map[string]*apiEntry

	// Errors and writes by small keys; errors are rare, writes come from
	// the tracer with their own labels.
	errs   map[errKey]prometheus.Counter
	writes map[writeKey]*writeSeries
}

// apiKeys is the API keys looked up in an array; Kafka's go to 90 or so.
const apiKeys = 128

// maxIndexedPartition bounds a topic's index of its partitions' slots, a
// slice by partition number: at most 8 KiB per named topic, and the slots
// it holds after they left the table (about 80 bytes each), under 100 KiB.
// A partition above it is found by its key's string, as before the cache.
const maxIndexedPartition = 1023

// apiEntry is one api label: its index in the slots' series and its
// series with no other label (never deleted, so never reset).
type apiEntry struct {
	id         int
	label      string
	unanswered prometheus.Counter // made at its first use, as every series is
}

// wireAPI is the api of an API key as the decoder named it last.
type wireAPI struct {
	name string // event.Request.API
	api  *apiEntry
}

// slotSeries is the cache of one label value.
type slotSeries struct {
	byAPI []*apiSeries // by apiEntry.id
	// parts are a named topic's partitions' slots by number: the slot
	// found last, used while it is counted.
	parts []*slot
}

// apiSeries are one label value's series for one api; which depends on
// the label the value is of. A client's: its request and response bytes.
// A topic's: its latency (with Options.PartitionLabel, that of its
// partitions labelled other, or "" for noTopic), and its requests,
// records and bytes by client. A partition's: its latency.
type apiSeries struct {
	reqBytes, respBytes prometheus.Counter
	latency             prometheus.Observer
	reqs                map[*slot]*reqSeries
}

// reqSeries are made together, as they always were.
type reqSeries struct {
	requests, records, recordBytes prometheus.Counter
}

// errKey's code is one error name's: unknown codes share unknownCode.
type errKey struct {
	api   *apiEntry
	topic *slot
	code  int16
}

// unknownCode stands for every code errorName calls UnknownErrorCode, so
// that codes from the wire make no more cache entries than series.
const unknownCode = math.MinInt16

// writeKey's partition is nil for other.
type writeKey struct {
	topic, partition *slot
	op               string
}

type writeSeries struct {
	latency prometheus.Observer
	bytes   prometheus.Counter
}

func newSeriesCache() seriesCache {
	return seriesCache{otherClient: &slot{key: Other}, otherTopic: &slot{key: Other}, noTopic: &slot{},
		apis: make(map[string]*apiEntry), errs: make(map[errKey]prometheus.Counter), writes: make(map[writeKey]*writeSeries)}
}

// reset empties the cache of every series a rerank may have deleted:
// named are the slots named before it (every slot with series: only named
// ones get them, and only reranks take names away).
func (c *seriesCache) reset(named ...map[string]*slot) {
	for _, m := range named {
		for _, sl := range m {
			sl.series = nil
		}
	}
	for _, sl := range []*slot{c.otherClient, c.otherTopic, c.noTopic} {
		sl.series = nil
	}
	clear(c.errs)
	clear(c.writes)
}

// clientRef is the label of a client by its slot.
func (s *Set) clientRef(sl *slot) *slot {
	if sl.named {
		return sl
	}
	return s.cache.otherClient
}

// topicRef is the label of a topic by its slot.
func (s *Set) topicRef(sl *slot) *slot {
	if sl.named {
		return sl
	}
	return s.cache.otherTopic
}

// partitionLabel is the label of a partition by its slot (nil: other):
// the number after the topic in its key.
func partitionLabel(ps *slot) string {
	if ps == nil {
		return Other
	}
	return ps.key[strings.LastIndexByte(ps.key, 0)+1:]
}

// apiFor is the api of r, found by its API key while the decoder names
// that key the same (the same string, so comparing is cheap).
func (s *Set) apiFor(r *event.Request) *apiEntry {
	k := int(r.APIKey)
	if k >= 0 && k < apiKeys && s.cache.byKey[k].api != nil && s.cache.byKey[k].name == r.API {
		return s.cache.byKey[k].api
	}
	label := apiLabel(r)
	a := s.cache.apis[label]
	if a == nil {
		a = &apiEntry{id: len(s.cache.apis), label: label}
		s.cache.apis[label] = a
	}
	if k >= 0 && k < apiKeys {
		s.cache.byKey[k] = wireAPI{name: r.API, api: a}
	}
	return a
}

// seriesOf is the cache of the series of ref, a label value, for api.
func seriesOf(ref *slot, api *apiEntry) *apiSeries {
	ss := ref.series
	if ss == nil {
		ss = &slotSeries{}
		ref.series = ss
	}
	if api.id >= len(ss.byAPI) {
		ss.byAPI = append(ss.byAPI, make([]*apiSeries, api.id+1-len(ss.byAPI))...)
	}
	as := ss.byAPI[api.id]
	if as == nil {
		as = &apiSeries{}
		ss.byAPI[api.id] = as
	}
	return as
}

// addUnanswered counts a request of api that got no response.
func (s *Set) addUnanswered(api *apiEntry) {
	if api.unanswered == nil {
		api.unanswered = s.unanswered.WithLabelValues(api.label)
	}
	api.unanswered.Inc()
}

// addRequestBytes counts a request's bytes for api and client.
func (s *Set) addRequestBytes(cs *apiSeries, api *apiEntry, client *slot, bytes int) {
	if cs.reqBytes == nil {
		cs.reqBytes = s.reqBytes.WithLabelValues(api.label, client.key)
	}
	cs.reqBytes.Add(float64(bytes))
}

// addResponseBytes counts a response's bytes for api and client: its
// series is made at the first response.
func (s *Set) addResponseBytes(cs *apiSeries, api *apiEntry, client *slot, bytes int) {
	if cs.respBytes == nil {
		cs.respBytes = s.respBytes.WithLabelValues(api.label, client.key)
	}
	cs.respBytes.Add(float64(bytes))
}

// reqSeriesFor are the request series of api, topic and client; ts is
// topic's cache for api.
func (s *Set) reqSeriesFor(ts *apiSeries, api *apiEntry, topic, client *slot) *reqSeries {
	rs := ts.reqs[client]
	if rs == nil {
		rs = &reqSeries{
			requests:    s.requests.WithLabelValues(api.label, topic.key, client.key),
			records:     s.records.WithLabelValues(api.label, topic.key, client.key),
			recordBytes: s.recordBytes.WithLabelValues(api.label, topic.key, client.key),
		}
		if ts.reqs == nil {
			ts.reqs = make(map[*slot]*reqSeries)
		}
		ts.reqs[client] = rs
	}
	return rs
}

// topicLatency is the latency histogram of api and topic (with
// Options.PartitionLabel, of its partitions labelled other, or "").
func (s *Set) topicLatency(api *apiEntry, topic *slot) prometheus.Observer {
	as := seriesOf(topic, api)
	if as.latency == nil {
		switch {
		case !s.opts.PartitionLabel:
			as.latency = s.reqDuration.WithLabelValues(api.label, topic.key)
		case topic == s.cache.noTopic:
			as.latency = s.reqDuration.WithLabelValues(api.label, "", "")
		default:
			as.latency = s.reqDuration.WithLabelValues(api.label, topic.key, Other)
		}
	}
	return as.latency
}

// latency is the latency histogram of api, topic and partition (nil:
// other) with Options.PartitionLabel.
func (s *Set) latency(api *apiEntry, topic, partition *slot) prometheus.Observer {
	if partition == nil {
		return s.topicLatency(api, topic)
	}
	as := seriesOf(partition, api)
	if as.latency == nil {
		as.latency = s.reqDuration.WithLabelValues(api.label, topic.key, partitionLabel(partition))
	}
	return as.latency
}

// errorsFor is the error counter of api, topic and code's name.
func (s *Set) errorsFor(api *apiEntry, topic *slot, code int16) prometheus.Counter {
	name := errorName(code)
	if name == UnknownErrorCode {
		code = unknownCode
	}
	k := errKey{api, topic, code}
	c, ok := s.cache.errs[k]
	if !ok {
		c = s.errors.WithLabelValues(api.label, topic.key, name)
		s.cache.errs[k] = c
	}
	return c
}

// writeSeriesFor are the write series of topic, partition (nil: other)
// and op, both made at the first write as they always were.
func (s *Set) writeSeriesFor(topic, partition *slot, op string) *writeSeries {
	k := writeKey{topic, partition, op}
	ws := s.cache.writes[k]
	if ws == nil {
		p := partitionLabel(partition)
		ws = &writeSeries{latency: s.writeLatency.WithLabelValues(topic.key, p, op),
			bytes: s.writeBytes.WithLabelValues(topic.key, p, op)}
		s.cache.writes[k] = ws
	}
	return ws
}

// partitionRefs counts weight for partition of the topic whose slot ts
// was just counted, and returns the labels of the topic and of the
// partition (nil: other). When the topic's label is "other" (it is not
// named, or a topic called "other" is), so is the partition's, and the
// partition is not counted, as topicPartition always did.
func (s *Set) partitionRefs(ts *slot, partition int32, weight float64) (topic, part *slot) {
	if !ts.named || ts.key == Other {
		return s.cache.otherTopic, nil
	}
	ps := s.partitionSlot(ts, partition, weight+1)
	if !ps.named {
		return ts, nil
	}
	return ts, ps
}

// partitionSlot counts weight for partition of the named topic ts in the
// partitions table, whose keys are "topic\x00partition": by the topic's
// index while the slot found last is counted, by the key's string (built
// here only) when the partition is new, left the table or is not indexed.
func (s *Set) partitionSlot(ts *slot, partition int32, weight float64) *slot {
	indexed := partition >= 0 && partition <= maxIndexedPartition
	if indexed {
		if ps := indexedPartition(ts, partition); ps != nil && ps.counted {
			s.partitions.add(ps, weight)
			return ps
		}
	}
	ps := s.partitions.find(ts.key+"\x00"+strconv.Itoa(int(partition)), weight)
	if indexed {
		indexPartition(ts, partition, ps)
	}
	return ps
}

// indexedPartition is the slot indexed for partition of topic ts, or nil.
func indexedPartition(ts *slot, partition int32) *slot {
	if ts.series == nil || int(partition) >= len(ts.series.parts) {
		return nil
	}
	return ts.series.parts[partition]
}

// indexPartition indexes ps as the slot of partition of topic ts.
func indexPartition(ts *slot, partition int32, ps *slot) {
	if ts.series == nil {
		ts.series = &slotSeries{}
	}
	parts := ts.series.parts
	if int(partition) >= len(parts) {
		parts = append(parts, make([]*slot, int(partition)+1-len(parts))...)
		ts.series.parts = parts
	}
	parts[partition] = ps
}
