// Package model is kscope's capacity model of a Kafka cluster (kscope
// model): from a workload (message rate and sizes, batching, compression,
// replication, consumers) and a cluster (brokers, NIC, disks, retention) it
// computes the bytes each message costs on the wire in the chosen record
// format, every broker's network in and out and its share of the NIC, the
// disk write rate, and how long re-replicating a failed broker's data
// takes. WhatIf changes inputs and gives the differences.
//
// Everything here is a pure function of its inputs. The formulas and their
// assumptions are in docs/model.md.
package model

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Recovery modes: where a failed broker's replicas are rebuilt.
const (
	// RecoverSurvivors reassigns the failed broker's replicas evenly to
	// the surviving brokers (what Cruise Control's self-healing or a
	// reassignment does).
	RecoverSurvivors = "survivors"
	// RecoverReplacement rebuilds them on one new empty broker that takes
	// the failed broker's id.
	RecoverReplacement = "replacement"
)

// Inputs are the workload and the cluster. Sizes are means in bytes and
// may be fractional (measured means are).
type Inputs struct {
	// Rate is the messages produced per second, the whole cluster.
	Rate float64 `json:"rate"`
	// MessageSize, KeySize are a message's value and key in bytes; a key
	// of 0 is a null key.
	MessageSize float64 `json:"message_size"`
	KeySize     float64 `json:"key_size"`
	// Headers is the record headers per message (format 2 only) and
	// HeaderSize the bytes of one header's key and value together.
	Headers    float64 `json:"headers"`
	HeaderSize float64 `json:"header_size"`

	// RecordsPerBatch, when set, is the records in one batch. Otherwise
	// it is derived from BatchBytes, Linger and Partitions (see
	// docs/model.md).
	RecordsPerBatch float64       `json:"records_per_batch,omitempty"`
	BatchBytes      float64       `json:"batch_bytes"`
	Linger          time.Duration `json:"linger_ns"`
	// Partitions is the partitions the rate spreads over and Producers
	// the producers sending it; 0 partitions means batches fill up to
	// BatchBytes.
	Partitions int `json:"partitions,omitempty"`
	Producers  int `json:"producers"`
	// BatchSpan is how long a batch's records' timestamps spread over
	// (their timestamp deltas); 0 derives it from Linger.
	BatchSpan time.Duration `json:"batch_span_ns,omitempty"`
	// BatchesPerRequest is the partitions' batches in one produce
	// request (one topic assumed).
	BatchesPerRequest float64 `json:"batches_per_request"`
	// FetchBatches is the batches of a partition in one fetch response
	// (consumers' and followers' alike).
	FetchBatches float64 `json:"fetch_batches"`
	// CompressionRatio is a batch's records uncompressed over
	// compressed: 1 is no compression.
	CompressionRatio float64 `json:"compression_ratio"`

	ReplicationFactor int     `json:"replication_factor"`
	ConsumerGroups    float64 `json:"consumer_groups"`
	Brokers           int     `json:"brokers"`
	// NIC is each broker's NIC speed in bits/s (each direction).
	NIC float64 `json:"nic_bits_per_sec"`
	// MTU sets the TCP/IP/Ethernet overhead counted against the NIC; 0
	// counts Kafka's bytes only.
	MTU int `json:"mtu"`
	// DiskBandwidth is each broker's disk write bandwidth in bytes/s; 0
	// is unknown (not a limit).
	DiskBandwidth float64 `json:"disk_bytes_per_sec,omitempty"`
	// DataPerBroker, when set, is each broker's data in bytes; otherwise
	// it is what Retention of the workload holds.
	Retention     time.Duration `json:"retention_ns"`
	DataPerBroker float64       `json:"data_per_broker,omitempty"`
	// Throttle is the replication throttle in bytes/s per broker
	// (leader.replication.throttled.rate and the follower one); 0 is
	// none.
	Throttle float64 `json:"throttle_bytes_per_sec,omitempty"`
	Recovery string  `json:"recovery"`

	// KafkaVersion sets the record format and the produce and fetch
	// versions; RecordFormat, ProduceVersion and FetchVersion override
	// them when not -1.
	KafkaVersion   string `json:"kafka_version"`
	RecordFormat   int    `json:"record_format"`
	ProduceVersion int16  `json:"produce_version"`
	FetchVersion   int16  `json:"fetch_version"`
	// ClientIDLen and TopicNameLen size the request framing.
	ClientIDLen  int `json:"client_id_len"`
	TopicNameLen int `json:"topic_name_len"`
}

