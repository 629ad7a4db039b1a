package clientzoo

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// The libraries the zoo runs (Client.Library).
const (
	Java        = "java"         // Apache Kafka's kafka-clients, Client.Version names the jar
	Librdkafka  = "librdkafka"   // through confluent-kafka for Python
	KafkaPython = "kafka-python" // pure Python
	FranzGo     = "franz-go"     // in this process
	Sarama      = "sarama"       // github.com/IBM/sarama, a subprocess (sarama/)
	Storm       = "storm"        // franz-go's kgo and kmsg, driven to misbehave
)

// Group protocols (Consumer.GroupProtocol).
const (
	Classic  = "classic"  // JoinGroup/SyncGroup/Heartbeat
	KIP848   = "consumer" // ConsumerGroupHeartbeat (Kafka 4.0+)
	kip848At = "4.0.0"    // the first release whose consumer groups are GA
)

// Storm patterns (StormLoad.Pattern).
const (
	// Reconnect opens a connection, sends ApiVersions and a Metadata
	// request for the client's topic, and closes it, Count times.
	Reconnect = "reconnect"
	// MetadataAll sends Count Metadata requests for all topics (a null
	// topic list) on one connection.
	MetadataAll = "metadata-all"
)

// DefaultTimeout bounds a client's run when Client.Timeout is zero.
const DefaultTimeout = 45 * time.Second

// Client is one client of the zoo, with one client id: what it is, what
// it was configured with, and its workload. The runners configure the
// library from these fields only.
type Client struct {
	// Kind labels the client for people and tests: "java-4.1.2",
	// "librdkafka-noapiversion", "sarama-0.10.2"...
	Kind     string
	ClientID string
	// Library is one of Java, Librdkafka, KafkaPython, FranzGo, Sarama,
	// Storm; Version is its release (for Java the kafka-clients jar it
	// runs, which decides what it sends).
	Library string
	Version string
	// Pin is the Kafka release the client is told the broker is, rather
	// than asking it (ApiVersions): Sarama's Config.Version,
	// kafka-python's api_version, librdkafka's broker.version.fallback
	// with api.version.request=false. Empty: the client negotiates.
	Pin string
	// Topic is produced to and consumed from; the storms' Metadata
	// requests name it (Reconnect).
	Topic string
	// Software is what the client reports in ApiVersions v3+ (KIP-511)
	// and the broker logs as clientInformation; zero when it sends no
	// ApiVersions v3+ (the broker then logs "unknown").
	Software Software
	Producer *Producer  // nil: it produces nothing
	Consumer *Consumer  // nil: it consumes nothing (runs after Producer)
	Storm    *StormLoad // Library Storm only
	// MinBroker is the oldest broker release the client can work with
	// (a KIP-848 consumer: 4.0.0); Run skips it against older brokers.
	MinBroker string
	// Timeout bounds the client's whole run (0: DefaultTimeout).
	Timeout time.Duration
}

// Software is a client's self-description (KIP-511).
type Software struct {
	Name    string
	Version string
}

// Unknown is what the broker logs for a client that sent no ApiVersions
// v3+: Kafka's ClientInformation.UNKNOWN_NAME_OR_VERSION.
const Unknown = "unknown"

// Logged is the clientInformation the broker's request log shows for s.
func (s Software) Logged() Software {
	if s == (Software{}) {
		return Software{Unknown, Unknown}
	}
	return s
}

// Producer is a producer's configuration and workload. Records have a key
// "k<i>" (so they spread over partitions) and a RecordSize-byte value.
type Producer struct {
	Acks          int16  // 0, 1 or -1 (all)
	Compression   string // none, gzip, snappy, lz4 or zstd
	Idempotent    bool
	Transactional bool // one transaction around all records (implies Idempotent)
	// BatchSize is the producer's batch limit in bytes: batch.size (Java,
	// librdkafka, kafka-python's batch_size), ProducerBatchMaxBytes
	// (franz-go), Producer.Flush.Bytes (Sarama: a flush trigger per
	// broker request, not a per-partition limit).
	BatchSize int
	// LingerMs is linger.ms (Java, librdkafka, kafka-python),
	// ProducerLinger (franz-go), Producer.Flush.Frequency (Sarama).
	LingerMs   int
	Records    int
	RecordSize int
	// Burst records are sent at once; the rest at Rate per second (0:
	// unpaced), so that both full batches and linger-bound ones are seen.
	Burst int
	Rate  int
}

