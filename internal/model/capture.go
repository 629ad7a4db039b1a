package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Measurement is what a capture says about the workload: the model's
// inputs measured from produce requests (decoded with their batch stats,
// wire.Config.BatchStats) and the fetch traffic. Add every request, then
// read Inputs and the measured wire bytes.
type Measurement struct {
	// Produce requests whose every partition's batches were measured.
	Requests     int   `json:"produce_requests"`
	Partitions   int   `json:"produce_partitions"`
	Records      int   `json:"records"`
	Batches      int   `json:"batches"`
	RequestBytes int64 `json:"produce_request_bytes"`
	BatchBytes   int64 `json:"batch_bytes"`
	// RecordsBytes and UncompressedBytes are the batches' records parts
	// as sent and decompressed.
	RecordsBytes      int64 `json:"records_bytes"`
	UncompressedBytes int64 `json:"uncompressed_bytes"`
	Compressed        int   `json:"compressed_batches"`
	KeyBytes          int64 `json:"key_bytes"`
	NullKeys          int   `json:"null_keys"`
	ValueBytes        int64 `json:"value_bytes"`
	Headers           int   `json:"headers"`
	HeaderBytes       int64 `json:"header_bytes"`
	TimestampSpanMs   int64 `json:"timestamp_span_ms"`
	Magic             int8  `json:"magic"`
	ClientIDBytes     int64 `json:"client_id_bytes"`
	TopicNameBytes    int64 `json:"topic_name_bytes"`
	// Skipped counts produce requests left out: partial, or with a
	// partition whose batches could not be measured.
	Skipped int `json:"skipped_produce_requests"`

	// First and Last are the first and last measured produce request's
	// arrival; LastRecords the records of the last one.
	First       time.Time `json:"first"`
	Last        time.Time `json:"last"`
	LastRecords int       `json:"-"`

	FetchResponses     int       `json:"fetch_responses"`
	FetchResponseBytes int64     `json:"fetch_response_bytes"`
	FetchBatchBytes    int64     `json:"fetch_batch_bytes"`
	FetchFirst         time.Time `json:"-"`
	FetchLast          time.Time `json:"-"`

	produceVersions map[int16]int
	fetchVersions   map[int16]int
}

// Add counts one request.
func (m *Measurement) Add(r *event.Request) {
	switch r.APIKey {
	case 0:
		m.addProduce(r)
	case 1:
		if !r.Answered || r.Partial || r.ResponseBytes == 0 {
			return
		}
		m.FetchResponses++
		m.FetchResponseBytes += int64(r.ResponseBytes)
		for _, p := range r.Partitions {
			m.FetchBatchBytes += int64(p.Bytes)
		}
		if m.FetchFirst.IsZero() || r.End.Before(m.FetchFirst) {
			m.FetchFirst = r.End
		}
		if r.End.After(m.FetchLast) {
			m.FetchLast = r.End
		}
		if m.fetchVersions == nil {
			m.fetchVersions = map[int16]int{}
		}
		m.fetchVersions[r.APIVersion]++
	}
}

func (m *Measurement) addProduce(r *event.Request) {
	if r.Partial || len(r.Partitions) == 0 {
		m.Skipped++
		return
	}
	for _, p := range r.Partitions {
		if p.BatchStats == nil {
			m.Skipped++
			return
		}
	}
	m.Requests++
	records := 0
	topics := map[string]bool{}
	for _, p := range r.Partitions {
		s := p.BatchStats
		m.Partitions++
		m.Records += p.Records
		records += p.Records
		m.Batches += s.Batches
		m.BatchBytes += int64(p.Bytes)
		m.RecordsBytes += int64(s.RecordsBytes)
		m.UncompressedBytes += int64(s.UncompressedBytes)
		m.Compressed += s.Compressed
		m.KeyBytes += s.KeyBytes
		m.NullKeys += s.NullKeys
		m.ValueBytes += s.ValueBytes
		m.Headers += s.Headers
		m.HeaderBytes += s.HeaderBytes
		m.TimestampSpanMs += s.TimestampSpanMs
		m.Magic = max(m.Magic, s.Magic)
		if !topics[p.Topic] {
			topics[p.Topic] = true
			m.TopicNameBytes += int64(len(p.Topic))
		}
	}
	m.RequestBytes += int64(r.RequestBytes)
	m.ClientIDBytes += int64(len(r.ClientID))
	if m.produceVersions == nil {
		m.produceVersions = map[int16]int{}
	}
	m.produceVersions[r.APIVersion]++
	if m.First.IsZero() || r.Arrival.Before(m.First) {
		m.First = r.Arrival
	}
	if !r.Arrival.Before(m.Last) {
		m.Last, m.LastRecords = r.Arrival, records
	}
}