// Defaults returns the inputs the model starts from: Kafka 4.1 and its
// producer defaults (batch.size 16384, linger.ms 5), six brokers with
// 10 Gbit/s NICs, replication factor 3, one consumer group, 7 days'
// retention.
func Defaults() Inputs {
	return Inputs{
		Rate:              100_000,
		MessageSize:       1024,
		BatchBytes:        16384,
		Linger:            5 * time.Millisecond,
		Producers:         1,
		BatchesPerRequest: 1,
		FetchBatches:      1,
		CompressionRatio:  1,
		ReplicationFactor: 3,
		ConsumerGroups:    1,
		Brokers:           6,
		NIC:               10e9,
		MTU:               1500,
		Retention:         7 * 24 * time.Hour,
		Recovery:          RecoverSurvivors,
		KafkaVersion:      DefaultKafkaVersion,
		RecordFormat:      -1,
		ProduceVersion:    -1,
		FetchVersion:      -1,
		ClientIDLen:       10,
		TopicNameLen:      10,
	}
}

// Limits of the inputs Validate accepts.
const (
	maxSize    = 64 << 20 // message, key, header, batch bytes
	maxHeaders = 10_000
	maxRecords = 1 << 24 // records per batch
	maxBrokers = 100_000
)

// Validate checks the inputs, returning every problem found.
func (in *Inputs) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s must be a number", name)
			return false
		}
		return true
	}
	positive := func(name string, v, hi float64) {
		if finite(name, v) && (v <= 0 || v > hi) {
			bad("%s %g must be above 0 and at most %g", name, v, hi)
		}
	}
	nonNegative := func(name string, v, hi float64) {
		if finite(name, v) && (v < 0 || v > hi) {
			bad("%s %g must be between 0 and %g", name, v, hi)
		}
	}
	positive("rate", in.Rate, 1e12)
	nonNegative("message size", in.MessageSize, maxSize)
	nonNegative("key size", in.KeySize, maxSize)
	nonNegative("headers", in.Headers, maxHeaders)
	nonNegative("header size", in.HeaderSize, maxSize)
	if in.RecordsPerBatch != 0 {
		if finite("records per batch", in.RecordsPerBatch) && (in.RecordsPerBatch < 1 || in.RecordsPerBatch > maxRecords) {
			bad("records per batch %g must be between 1 and %d", in.RecordsPerBatch, maxRecords)
		}
	}
	positive("batch bytes", in.BatchBytes, maxSize)
	if in.Linger < 0 || in.BatchSpan < 0 {
		bad("linger and batch span must not be negative")
	}
	if in.Partitions < 0 || in.Producers < 1 {
		bad("partitions must not be negative and producers must be at least 1")
	}
	if finite("batches per request", in.BatchesPerRequest) && (in.BatchesPerRequest < 1 || in.BatchesPerRequest > 100_000) {
		bad("batches per request %g must be between 1 and 100000", in.BatchesPerRequest)
	}
	if finite("fetch batches", in.FetchBatches) && (in.FetchBatches < 1 || in.FetchBatches > 100_000) {
		bad("fetch batches %g must be between 1 and 100000", in.FetchBatches)
	}
	if finite("compression ratio", in.CompressionRatio) && (in.CompressionRatio < 0.01 || in.CompressionRatio > 1000) {
		bad("compression ratio %g must be between 0.01 and 1000 (uncompressed/compressed; 1 is none)", in.CompressionRatio)
	}
	if in.Brokers < 1 || in.Brokers > maxBrokers {
		bad("brokers %d must be between 1 and %d", in.Brokers, maxBrokers)
	}
	if in.ReplicationFactor < 1 || in.ReplicationFactor > in.Brokers {
		bad("replication factor %d must be between 1 and the brokers (%d)", in.ReplicationFactor, in.Brokers)
	}
	nonNegative("consumer groups", in.ConsumerGroups, 1e6)
	positive("NIC speed", in.NIC, 1e15)
	if in.MTU != 0 && (in.MTU < 576 || in.MTU > 65536) {
		bad("MTU %d must be 0 (no packet overhead) or between 576 and 65536", in.MTU)
	}
	nonNegative("disk bandwidth", in.DiskBandwidth, 1e15)
	nonNegative("data per broker", in.DataPerBroker, 1e18)
	if in.Retention < 0 {
		bad("retention must not be negative")
	}
	nonNegative("throttle", in.Throttle, 1e15)
	if in.Recovery != RecoverSurvivors && in.Recovery != RecoverReplacement {
		bad("recovery %q must be %s or %s", in.Recovery, RecoverSurvivors, RecoverReplacement)
	}
	if in.ClientIDLen < 0 || in.ClientIDLen > 32767 || in.TopicNameLen < 0 || in.TopicNameLen > 32767 {
		bad("client id and topic name lengths must be between 0 and 32767")
	}
	if v, err := in.versions(); err != nil {
		errs = append(errs, err)
	} else if v.format < 2 && in.Headers > 0 {
		bad("record headers need record format 2 (Kafka 0.11 or later); format %d has none", v.format)
	}
	return errors.Join(errs...)
}

