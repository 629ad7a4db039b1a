// Package wire turns reassembled TCP streams to and from Kafka brokers into
// request events: it frames the byte streams, decodes request and response
// headers (v0-v2, flexible tagged fields), pairs responses to requests by
// correlation id per connection, and decodes the bodies that matter for
// latency analysis (produce and fetch partitions and their record batches,
// metadata for topic ids, throttle times and error codes).
//
// Bytes from the wire are untrusted. Frame sizes are bounded, buffers grow
// only with bytes actually received, and after a gap in a stream (lost
// packets, a capture that starts mid-connection) the decoder resynchronises
// on the next plausible frame and counts the bytes it skipped.
package wire
