// Package event defines the typed events that every kscope command shares,
// and their JSON Lines encoding.
//
// Sources (packet captures, eBPF, segment files, JFR) are decoded into these
// types; sinks (tables, JSON Lines, metrics, reports) consume them. The JSON
// field names are a public format documented in docs/formats.md: change them
// only with a version bump.
package event

import (
	"encoding/base64"
	"time"
)

// Request is one Kafka request seen on the wire, paired with its response
// when one was seen.
type Request struct {
	// Arrival is the capture timestamp of the packet that carried the
	// request's first byte.
	Arrival time.Time `json:"arrival"`
	// End is the capture timestamp of the packet that carried the
	// response's last byte; zero when no response was seen (acks=0 produce
	// requests, or a capture that ended first).
	End time.Time `json:"end,omitzero"`
	// LatencyMs is End-Arrival in milliseconds; zero when End is zero.
	LatencyMs float64 `json:"latency_ms"`
	// QueuedMs is how long the fully received request waited for the
	// broker to finish the previous request on the same connection (a
	// broker reads one request per connection at a time, so pipelined
	// requests wait in the socket buffer).
	QueuedMs float64 `json:"queued_ms"`
	// BrokerMs is the latency as the broker measures it (its request
	// log's totalTimeMs): from the later of the request's last byte and
	// the previous response's end on the connection, to End.
	BrokerMs float64 `json:"broker_ms"`
	// ResponseMs is how long the response took to pass the capture
	// point: from its first byte to its last. A large value with a small
	// response means the client (or the network) was slow to take it.
	ResponseMs float64 `json:"response_ms"`

	Client string `json:"client"` // "ip:port" of the client side
	Broker string `json:"broker"` // "ip:port" of the broker side
	// Conn is the number the decoder gave the request's connection (0
	// for none, as in a recording): a hint for the views that keep state
	// per connection, which still check Client and Broker (two decoders
	// number their connections alike). Not recorded.
	Conn uint64 `json:"-"`

	API           string `json:"api"` // kmsg name, or "unknown(N)"
	APIKey        int16  `json:"api_key"`
	APIVersion    int16  `json:"api_version"`
	CorrelationID int32  `json:"correlation_id"`
	ClientID      string `json:"client_id"`

	RequestBytes  int   `json:"request_bytes"`  // whole frame including the 4-byte size
	ResponseBytes int   `json:"response_bytes"` // whole frame including the 4-byte size; 0 when no response
	ThrottleMs    int32 `json:"throttle_ms"`
	// ErrorCode is the response's top-level error code, when the response
	// type has one.
	ErrorCode *int16 `json:"error_code,omitempty"`
	// Acks is set for produce requests.
	Acks *int16 `json:"acks,omitempty"`
	// ReplicaID is set for Fetch requests: the id of the broker whose
	// replica fetcher sent it (a follower), -1 for a consumer. Fetch
	// v15+ carries it in the ReplicaState tag (KIP-903), older versions
	// in the body's ReplicaID.
	ReplicaID *int32 `json:"replica_id,omitempty"`

	// Retransmits and ResponseRetransmits count the TCP segments the
	// capture saw again (bytes it had captured before) between Arrival
	// and End, client to broker and broker to client; ZeroWindows the
	// client's zero-window advertisements then (it did not read the
	// broker's responses). Evidence that the network held the request up.
	Retransmits         int `json:"retransmits,omitempty"`
	ResponseRetransmits int `json:"response_retransmits,omitempty"`
	ZeroWindows         int `json:"zero_windows,omitempty"`
	// BrokerZeroWindows are the broker's zero-window advertisements
	// between Arrival and End: its socket's receive buffer was full,
	// because the broker did not read. A request slow to arrive then was
	// held by the broker, not by the network.
	BrokerZeroWindows int `json:"broker_zero_windows,omitempty"`
	// ResponseAckWaitMs: the response left the broker right after the
	// client acknowledged everything the broker had in flight, which had
	// waited this long for it: TCP held the response (a congestion window
	// shrunk by a timeout, the client's ACKs late). 0 when it did not.
	ResponseAckWaitMs float64 `json:"response_ack_wait_ms,omitempty"`

	Partitions []Partition `json:"partitions,omitempty"`

	// SASLMechanism is set on SaslHandshake and SaslAuthenticate
	// requests: the mechanism the client asked for.
	SASLMechanism string `json:"sasl_mechanism,omitempty"`
	// Principal is the SASL user name (PLAIN, SCRAM, OAUTHBEARER's
	// authzid) on a SaslAuthenticate request and on every request after
	// the connection authenticated; never a password or proof.
	Principal string `json:"principal,omitempty"`

	// SoftwareName and SoftwareVersion are the client software the
	// connection announced in its ApiVersions request (v3+, KIP-511), on
	// that request and every later one of the connection. Empty when it
	// announced none (an older client) or the capture missed it.
	SoftwareName    string `json:"software_name,omitempty"`
	SoftwareVersion string `json:"software_version,omitempty"`
	// Producer is what a produce request's record batch headers say of
	// the producer's settings; zero for other requests.
	Producer Producer `json:"producer,omitzero"`
	// Fetch is a Fetch request's wait and size settings; zero for other
	// requests.
	Fetch FetchParams `json:"fetch,omitzero"`
	// Group names the consumer group and member of a group request
	// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
	// OffsetFetch, ConsumerGroupHeartbeat); zero for other requests.
	Group Group `json:"group,omitzero"`
	// GroupResult is what the response to a group request said of the
	// group: JoinGroup's generation, member id and leader,
	// ConsumerGroupHeartbeat's member id and epoch; zero for other
	// requests and unanswered ones.
	GroupResult GroupResult `json:"group_result,omitzero"`
	// AllTopics is set on a Metadata request that asks for every topic
	// of the cluster.
	AllTopics bool `json:"all_topics,omitempty"`

	// Answered is false when no response was paired with the request.
	Answered bool `json:"answered"`
	// Partial is true when part of the request or response was lost in a
	// capture gap, so some fields may be missing.
	Partial bool `json:"partial,omitempty"`
	// ClockStep is true when the response is timestamped before the
	// request: the capture's clock stepped back between them. End and
	// LatencyMs are what the timestamps say, which is no latency: the
	// request is left out of latency statistics.
	ClockStep bool `json:"clock_step,omitempty"`
}