// versions resolves the record format and the produce and fetch versions.
func (in *Inputs) versions() (versions, error) {
	kv := in.KafkaVersion
	if kv == "" {
		kv = DefaultKafkaVersion
	}
	v, err := lookupKafkaVersion(kv)
	if err != nil {
		return v, err
	}
	if in.RecordFormat >= 0 {
		if in.RecordFormat > 2 {
			return v, fmt.Errorf("record format %d: want 0, 1 or 2", in.RecordFormat)
		}
		if in.RecordFormat != v.format && !compatible(in.RecordFormat, v.produce) {
			v = formatVersions[in.RecordFormat]
		}
		v.format = in.RecordFormat
	}
	if in.ProduceVersion >= 0 {
		if in.ProduceVersion > (&kmsg.ProduceRequest{}).MaxVersion() {
			return v, fmt.Errorf("produce version %d: the highest known is %d", in.ProduceVersion, (&kmsg.ProduceRequest{}).MaxVersion())
		}
		v.produce = in.ProduceVersion
	}
	if in.FetchVersion >= 0 {
		if in.FetchVersion > (&kmsg.FetchRequest{}).MaxVersion() {
			return v, fmt.Errorf("fetch version %d: the highest known is %d", in.FetchVersion, (&kmsg.FetchRequest{}).MaxVersion())
		}
		v.fetch = in.FetchVersion
	}
	if !compatible(v.format, v.produce) {
		return v, fmt.Errorf("produce version %d cannot carry record format %d (format 2 needs v3 or later, formats 0 and 1 v2 or earlier)", v.produce, v.format)
	}
	return v, nil
}