// Rate is the measured messages/s: the records of every request but the
// last over the time from the first request to the last (0 with fewer
// than two requests apart in time).
func (m *Measurement) Rate() float64 {
	span := m.Last.Sub(m.First).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(m.Records-m.LastRecords) / span
}

// ProduceBytesPerMessage is the measured produce request bytes over the
// records they carried.
func (m *Measurement) ProduceBytesPerMessage() float64 {
	if m.Records == 0 {
		return 0
	}
	return float64(m.RequestBytes) / float64(m.Records)
}

// FetchBitsPerSec is the fetch responses' bits/s over their time span (0
// with fewer than two).
func (m *Measurement) FetchBitsPerSec() float64 {
	span := m.FetchLast.Sub(m.FetchFirst).Seconds()
	if span <= 0 {
		return 0
	}
	return 8 * float64(m.FetchResponseBytes) / span
}

// mode is the most common key of counts (the smallest among equals).
func mode(counts map[int16]int) (int16, bool) {
	if len(counts) == 0 {
		return 0, false
	}
	keys := slices.Sorted(maps.Keys(counts))
	best := keys[0]
	for _, k := range keys[1:] {
		if counts[k] > counts[best] {
			best = k
		}
	}
	return best, true
}

// Inputs returns base with every input the capture measured set: the
// rate, message, key and header sizes, records per batch, batches per
// request, compression ratio, the batches' time span, record format,
// produce and fetch versions, client id and topic name lengths.
func (m *Measurement) Inputs(base Inputs) (Inputs, error) {
	if m.Records == 0 || m.Batches == 0 {
		return base, fmt.Errorf("the capture has no produce request whose record batches could be measured (%d skipped)", m.Skipped)
	}
	in := base
	recs := float64(m.Records)
	if r := m.Rate(); r > 0 {
		in.Rate = r
	}
	in.MessageSize = float64(m.ValueBytes) / recs
	in.KeySize = float64(m.KeyBytes) / recs
	in.Headers = float64(m.Headers) / recs
	in.HeaderSize = 0
	if m.Headers > 0 {
		in.HeaderSize = float64(m.HeaderBytes) / float64(m.Headers)
	}
	// An uncompressed magic 0/1 message set is one "batch" per
	// partition, though records counts each message as a batch.
	batches := float64(m.Batches)
	if m.Magic < 2 && m.Compressed == 0 {
		batches = float64(m.Partitions)
	}
	in.RecordsPerBatch = recs / batches
	in.BatchesPerRequest = batches / float64(m.Requests)
	in.CompressionRatio = 1
	if m.Compressed > 0 && m.RecordsBytes > 0 {
		in.CompressionRatio = float64(m.UncompressedBytes) / float64(m.RecordsBytes)
	}
	in.BatchSpan = 0
	if m.Magic == 2 {
		// Mean span; at least 1ns so that it is taken as measured.
		in.BatchSpan = max(time.Duration(float64(m.TimestampSpanMs)/float64(m.Batches)*float64(time.Millisecond)), 1)
	}
	in.RecordFormat = int(m.Magic)
	if v, ok := mode(m.produceVersions); ok {
		in.ProduceVersion = v
	}
	if v, ok := mode(m.fetchVersions); ok {
		in.FetchVersion = v
	}
	in.ClientIDLen = int(math.Round(float64(m.ClientIDBytes) / float64(m.Requests)))
	in.TopicNameLen = int(math.Round(float64(m.TopicNameBytes) / float64(m.Requests)))
	return in, nil
}

// Check compares the model's produce bytes per message for the measured
// inputs with the measured ones.
type Check struct {
	Measured  float64 `json:"measured_bytes_per_message"`
	Predicted float64 `json:"predicted_bytes_per_message"`
	// MeasuredTotal and PredictedTotal are over the capture's records.
	MeasuredTotal  float64 `json:"measured_bytes"`
	PredictedTotal float64 `json:"predicted_bytes"`
	// Difference is (predicted - measured) / measured.
	Difference float64 `json:"difference"`
}

// CheckProduce compares out (computed from m's inputs) with m.
func (m *Measurement) CheckProduce(out Outputs) Check {
	c := Check{Measured: m.ProduceBytesPerMessage(), Predicted: out.ProduceBytesPerMessage,
		MeasuredTotal: float64(m.RequestBytes), PredictedTotal: out.ProduceBytesPerMessage * float64(m.Records)}
	if c.Measured > 0 {
		c.Difference = (c.Predicted - c.Measured) / c.Measured
	}
	return c
}
