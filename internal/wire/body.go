package wire

import (
	"errors"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// BatchSummarizer counts the records in a sequence of record batches and
// returns the values of the message-id header. records.Decoder implements
// it; the wire decoder only needs this much of it.
type BatchSummarizer interface {
	MessageIDs(batches []byte, idHeader string) (records int, ids []string, err error)
}

// decodeRequestBody decodes the bodies of the requests whose contents the
// output needs (produce, fetch) and checks any other body against kmsg
// (which is what rejects a false start after resynchronisation). It
// reports whether a response is expected and whether the body decoded.
func (d *Decoder) decodeRequestBody(p *pending, body []byte) (expectResponse, ok bool) {
	switch p.header.key {
	case 0:
		return d.decodeProduceRequest(p, body)
	case 1:
		return true, d.decodeFetchRequest(p, body)
	case 18:
		// A client may ask for an ApiVersions version the broker (and
		// kmsg) does not know: its body is never checked.
		d.decodeAPIVersionsRequest(p, body)
		return true, true
	}
	req := kmsg.RequestForKey(p.header.key)
	req.SetVersion(p.header.version)
	if req.ReadFrom(body) != nil {
		return true, false
	}
	d.requestDetails(p.ev, req)
	return true, true
}

// decodeProduceRequest takes a produce request's acks and, per partition,
// its bytes, record count, message ids (or holds its records for them)
// and batch statistics. A response is expected unless acks=0.
func (d *Decoder) decodeProduceRequest(p *pending, body []byte) (expectResponse, ok bool) {
	ev := p.ev
	req := &d.produceReq
	*req = kmsg.ProduceRequest{Topics: req.Topics[:0]}
	req.SetVersion(p.header.version)
	if err := req.UnsafeReadFrom(body); err != nil {
		return true, false
	}
	ev.Acks = d.int16s.one(req.Acks)
	if req.TransactionID != nil {
		ev.Producer.TransactionalID = d.clientString(*req.TransactionID)
	}
	ev.Partitions = slices.Grow(ev.Partitions, requestPartitions(req.Topics, func(t *kmsg.ProduceRequestTopic) int { return len(t.Partitions) }))
	header := d.cfg.MessageIDHeader
	if d.holdsIDs() {
		header = "" // counted from the batch headers; ids if slow
		if req.Acks != 0 {
			p.held = d.holdProduceRecords(req)
		}
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		topic := d.names.intern(t.Topic)
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			part := event.Partition{Topic: topic, Partition: tp.Partition, Bytes: len(tp.Records)}
			d.resolveTopic(&part, t.TopicID)
			d.summarizeProduce(ev, &part, tp.Records, header)
			if d.cfg.BatchStats {
				d.batchStats(&part, tp.Records)
			}
			ev.Partitions = append(ev.Partitions, part)
		}
	}
	return req.Acks != 0, true
}

// decodeFetchRequest takes a fetch request's replica id (a follower's
// fetch, or -1 for a consumer's) and each partition's fetch offset.
func (d *Decoder) decodeFetchRequest(p *pending, body []byte) bool {
	ev := p.ev
	req := &d.fetchReq
	*req = kmsg.FetchRequest{Topics: req.Topics[:0]}
	req.SetVersion(p.header.version)
	if err := req.UnsafeReadFrom(body); err != nil {
		return false
	}
	// v15+ moved the fetching replica's id into a tagged field
	// (KIP-903); readFrom defaults both to -1 (a consumer).
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	ev.ReplicaID = d.int32s.one(replica)
	ev.Fetch = event.FetchParams{
		MaxWaitMs: req.MaxWaitMillis, MinBytes: req.MinBytes, MaxBytes: req.MaxBytes,
		IsolationLevel: req.IsolationLevel, SessionID: req.SessionID, SessionEpoch: req.SessionEpoch,
	}
	if req.Version < 3 {
		ev.Fetch.MaxBytes = 0 // kmsg's default, not the client's
	}
	if req.Version < 7 {
		ev.Fetch.SessionID, ev.Fetch.SessionEpoch = 0, 0
	}
	n := requestPartitions(req.Topics, func(t *kmsg.FetchRequestTopic) int { return len(t.Partitions) })
	offsets := d.int64s.take(n)
	ev.Partitions = slices.Grow(ev.Partitions, n)
	for i := range req.Topics {
		t := &req.Topics[i]
		topic := d.names.intern(t.Topic)
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			offsets = append(offsets, tp.FetchOffset)
			part := event.Partition{Topic: topic, Partition: tp.Partition, FetchOffset: &offsets[len(offsets)-1]}
			d.resolveTopic(&part, t.TopicID)
			ev.Partitions = append(ev.Partitions, part)
		}
	}
	return true
}