// Outputs are what the model computes. Network figures are bits/s, disk
// figures bytes/s, sizes bytes; "per message" is a mean over a batch.
type Outputs struct {
	RecordFormat    int     `json:"record_format"`
	ProduceVersion  int16   `json:"produce_version"`
	FetchVersion    int16   `json:"fetch_version"`
	RecordsPerBatch float64 `json:"records_per_batch"`
	BatchSpanMs     float64 `json:"batch_span_ms"`

	// RecordBytes is one record as encoded in its batch, uncompressed
	// (a magic 0/1 message with its offset and size).
	RecordBytes float64 `json:"record_bytes"`
	// BatchBytes is one batch as produced and stored, compressed.
	BatchBytes float64 `json:"batch_bytes"`
	// StoredBytesPerMessage is BatchBytes over its records: what a
	// message costs in a log segment.
	StoredBytesPerMessage float64 `json:"stored_bytes_per_message"`
	// ProduceRequestBytes is one produce request frame, and
	// ProduceBytesPerMessage that over its records: the bytes on the
	// wire per message.
	ProduceRequestBytes    float64 `json:"produce_request_bytes"`
	ProduceBytesPerMessage float64 `json:"produce_bytes_per_message"`
	// FetchResponseBytes is one fetch response frame and
	// FetchBytesPerMessage that over its records.
	FetchResponseBytes   float64 `json:"fetch_response_bytes"`
	FetchBytesPerMessage float64 `json:"fetch_bytes_per_message"`

	// The whole cluster, bits/s: produce requests into leaders,
	// replication (fetch responses from leaders to followers), consumer
	// fetch responses, and the sums into and out of all brokers.
	ClusterProduce     float64 `json:"cluster_produce_bits_per_sec"`
	ClusterReplication float64 `json:"cluster_replication_bits_per_sec"`
	ClusterConsume     float64 `json:"cluster_consume_bits_per_sec"`
	ClusterIn          float64 `json:"cluster_in_bits_per_sec"`
	ClusterOut         float64 `json:"cluster_out_bits_per_sec"`

	// Per broker, bits/s of Kafka bytes (TCP payload).
	BrokerIn  float64 `json:"broker_in_bits_per_sec"`
	BrokerOut float64 `json:"broker_out_bits_per_sec"`
	// LinkFactor is the bytes on the link per byte of TCP payload
	// (TCP/IP/Ethernet headers, preamble and gap) at the MTU.
	LinkFactor float64 `json:"link_factor"`
	// NICShare is the busier direction's link bits over the NIC speed;
	// above 1 the NIC is oversubscribed. Headroom is the NIC speed left
	// in that direction (0 when oversubscribed), MaxRate the message
	// rate at which it fills.
	NICShareIn  float64 `json:"nic_share_in"`
	NICShareOut float64 `json:"nic_share_out"`
	NICShare    float64 `json:"nic_share"`
	Headroom    float64 `json:"headroom_bits_per_sec"`
	MaxRate     float64 `json:"max_rate"`

	// DiskWrite is each broker's log write rate, bytes/s, and DiskShare
	// its share of DiskBandwidth (0 when that is unknown).
	DiskWrite float64 `json:"disk_write_bytes_per_sec"`
	DiskShare float64 `json:"disk_share,omitempty"`

	DataPerBroker float64  `json:"data_per_broker"`
	Recovery      Recovery `json:"recovery"`
}

