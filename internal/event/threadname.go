package event

import "strings"

// A broker JVM's thread names, as the tracer sees them (the comm, which the
// JVM sets to the Java name cut to 15 bytes) or JFR does (whole).

// IsStopTheWorldThread reports whether name is a thread that works while
// the JVM is stopped: the VM Thread, which runs the VM operation, and the
// GC's parallel workers.
func IsStopTheWorldThread(name string) bool {
	return name == "VM Thread" || strings.HasPrefix(name, "GC Thread#")
}

// MaybeRequestHandler reports whether name can be a request handler's:
// data-plane-kafka-request-handler-N since Kafka 2.2,
// kafka-request-handler-N before. The network threads share the first's
// 15-byte prefix, so a comm alone does not tell them apart: a caller
// knows the network threads as those serving connections (ConnThread),
// or the handlers as those appending to partition logs.
func MaybeRequestHandler(name string) bool {
	return strings.HasPrefix(name, "data-plane-kafk") || strings.HasPrefix(name, "kafka-request-h")
}