// requestPartitions counts the partitions of decoded topics: the
// capacity an event's partitions are allocated with, once.
func requestPartitions[T any](topics []T, partitions func(*T) int) int {
	n := 0
	for i := range topics {
		n += partitions(&topics[i])
	}
	return n
}

// summarize fills a partition's record count and the message ids in
// header ("" for none) from its record batches.
func (d *Decoder) summarize(part *event.Partition, batches []byte, header string) {
	if len(batches) == 0 || d.batches == nil {
		return
	}
	n, ids, err := d.batches.MessageIDs(batches, header)
	d.setRecords(part, n, ids, err)
}

// produceSummarizer is what a BatchSummarizer also implements to read a
// produce partition's records, ids and batch headers in one walk over
// its batches (records.Decoder does).
type produceSummarizer interface {
	SummarizeProduce(batches []byte, header string) records.ProduceSummary
}

// summarizeProduce is summarize for a produce partition, adding its
// batch headers to the request's producer summary when the summarizer
// reads them.
func (d *Decoder) summarizeProduce(ev *event.Request, part *event.Partition, batches []byte, header string) {
	ps, ok := d.batches.(produceSummarizer)
	if !ok {
		d.summarize(part, batches, header)
		return
	}
	if len(batches) == 0 {
		return
	}
	if d.cfg.Skip.Has(ProducerHeaders) {
		d.summarizeProduceRecords(part, batches, header)
		return
	}
	s := ps.SummarizeProduce(batches, header)
	d.setRecords(part, s.Records, s.IDs, s.IDsErr)
	d.addProduceHeaders(ev, part, s.Headers, s.HeadersErr)
}

// headerSummarizer is what a BatchSummarizer also implements to read
// batch headers alone (records.Decoder does).
type headerSummarizer interface {
	SummarizeHeaders(batches []byte) (records.HeaderSummary, error)
}

// summarizeProduceRecords is summarizeProduce without the producer's
// batch headers (Config.Skip): the walk over the batches stops at the
// first error instead of reading the headers after it. A partition whose
// first batch header is malformed is counted in BatchErrors once more, as
// addProduceHeaders counts it, so that the counter says the same with the
// headers skipped; that second look is on the error path only.
func (d *Decoder) summarizeProduceRecords(part *event.Partition, batches []byte, header string) {
	n, ids, err := d.batches.MessageIDs(batches, header)
	d.setRecords(part, n, ids, err)
	if err == nil || n != 0 {
		return
	}
	if hs, ok := d.batches.(headerSummarizer); ok {
		if s, herr := hs.SummarizeHeaders(batches); s.Batches == 0 && herr != nil {
			d.stats.BatchErrors++
		}
	}
}

// setRecords fills a partition's record count and ids from what its
// batches gave, counting damage.
func (d *Decoder) setRecords(part *event.Partition, n int, ids []string, err error) {
	if len(ids) > d.cfg.MaxMessageIDs {
		ids = ids[:d.cfg.MaxMessageIDs]
	}
	part.Records, part.MessageIDs = n, ids
	// A fetch response may end with a partial batch: that is the
	// protocol, not damage.
	if err != nil && !errors.Is(err, records.ErrTruncated) {
		d.stats.BatchErrors++
	}
}

// batchStatser is what a BatchSummarizer also implements to measure
// batches by size (records.Decoder does).
type batchStatser interface {
	Stats(batches []byte) (records.Stats, error)
}

// batchStats fills a produce partition's BatchStats, when the summarizer
// can measure batches. Batches that fail to decode leave it nil (summarize
// counts the error).
func (d *Decoder) batchStats(part *event.Partition, batches []byte) {
	bs, ok := d.batches.(batchStatser)
	if !ok || len(batches) == 0 {
		return
	}
	s, err := bs.Stats(batches)
	if err != nil || s.Batches == 0 {
		return
	}
	part.BatchStats = &event.BatchStats{
		Batches: s.Batches, Magic: s.Magic, Compressed: s.Compressed,
		RecordsBytes: s.RecordsBytes, UncompressedBytes: s.UncompressedBytes,
		KeyBytes: s.KeyBytes, NullKeys: s.NullKeys, ValueBytes: s.ValueBytes,
		Headers: s.Headers, HeaderBytes: s.HeaderBytes, TimestampSpanMs: s.TimestampSpanMs,
	}
}

