package clientzoo

import (
	"github.com/kscope-dev/kscope/internal/lab"
)

// The releases of the zoo's clients that are not this module's. Each is
// checked by a test against the file that pins it (lab/python/
// requirements.txt, sarama/go.mod), and against what the broker logs.
const (
	// OldJavaVersion is the old Java client: Kafka 2.0.1 (2018) sends
	// ApiVersions v2 (no software name, KIP-511 came with 2.4), Produce
	// v6, Fetch v8, and has no zstd.
	OldJavaVersion = "2.0.1"
	// ConfluentKafkaVersion and LibrdkafkaVersion: the confluent-kafka
	// wheel and the librdkafka bundled in it.
	ConfluentKafkaVersion = "2.16.1"
	LibrdkafkaVersion     = "2.16.0"
	KafkaPythonVersion    = "3.0.12"
	SaramaVersion         = "v1.61.1"
)

// The software names the clients report (KIP-511).
const (
	javaSoftware    = "apache-kafka-java"
	rdkafkaSoftware = "confluent-kafka-python"
	saramaSoftware  = "sarama"
)

// Default is the zoo: one client of each kind, each with settings of its
// own (acks, codec, idempotence, batch size, linger, fetch wait and
// minimum), so that a decoder that mixed two clients up would be caught.
// Client ids and topics are prefix-KIND, groups prefix-KIND-group. The
// KIP-848 consumer runs against Kafka 4.0+ only (MinBroker).
func Default(prefix string) []Client {
	id := func(kind string) string { return prefix + "-" + kind }
	return []Client{
		JavaCurrent(id(javaCurrentKind), id(javaCurrentKind)),
		JavaKIP848(id(javaKIP848Kind), id(javaKIP848Kind)),
		JavaOld(id(javaOldKind), id(javaOldKind)),
		LibrdkafkaDefaults(id("librdkafka"), id("librdkafka")),
		LibrdkafkaNoAPIVersion(id("librdkafka-noapiversion"), id("librdkafka-noapiversion")),
		KafkaPythonOld(id("kafka-python-0.10.1"), id("kafka-python-0.10.1")),
		FranzGoClient(id("franz-go"), id("franz-go")),
		SaramaOld(id("sarama-0.10.2"), id("sarama-0.10.2")),
		SaramaCurrent(id("sarama-3.9"), id("sarama-3.9")),
		ReconnectStorm(id("storm-reconnect"), id("storm-reconnect")),
		MetadataStorm(id("storm-metadata")),
	}
}

var (
	javaCurrentKind = "java-" + lab.KafkaVersion
	javaKIP848Kind  = "java-" + lab.KafkaVersion + "-kip848"
	javaOldKind     = "java-" + OldJavaVersion
)

// client fills what every producing and consuming client shares: its
// consumer's group is clientID-group and reads all that its producer
// wrote.
func client(kind, clientID, topic, library, version string, p *Producer, k *Consumer) Client {
	c := Client{Kind: kind, ClientID: clientID, Library: library, Version: version, Topic: topic, Producer: p, Consumer: k}
	if k != nil {
		k.Group = clientID + "-group"
		k.Records = p.Records
	}
	return c
}

// load is a producer workload of n records of size bytes: half at once,
// half at 150 records/s.
func load(p Producer, n, size int) *Producer {
	p.Records, p.RecordSize, p.Burst, p.Rate = n, size, n/2, 150
	return &p
}

// JavaCurrent is the Java client of the lab's pinned release: a
// transactional producer (zstd) and a classic group consumer.
func JavaCurrent(clientID, topic string) Client {
	c := client(javaCurrentKind, clientID, topic, Java, lab.KafkaVersion,
		load(Producer{Acks: -1, Compression: "zstd", Idempotent: true, Transactional: true, BatchSize: 32768, LingerMs: 20}, 600, 200),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 250, FetchMinBytes: 1024})
	c.Software = Software{javaSoftware, lab.KafkaVersion}
	return c
}

// JavaKIP848 is the same Java client with an idempotent producer (snappy)
// and a consumer in a KIP-848 group (Kafka 4.0+).
func JavaKIP848(clientID, topic string) Client {
	c := client(javaKIP848Kind, clientID, topic, Java, lab.KafkaVersion,
		load(Producer{Acks: -1, Compression: "snappy", Idempotent: true, BatchSize: 16384, LingerMs: 10}, 400, 300),
		&Consumer{GroupProtocol: KIP848, FetchMaxWaitMs: 300, FetchMinBytes: 2048})
	c.Software = Software{javaSoftware, lab.KafkaVersion}
	c.MinBroker = kip848At
	return c
}

