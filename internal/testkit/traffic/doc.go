// Package traffic generates bounded Kafka traffic against a lab broker for
// tests: franz-go (Go) and the Apache Kafka Java clients (ProducerPerformance,
// ConsoleConsumer) from the same jars the broker runs on. Every generator
// stops after n records or when ctx is done, whichever comes first.
package traffic