// decodeResponseBody decodes a response body and merges what it says into
// the request event: produce, fetch and metadata responses field by
// field, any other through kmsg's generic response.
func (d *Decoder) decodeResponseBody(p *pending, body []byte) bool {
	if responseIsFlexible(&p.header) {
		var ok bool
		if body, ok = skipTags(body); !ok {
			return false
		}
	}
	switch p.header.key {
	case 0:
		return d.decodeProduceResponse(p, body)
	case 1:
		return d.decodeFetchResponse(p, body)
	case 3:
		return d.decodeMetadataResponse(p, body)
	}
	return d.decodeOtherResponse(p, body)
}

// decodeProduceResponse merges a produce response into its request's
// partitions: each one's error code and base offset.
func (d *Decoder) decodeProduceResponse(p *pending, body []byte) bool {
	ev := p.ev
	resp := &d.produceResp
	*resp = kmsg.ProduceResponse{Topics: resp.Topics[:0]}
	resp.SetVersion(p.header.version)
	if err := resp.UnsafeReadFrom(body); err != nil {
		return false
	}
	ev.ThrottleMs = resp.ThrottleMillis
	var offsets []int64 // the base offsets, from the slab
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			part := d.findPartition(ev, t.Topic, t.TopicID, rp.Partition)
			if part == nil {
				continue
			}
			part.ErrorCode = rp.ErrorCode
			// A partition answered twice keeps its first offset.
			if rp.ErrorCode != 0 || rp.BaseOffset < 0 || part.BaseOffset != nil {
				continue
			}
			if offsets == nil {
				// Sized by the request's partitions, which bound the
				// ones an offset is kept for, not by the response.
				offsets = d.int64s.take(len(ev.Partitions))
			}
			offsets = append(offsets, rp.BaseOffset)
			part.BaseOffset = &offsets[len(offsets)-1]
		}
	}
	return true
}

// decodeFetchResponse merges a fetch response into its request: the
// top-level error, and per partition what mergeFetchPartition takes.
func (d *Decoder) decodeFetchResponse(p *pending, body []byte) bool {
	ev := p.ev
	resp := &d.fetchResp
	*resp = kmsg.FetchResponse{Topics: resp.Topics[:0]}
	resp.SetVersion(p.header.version)
	if err := resp.UnsafeReadFrom(body); err != nil {
		return false
	}
	ev.ThrottleMs = resp.ThrottleMillis
	if resp.Version >= 7 {
		ev.ErrorCode = d.int16s.one(resp.ErrorCode)
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			d.mergeFetchPartition(ev, resp.Version, t, &t.Partitions[j])
		}
	}
	return true
}

// mergeFetchPartition merges one partition of a fetch response into ev:
// its error code, bytes, records and message ids and, answered without
// error, its high watermark, log start offset and (unless Config.Skip has
// FetchExtent) the offsets and times of the batches it returned. A partition answered twice (no broker does)
// is what its last answer says, whole, so that its values never
// contradict its error code.
func (d *Decoder) mergeFetchPartition(ev *event.Request, version int16, t *kmsg.FetchResponseTopic, rp *kmsg.FetchResponseTopicPartition) {
	part := d.fetchPartition(ev, t, rp.Partition)
	part.ErrorCode = rp.ErrorCode
	part.Bytes, part.Records, part.MessageIDs = len(rp.RecordBatches), 0, nil
	header := d.cfg.MessageIDHeader
	if d.cfg.ProduceIDsOnly {
		header = ""
	}
	var extent records.Extent
	if d.cfg.Skip.Has(FetchExtent) {
		d.summarize(part, rp.RecordBatches, header)
	} else {
		extent = d.summarizeFetch(part, rp.RecordBatches, header)
	}
	part.HighWatermark, part.LogStartOffset = nil, nil
	part.FirstOffset, part.LastOffset, part.FirstTimestamp, part.MaxTimestamp = nil, nil, nil, nil
	if rp.ErrorCode != 0 {
		return
	}
	part.HighWatermark = d.nonNegative(rp.HighWatermark)
	if version >= 5 { // kmsg's default before, not the broker's
		part.LogStartOffset = d.nonNegative(rp.LogStartOffset)
	}
	d.setExtent(part, extent)
}

// fetchSummarizer is what a BatchSummarizer also implements to read a
// fetch response partition's records, ids and extent in one walk over
// its batches (records.Decoder does).
type fetchSummarizer interface {
	SummarizeFetch(batches []byte, header string) records.FetchSummary
}

