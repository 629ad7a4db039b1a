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
	clients := []Client{
		javaCurrent(id),
		javaKIP848(id),
		javaOld(id),
		librdkafkaDefaults(id),
		librdkafkaNoAPIVersion(id),
		kafkaPythonOld(id),
		franzGo(id),
		saramaOld(id),
		saramaCurrent(id),
		{
			Kind: "storm-reconnect", ClientID: id("storm-reconnect"), Library: Storm,
			Topic: id("storm-reconnect"), Software: FranzSoftware(),
			Storm: &StormLoad{Pattern: Reconnect, Count: 150, PerSecond: 25},
		},
		{
			Kind: "storm-metadata", ClientID: id("storm-metadata"), Library: Storm,
			Software: FranzSoftware(),
			Storm:    &StormLoad{Pattern: MetadataAll, Count: 300, PerSecond: 30},
		},
	}
	return clients
}

// client fills what every producing and consuming client of Default
// shares: kind, ids, topic, group.
func client(id func(string) string, kind, library, version string, p *Producer, k *Consumer) Client {
	c := Client{Kind: kind, ClientID: id(kind), Library: library, Version: version, Topic: id(kind), Producer: p, Consumer: k}
	if k != nil {
		k.Group = id(kind) + "-group"
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

func javaCurrent(id func(string) string) Client {
	c := client(id, "java-"+lab.KafkaVersion, Java, lab.KafkaVersion,
		load(Producer{Acks: -1, Compression: "zstd", Idempotent: true, Transactional: true, BatchSize: 32768, LingerMs: 20}, 600, 200),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 250, FetchMinBytes: 1024})
	c.Software = Software{javaSoftware, lab.KafkaVersion}
	return c
}

func javaKIP848(id func(string) string) Client {
	c := client(id, "java-"+lab.KafkaVersion+"-kip848", Java, lab.KafkaVersion,
		load(Producer{Acks: -1, Compression: "snappy", Idempotent: true, BatchSize: 16384, LingerMs: 10}, 400, 300),
		&Consumer{GroupProtocol: KIP848, FetchMaxWaitMs: 300, FetchMinBytes: 2048})
	c.Software = Software{javaSoftware, lab.KafkaVersion}
	c.MinBroker = kip848At
	return c
}

func javaOld(id func(string) string) Client {
	return client(id, "java-"+OldJavaVersion, Java, OldJavaVersion,
		load(Producer{Acks: 1, Compression: "gzip", BatchSize: 8192, LingerMs: 50}, 600, 150),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 400, FetchMinBytes: 512})
}

// librdkafkaDefaults is librdkafka as most applications run it: its
// defaults, set explicitly so that the declaration is what it ran with.
func librdkafkaDefaults(id func(string) string) Client {
	c := client(id, "librdkafka", Librdkafka, LibrdkafkaVersion,
		load(Producer{Acks: -1, Compression: "none", BatchSize: 1000000, LingerMs: 5}, 800, 250),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 500, FetchMinBytes: 1})
	c.Software = Software{rdkafkaSoftware, ConfluentKafkaVersion + "-rdkafka-" + LibrdkafkaVersion}
	return c
}

// librdkafkaNoAPIVersion is librdkafka with api.version.request=false and
// broker.version.fallback=0.9.0: the versions of Kafka 0.9, unasked.
func librdkafkaNoAPIVersion(id func(string) string) Client {
	c := client(id, "librdkafka-noapiversion", Librdkafka, LibrdkafkaVersion,
		load(Producer{Acks: 1, Compression: "snappy", BatchSize: 65536, LingerMs: 30}, 600, 350),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 350, FetchMinBytes: 100})
	c.Pin = "0.9.0"
	return c
}

func kafkaPythonOld(id func(string) string) Client {
	c := client(id, "kafka-python-0.10.1", KafkaPython, KafkaPythonVersion,
		load(Producer{Acks: -1, Compression: "gzip", BatchSize: 4096, LingerMs: 15}, 500, 120),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 200, FetchMinBytes: 64})
	c.Pin = "0.10.1"
	return c
}

func franzGo(id func(string) string) Client {
	c := client(id, "franz-go", FranzGo, FranzSoftware().Version,
		load(Producer{Acks: 1, Compression: "lz4", BatchSize: 65536, LingerMs: 10}, 1000, 180),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 450, FetchMinBytes: 4096})
	c.Software = FranzSoftware()
	return c
}

// saramaOld is Sarama told the broker is 0.10.2: the versions of that
// release, whatever the broker offers. A current Sarama still sends
// ApiVersions v3 (Config.ApiVersionsRequest), so it names itself.
func saramaOld(id func(string) string) Client {
	c := client(id, "sarama-0.10.2", Sarama, SaramaVersion,
		load(Producer{Acks: -1, Compression: "lz4", BatchSize: 16384, LingerMs: 25}, 600, 400),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 100, FetchMinBytes: 16})
	c.Pin = "0.10.2.0"
	c.Software = Software{saramaSoftware, SaramaVersion}
	return c
}

func saramaCurrent(id func(string) string) Client {
	c := client(id, "sarama-3.9", Sarama, SaramaVersion,
		load(Producer{Acks: -1, Compression: "zstd", Idempotent: true, BatchSize: 32768, LingerMs: 15}, 600, 480),
		&Consumer{GroupProtocol: Classic, FetchMaxWaitMs: 550, FetchMinBytes: 32})
	c.Pin = "3.9.0"
	c.Software = Software{saramaSoftware, SaramaVersion}
	return c
}