// TransactionalID is the transactional.id of a transactional producer.
func (c Client) TransactionalID() string { return c.ClientID + "-txn" }

// Consumer is a consumer's configuration and workload: it reads Records
// records of the client's topic from the start in Group, commits and
// leaves the group.
type Consumer struct {
	Group          string
	GroupProtocol  string // Classic or KIP848
	FetchMaxWaitMs int    // fetch.max.wait.ms (librdkafka: fetch.wait.max.ms)
	FetchMinBytes  int
	Records        int
}

// StormLoad is a storm client's workload: Count connections or requests
// at PerSecond.
type StormLoad struct {
	Pattern   string // Reconnect or MetadataAll
	Count     int
	PerSecond float64
}

func (c Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// Validate checks what every runner relies on; each runner checks what
// its library cannot do on top.
func (c Client) Validate() error {
	var errs []error
	if c.ClientID == "" || c.Kind == "" {
		errs = append(errs, errors.New("empty ClientID or Kind"))
	}
	if c.Library == Storm {
		errs = append(errs, c.validateStorm())
	} else if c.Producer == nil && c.Consumer == nil {
		errs = append(errs, errors.New("neither Producer nor Consumer"))
	}
	if (c.Producer != nil || c.Consumer != nil) && c.Topic == "" {
		errs = append(errs, errors.New("no Topic"))
	}
	if p := c.Producer; p != nil {
		errs = append(errs, p.validate())
	}
	if k := c.Consumer; k != nil {
		errs = append(errs, k.validate())
		if k.GroupProtocol == KIP848 && c.MinBroker == "" {
			errs = append(errs, fmt.Errorf("a %s group needs MinBroker %s", KIP848, kip848At))
		}
	}
	if c.MinBroker != "" {
		if _, err := parseRelease(c.MinBroker); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clientzoo: client %q (%s): %w", c.ClientID, c.Kind, err)
	}
	return nil
}

func (c Client) validateStorm() error {
	s := c.Storm
	switch {
	case s == nil:
		return errors.New("Library storm without Storm")
	case s.Pattern != Reconnect && s.Pattern != MetadataAll:
		return fmt.Errorf("storm pattern %q: want %s or %s", s.Pattern, Reconnect, MetadataAll)
	case s.Count <= 0 || s.Count > 100_000 || !(s.PerSecond > 0):
		return fmt.Errorf("storm of %d at %v/s: want 1..100000 at a positive rate", s.Count, s.PerSecond)
	case c.Producer != nil || c.Consumer != nil:
		return errors.New("a storm neither produces nor consumes")
	}
	return nil
}

func (p *Producer) validate() error {
	switch {
	case p.Acks != 0 && p.Acks != 1 && p.Acks != -1:
		return fmt.Errorf("acks %d: want 0, 1 or -1", p.Acks)
	case !slices.Contains(codecs, p.Compression):
		return fmt.Errorf("compression %q: want one of %v", p.Compression, codecs)
	case (p.Idempotent || p.Transactional) && p.Acks != -1:
		return errors.New("an idempotent or transactional producer needs acks -1")
	case p.Transactional && !p.Idempotent:
		return errors.New("a transactional producer is idempotent: set Idempotent")
	case p.Records <= 0 || p.Records > 1_000_000 || p.RecordSize <= 0 || p.RecordSize > 1<<20:
		return fmt.Errorf("%d records of %d B: want 1..1000000 of 1 B..1 MiB", p.Records, p.RecordSize)
	case p.BatchSize <= 0 || p.LingerMs < 0 || p.Burst < 0 || p.Rate < 0:
		return errors.New("BatchSize must be positive, LingerMs, Burst and Rate not negative")
	}
	return nil
}

func (k *Consumer) validate() error {
	switch {
	case k.Group == "":
		return errors.New("consumer without Group")
	case k.GroupProtocol != Classic && k.GroupProtocol != KIP848:
		return fmt.Errorf("group protocol %q: want %s or %s", k.GroupProtocol, Classic, KIP848)
	case k.Records <= 0 || k.FetchMaxWaitMs <= 0 || k.FetchMinBytes <= 0:
		return errors.New("Records, FetchMaxWaitMs and FetchMinBytes must be positive")
	}
	return nil
}