// summarizeFetch is summarize for a fetch response partition, returning
// the extent of its batches too when the summarizer reads it (none, no
// batches, when it does not).
func (d *Decoder) summarizeFetch(part *event.Partition, batches []byte, header string) records.Extent {
	fs, ok := d.batches.(fetchSummarizer)
	if !ok {
		d.summarize(part, batches, header)
		return records.Extent{}
	}
	if len(batches) == 0 {
		return records.Extent{}
	}
	s := fs.SummarizeFetch(batches, header)
	d.setRecords(part, s.Records, s.IDs, s.IDsErr)
	return s.Extent
}

// fetchPartition returns ev's partition that a fetch response answers,
// adding it when the request did not list it: incremental fetch sessions
// answer for partitions the request left out.
func (d *Decoder) fetchPartition(ev *event.Request, t *kmsg.FetchResponseTopic, partition int32) *event.Partition {
	if part := d.findPartition(ev, t.Topic, t.TopicID, partition); part != nil {
		return part
	}
	ev.Partitions = append(ev.Partitions, event.Partition{Topic: d.names.intern(t.Topic), Partition: partition})
	part := &ev.Partitions[len(ev.Partitions)-1]
	d.resolveTopic(part, t.TopicID)
	return part
}

// setExtent sets a fetch response partition's first and last offsets
// and timestamps from the headers of the whole batches it returned: a
// trailing batch cut short was not delivered (the client fetches it again
// from its start), so it is the next response's. setRecords has counted
// any damage.
func (d *Decoder) setExtent(part *event.Partition, e records.Extent) {
	if e.Batches == 0 {
		return
	}
	part.FirstOffset = d.nonNegative(e.FirstOffset) // -1: a magic 0 or 1 wrapper's, unknown
	part.LastOffset = d.nonNegative(e.LastOffset)
	part.FirstTimestamp = d.int64s.one(e.FirstTimestamp)
	part.MaxTimestamp = d.int64s.one(e.MaxTimestamp)
}

// nonNegative returns v from the slab, or nil when it is negative: an
// offset Kafka sends as -1 for none, or one no log can have.
func (d *Decoder) nonNegative(v int64) *int64 {
	if v < 0 {
		return nil
	}
	return d.int64s.one(v)
}

// decodeMetadataResponse learns the topic ids a metadata response names,
// which later requests may give instead of topic names.
func (d *Decoder) decodeMetadataResponse(p *pending, body []byte) bool {
	var resp kmsg.MetadataResponse
	resp.SetVersion(p.header.version)
	if err := resp.ReadFrom(body); err != nil {
		return false
	}
	p.ev.ThrottleMs = resp.ThrottleMillis
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.Topic != nil {
			d.topics.Add(t.TopicID, *t.Topic)
		}
	}
	return true
}

// decodeOtherResponse checks any other response against kmsg and takes
// its throttle and top-level error code when it has them, and what
// responseDetails reads of group responses.
func (d *Decoder) decodeOtherResponse(p *pending, body []byte) bool {
	resp := kmsg.ResponseForKey(p.header.key)
	resp.SetVersion(p.header.version)
	err := resp.ReadFrom(body)
	if err != nil && p.header.key == 18 {
		// A broker that does not support the requested ApiVersions
		// version answers with version 0 and UNSUPPORTED_VERSION.
		resp.SetVersion(0)
		err = resp.ReadFrom(body)
	}
	if err != nil {
		return false
	}
	if t, ok := resp.(kmsg.ThrottleResponse); ok {
		if ms, applies := t.Throttle(); applies || ms != 0 {
			p.ev.ThrottleMs = ms
		}
	}
	if code, ok := topLevelErrorCode(resp); ok {
		p.ev.ErrorCode = &code
	}
	d.responseDetails(p.ev, resp)
	return true
}

// topLevelErrorCode returns a response's ErrorCode field, for the many
// kmsg response types that have one. Reflection keeps this generic; it is
// off the produce/fetch hot path.
func topLevelErrorCode(resp kmsg.Response) (int16, bool) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return 0, false
	}
	return int16(f.Int()), true
}

// findPartition returns ev's partition that a response's (topic or id,
// partition) answers, or nil.
func (d *Decoder) findPartition(ev *event.Request, topic string, id [16]byte, partition int32) *event.Partition {
	var idStr string
	if id != ([16]byte{}) {
		idStr, _ = d.topicIDs.lookup(d.topics, id)
	}
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		if p.Partition != partition {
			continue
		}
		if idStr != "" && p.TopicID == idStr || idStr == "" && p.Topic == topic {
			return p
		}
	}
	return nil
}