// Partition is one topic-partition named in a request (produce) or in its
// response (fetch).
type Partition struct {
	Topic      string   `json:"topic"`
	TopicID    string   `json:"topic_id,omitempty"` // Kafka's base64 form
	Partition  int32    `json:"partition"`
	Records    int      `json:"records"`
	Bytes      int      `json:"bytes"` // record batch bytes
	MessageIDs []string `json:"message_ids,omitempty"`
	// Batches, for produce requests, is the number of record batches (a
	// magic 0 or 1 message set counts each top-level message).
	Batches   int   `json:"batches,omitempty"`
	ErrorCode int16 `json:"error_code"`
	// FetchOffset, for Fetch requests: the offset the fetcher asked to
	// read from. A follower's fetch offset is its log end offset: it holds
	// every offset below it, and the leader's high watermark may move up
	// to it. Nil for the partitions only the response named (an
	// incremental fetch session leaves out of a request the partitions
	// whose offset did not change).
	FetchOffset *int64 `json:"fetch_offset,omitempty"`
	// BaseOffset, for produce requests whose response appended the
	// partition (error code 0): the offset the leader gave the first
	// record, so the request's last offset is BaseOffset+Records-1. Nil
	// when unanswered, failed, or the response was not decoded.
	BaseOffset *int64 `json:"base_offset,omitempty"`
	// HighWatermark, for Fetch responses that answered the partition
	// (error code 0): the leader's high watermark then. With the
	// request's FetchOffset, how far behind the fetcher read.
	HighWatermark *int64 `json:"high_watermark,omitempty"`
	// FirstOffset and LastOffset, for Fetch responses that returned
	// record batches: the first batch's base offset and the last batch's
	// last offset (the broker returns whole batches, so FirstOffset may
	// lie below the fetch offset). FirstTimestamp is the first batch's
	// first timestamp and MaxTimestamp the last batch's largest, in Unix
	// milliseconds (CreateTime, or LogAppendTime where the topic says
	// so; -1 for magic 0, and for a batch whose base timestamp the log
	// cleaner replaced by its delete horizon, KIP-534). Nil when no whole
	// batch was returned. With the
	// response's time, how old the data at the consumer's position was.
	FirstOffset    *int64 `json:"first_offset,omitempty"`
	LastOffset     *int64 `json:"last_offset,omitempty"`
	FirstTimestamp *int64 `json:"first_timestamp_ms,omitempty"`
	MaxTimestamp   *int64 `json:"max_timestamp_ms,omitempty"`
	// LogStartOffset, for Fetch responses (v5+) without error: the
	// partition's first offset then.
	LogStartOffset *int64 `json:"log_start_offset,omitempty"`
	// CommittedOffset, for OffsetCommit requests: the offset the group
	// commits for the partition (the next record the group will read).
	CommittedOffset *int64 `json:"committed_offset,omitempty"`
	// BatchStats, for produce requests decoded with
	// wire.Config.BatchStats only: the batches' sizes.
	BatchStats *BatchStats `json:"batch_stats,omitempty"`
}

// Latency returns End-Arrival, or zero when the request was not answered.
func (r *Request) Latency() time.Duration {
	if r.End.IsZero() {
		return 0
	}
	return r.End.Sub(r.Arrival)
}

// TopicIDString formats a 16-byte topic id the way Kafka prints it:
// URL-safe base64 without padding.
func TopicIDString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseTopicID parses Kafka's base64 form of a topic id. It allocates
// nothing: the decoder calls it for every partition whose topic name is
// not known yet.
func ParseTopicID(s string) ([16]byte, bool) {
	var id [16]byte
	if len(s) != base64.RawURLEncoding.EncodedLen(len(id)) {
		return id, false
	}
	n, err := base64.RawURLEncoding.Decode(id[:], []byte(s))
	return id, err == nil && n == len(id)
}
