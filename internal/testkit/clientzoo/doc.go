// Package clientzoo runs real Kafka clients of several kinds and ages,
// that kscope did not write, against a broker, each with a known
// configuration that it declares, so that tests can compare what kscope
// recovers from the wire (kscope clients) with what each client was told
// to do and with the broker's own request log.
//
// The zoo (Default): the Apache Kafka Java client of the lab's pinned
// release and an old one (2.0.1, from Maven Central), librdkafka through
// confluent-kafka (negotiating, and told the broker is 0.9.0 without
// asking), kafka-python pinned to api_version (0, 10, 1), franz-go, Sarama
// told the broker is 0.10.2 and 3.9, a Java consumer in a KIP-848 group
// (Kafka 4.0+ only), and two storms written with franz-go: a client that
// reconnects in a loop and one that polls Metadata for all topics.
//
// A Client is both the declaration and the configuration: each runner maps
// its fields onto its library's settings (java.go, python.go, franz.go,
// sarama.go, storm.go), and refuses a field its library cannot honour, so
// what a client declares is what it was configured with. Every run is
// bounded in count (records, connections, polls) and in time
// (Client.Timeout, and ctx).
//
// What the clients need beyond Go is resolved by scripts, which
// scripts/setup.sh runs too: scripts/kafka-jars.sh (the current Java
// client), scripts/kafka-clients-old.sh (the old one),
// scripts/python-venv.sh (confluent-kafka, kafka-python) and
// scripts/zoo-sarama.sh (the Sarama client, a Go module of its own in
// sarama/ so that Sarama never enters kscope's go.mod). See
// docs/clientzoo.md.
//
// Test harness only: the kscope binary never imports it.
package clientzoo
