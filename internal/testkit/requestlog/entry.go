package requestlog

import (
	"encoding/json"
	"time"
)

// API keys of the requests Entry.TopicPartitions is filled for (Produce,
// Fetch, OffsetCommit: what kscope's decoder names partitions of), and
// of those Parse learns topic ids from.
const (
	KeyProduce      int16 = 0
	KeyFetch        int16 = 1
	KeyMetadata     int16 = 3
	KeyOffsetCommit int16 = 8
	KeyCreateTopics int16 = 19
)

// Entry is one completed request.
type Entry struct {
	// Time is the log line's timestamp (zero when it has none).
	Time time.Time

	APIKey     int16
	APIName    string // e.g. "PRODUCE", as Kafka names it
	APIVersion int16
	// Deprecated is the broker's word that APIVersion is deprecated
	// (requestApiVersionDeprecated, logged by Kafka 3.7 to 3.9 for the
	// versions KIP-896 removes in 4.0; absent, so false, elsewhere).
	Deprecated    bool
	CorrelationID int32
	ClientID      string

	// Connection is Kafka's connection id,
	// "brokerIP:port-clientIP:port-processor-index".
	Connection string
	ClientAddr string // client "ip:port" ("[ip]:port" for IPv6)
	BrokerAddr string // broker listener "ip:port"

	TotalTimeMs         float64
	RequestQueueTimeMs  float64
	LocalTimeMs         float64
	RemoteTimeMs        float64
	ThrottleTimeMs      float64
	ResponseQueueTimeMs float64
	SendTimeMs          float64

	IsForwarded      bool
	Listener         string // "PLAINTEXT", "CONTROLLER", ...
	SecurityProtocol string
	Principal        string
	SoftwareName     string // client software (ApiVersions v3+)
	SoftwareVersion  string

	// TopicPartitions named by a Produce, Fetch or OffsetCommit request, in request order.
	TopicPartitions []TopicPartition

	// Request and Response are the raw JSON, for anything not lifted above.
	Request  json.RawMessage
	Response json.RawMessage
}

// TopicPartition is a partition a request names. Newer request versions
// carry only the topic id; Topic is then filled from elsewhere in the log
// when possible.
type TopicPartition struct {
	Topic     string
	TopicID   string // base64 Kafka Uuid, "" when the request named the topic
	Partition int32
}
