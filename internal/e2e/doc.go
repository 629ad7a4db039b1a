// Package e2e holds kscope's acceptance tests: real Apache Kafka brokers
// (internal/lab), real clients (franz-go and the Java tools), real packet
// captures (tcpdump on loopback), checked against the broker's own request
// log. It has no non-test code.
package e2e