// Recovery is the re-replication of a failed broker's data.
type Recovery struct {
	Mode string `json:"mode"`
	// Possible is false when the data cannot be re-replicated (no other
	// copy, or too few brokers left, or no spare capacity); Reason says
	// why.
	Possible bool   `json:"possible"`
	Reason   string `json:"reason,omitempty"`
	// Bytes is the failed broker's data; PerReceiver what one receiving
	// broker copies.
	Bytes       float64 `json:"bytes"`
	PerReceiver float64 `json:"per_receiver_bytes"`
	// Rate is the aggregate copy rate in bytes/s, LimitedBy what limits
	// it, Seconds the time it takes.
	Rate      float64 `json:"bytes_per_sec"`
	LimitedBy string  `json:"limited_by,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// Duration returns Seconds as a duration (0 when not possible).
func (r Recovery) Duration() time.Duration {
	if !r.Possible {
		return 0
	}
	return time.Duration(r.Seconds * float64(time.Second))
}

// Per-packet overhead on an Ethernet link: IPv4 20 + TCP 20 + TCP
// timestamps 12 bytes inside the MTU; Ethernet header 14, FCS 4, preamble
// 8 and inter-frame gap 12 outside it.
const (
	ipTCPOverhead    = 52
	ethernetOverhead = 38
)

// LinkFactor is the link bytes per byte of TCP payload at an MTU (1 for
// MTU 0): full-size segments of MTU-52 payload bytes each cost MTU+38.
func LinkFactor(mtu int) float64 {
	if mtu == 0 {
		return 1
	}
	mss := float64(mtu - ipTCPOverhead)
	return (float64(mtu) + ethernetOverhead) / mss
}

// Compute runs the model.
func Compute(in Inputs) (Outputs, error) {
	if err := in.Validate(); err != nil {
		return Outputs{}, err
	}
	v, _ := in.versions()
	var out Outputs
	out.RecordFormat, out.ProduceVersion, out.FetchVersion = v.format, v.produce, v.fetch

	n := in.recordsPerBatch(v.format)
	span := in.batchSpan(n)
	spanMs := int64(span / time.Millisecond)
	out.RecordsPerBatch, out.BatchSpanMs = n, float64(span)/float64(time.Millisecond)

	records := interpolate(n, func(k int64) float64 { r, _ := in.batch(v.format, k, spanMs); return r })
	out.BatchBytes = interpolate(n, func(k int64) float64 { _, b := in.batch(v.format, k, spanMs); return b })
	out.RecordBytes = records / n
	out.StoredBytesPerMessage = out.BatchBytes / n

	p := in.BatchesPerRequest
	out.ProduceRequestBytes = interpolate(p, func(k int64) float64 {
		return in.produceRequest(v.produce, k, out.BatchBytes)
	})
	out.ProduceBytesPerMessage = out.ProduceRequestBytes / (p * n)
	f := in.FetchBatches
	out.FetchResponseBytes = in.fetchResponse(v.fetch, f*out.BatchBytes)
	out.FetchBytesPerMessage = out.FetchResponseBytes / (f * n)

	// Bytes/s over the cluster.
	produce := in.Rate * out.ProduceBytesPerMessage
	replication := in.Rate * out.FetchBytesPerMessage * float64(in.ReplicationFactor-1)
	consume := in.Rate * out.FetchBytesPerMessage * in.ConsumerGroups
	clusterIn, clusterOut := produce+replication, replication+consume
	out.ClusterProduce, out.ClusterReplication, out.ClusterConsume = 8*produce, 8*replication, 8*consume
	out.ClusterIn, out.ClusterOut = 8*clusterIn, 8*clusterOut

	b := float64(in.Brokers)
	out.BrokerIn, out.BrokerOut = out.ClusterIn/b, out.ClusterOut/b
	out.LinkFactor = LinkFactor(in.MTU)
	out.NICShareIn = out.BrokerIn * out.LinkFactor / in.NIC
	out.NICShareOut = out.BrokerOut * out.LinkFactor / in.NIC
	out.NICShare = max(out.NICShareIn, out.NICShareOut)
	out.Headroom = max(0, in.NIC*(1-out.NICShare))
	out.MaxRate = in.Rate / out.NICShare

	diskCluster := in.Rate * out.StoredBytesPerMessage * float64(in.ReplicationFactor)
	out.DiskWrite = diskCluster / b
	if in.DiskBandwidth > 0 {
		out.DiskShare = out.DiskWrite / in.DiskBandwidth
	}
	out.DataPerBroker = in.DataPerBroker
	if out.DataPerBroker == 0 {
		out.DataPerBroker = out.DiskWrite * in.Retention.Seconds()
	}
	out.Recovery = in.recovery(clusterIn, clusterOut, diskCluster, out.LinkFactor, out.DataPerBroker)
	return out, nil
}

// recordsPerBatch is RecordsPerBatch, or what the producer settings give:
// a batch closes when the next record would take it past BatchBytes
// (compressed, as the Java producer estimates it) or when Linger expires
// with the records one producer sends one partition in that time.
func (in *Inputs) recordsPerBatch(format int) float64 {
	if in.RecordsPerBatch > 0 {
		return in.RecordsPerBatch
	}
	var rec, header float64
	if format < 2 {
		rec = in.legacyMessage(format)
	} else {
		rec = in.v2Record(1, 1)
		header = V2BatchHeader
	}
	full := math.Floor((in.BatchBytes - header) * in.CompressionRatio / rec)
	n := full
	if in.Partitions > 0 {
		perPartition := in.Rate / float64(in.Partitions*in.Producers)
		n = min(n, math.Floor(perPartition*in.Linger.Seconds()))
	}
	return min(max(1, n), maxRecords)
}

// batchSpan is BatchSpan, or the time the batch's records took to arrive:
// Linger when the arrival rate per partition is unknown, else the time n
// records take at that rate, at most Linger.
func (in *Inputs) batchSpan(n float64) time.Duration {
	if in.BatchSpan > 0 {
		return in.BatchSpan
	}
	if in.Partitions == 0 {
		return in.Linger
	}
	perPartition := in.Rate / float64(in.Partitions*in.Producers)
	fill := time.Duration((n - 1) / perPartition * float64(time.Second))
	return min(in.Linger, max(0, fill))
}

// recovery computes the re-replication of one failed broker's data. The
// survivors carry the whole cluster's traffic meanwhile (clusterIn,
// clusterOut, diskCluster in bytes/s, split evenly over them).
func (in *Inputs) recovery(clusterIn, clusterOut, diskCluster, linkFactor, data float64) Recovery {
	r := Recovery{Mode: in.Recovery, Bytes: data}
	left := in.Brokers - 1
	switch {
	case in.ReplicationFactor == 1:
		r.Reason = "replication factor 1: the failed broker's data has no other copy"
		return r
	case in.Recovery == RecoverSurvivors && left < in.ReplicationFactor:
		r.Reason = fmt.Sprintf("%d surviving brokers cannot hold %d replicas of a partition", left, in.ReplicationFactor)
		return r
	}
	s := float64(left)
	nic := in.NIC / 8 / linkFactor // payload bytes/s a NIC carries each way
	spareIn, spareOut := nic-clusterIn/s, nic-clusterOut/s
	spareDisk := math.Inf(1)
	if in.DiskBandwidth > 0 {
		spareDisk = in.DiskBandwidth - diskCluster/s
	}
	throttle := math.Inf(1)
	if in.Throttle > 0 {
		throttle = in.Throttle
	}
	type limit struct {
		name string
		rate float64
	}
	var limits []limit
	if in.Recovery == RecoverSurvivors {
		// Each survivor copies data/(n-1) in as a new follower and
		// sends as much out as a leader.
		r.PerReceiver = data / s
		limits = []limit{
			{"throttle", throttle * s},
			{"NIC in (survivors)", spareIn * s},
			{"NIC out (survivors)", spareOut * s},
			{"disk (survivors)", spareDisk * s},
		}
	} else {
		// One empty broker copies everything in; the survivors send.
		r.PerReceiver = data
		replacementDisk := math.Inf(1)
		if in.DiskBandwidth > 0 {
			replacementDisk = in.DiskBandwidth
		}
		limits = []limit{
			{"throttle (replacement)", throttle},
			{"NIC in (replacement)", nic},
			{"disk (replacement)", replacementDisk},
			{"throttle (survivors)", throttle * s},
			{"NIC out (survivors)", spareOut * s},
		}
	}
	best := limits[0]
	for _, l := range limits[1:] {
		if l.rate < best.rate {
			best = l
		}
	}
	r.LimitedBy = best.name
	if best.rate <= 0 {
		r.Reason = "no spare capacity: " + best.name + " is already full"
		return r
	}
	if data == 0 {
		r.Possible = true
		return r
	}
	r.Possible = true
	r.Rate = best.rate
	r.Seconds = data / best.rate
	return r
}