// JavaOld is kafka-clients OldJavaVersion: acks=1, gzip.
func JavaOld(clientID, topic string) Client {
	return client(javaOldKind, clientID, topic, Java, OldJavaVersion,
		load(Producer{Acks: 1, Compression: "gzip", BatchSize: 8192, LingerMs: 50}, 600, 150),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 400, FetchMinBytes: 512})
}

// LibrdkafkaDefaults is librdkafka as most applications run it: its
// defaults, set explicitly so that the declaration is what it ran with.
func LibrdkafkaDefaults(clientID, topic string) Client {
	c := client("librdkafka", clientID, topic, Librdkafka, LibrdkafkaVersion,
		load(Producer{Acks: -1, Compression: "none", BatchSize: 1000000, LingerMs: 5}, 800, 250),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 500, FetchMinBytes: 1})
	c.Software = Software{rdkafkaSoftware, ConfluentKafkaVersion + "-rdkafka-" + LibrdkafkaVersion}
	return c
}

// LibrdkafkaNoAPIVersion is librdkafka with api.version.request=false and
// broker.version.fallback=0.9.0: the versions of Kafka 0.9, unasked.
func LibrdkafkaNoAPIVersion(clientID, topic string) Client {
	c := client("librdkafka-noapiversion", clientID, topic, Librdkafka, LibrdkafkaVersion,
		load(Producer{Acks: 1, Compression: "snappy", BatchSize: 65536, LingerMs: 30}, 600, 350),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 350, FetchMinBytes: 100})
	c.Pin = "0.9.0"
	return c
}

// KafkaPythonOld is kafka-python with api_version (0, 10, 1).
func KafkaPythonOld(clientID, topic string) Client {
	c := client("kafka-python-0.10.1", clientID, topic, KafkaPython, KafkaPythonVersion,
		load(Producer{Acks: -1, Compression: "gzip", BatchSize: 4096, LingerMs: 15}, 500, 120),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 200, FetchMinBytes: 64})
	c.Pin = "0.10.1"
	return c
}

// FranzGoClient is franz-go in this process: acks=1, lz4, not idempotent.
func FranzGoClient(clientID, topic string) Client {
	c := client("franz-go", clientID, topic, FranzGo, FranzSoftware().Version,
		load(Producer{Acks: 1, Compression: "lz4", BatchSize: 65536, LingerMs: 10}, 1000, 180),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 450, FetchMinBytes: 4096})
	c.Software = FranzSoftware()
	return c
}

// SaramaOld is Sarama told the broker is 0.10.2: the versions of that
// release, whatever the broker offers. A current Sarama still sends
// ApiVersions v3 (Config.ApiVersionsRequest), so it names itself.
func SaramaOld(clientID, topic string) Client {
	c := client("sarama-0.10.2", clientID, topic, Sarama, SaramaVersion,
		load(Producer{Acks: -1, Compression: "lz4", BatchSize: 16384, LingerMs: 25}, 600, 400),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 100, FetchMinBytes: 16})
	c.Pin = "0.10.2.0"
	c.Software = Software{saramaSoftware, SaramaVersion}
	return c
}

// SaramaCurrent is Sarama told the broker is 3.9: idempotent, zstd.
func SaramaCurrent(clientID, topic string) Client {
	c := client("sarama-3.9", clientID, topic, Sarama, SaramaVersion,
		load(Producer{Acks: -1, Compression: "zstd", Idempotent: true, BatchSize: 32768, LingerMs: 15}, 600, 480),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 550, FetchMinBytes: 32})
	c.Pin = "3.9.0"
	c.Software = Software{saramaSoftware, SaramaVersion}
	return c
}

// ReconnectStorm reconnects 150 times at 25 per second, asking each time
// for the metadata of topic.
func ReconnectStorm(clientID, topic string) Client {
	return Client{
		Kind: "storm-reconnect", ClientID: clientID, Library: Storm, Topic: topic, Software: FranzSoftware(),
		Storm: &StormLoad{Pattern: Reconnect, Count: 150, PerSecond: 25},
	}
}

// MetadataStorm asks for the metadata of all topics 300 times at 30 per
// second, on one connection.
func MetadataStorm(clientID string) Client {
	return Client{
		Kind: "storm-metadata", ClientID: clientID, Library: Storm, Software: FranzSoftware(),
		Storm: &StormLoad{Pattern: MetadataAll, Count: 300, PerSecond: 30},
	}
}
