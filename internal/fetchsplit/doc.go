// Package fetchsplit splits a consumer Fetch's time, as the wire gives it
// (its request's first byte to its response's last), into what it was
// spent on:
//
//   - purgatory: waiting for data that was not there. The fetch asked the
//     broker to hold it until min_bytes were there or max_wait_ms passed;
//     a consumer that has caught up spends most of its fetch time so. It
//     is normal, and never counts as slow.
//   - other: the rest of the wait before the response started: the
//     request queued on its connection, the request queue, the network
//     thread busy with other connections, locks.
//   - reading: the network thread's reads for this response (sendfile),
//     from a recording's traces; disk is the part that came from disk
//     (page-cache misses, the thread asleep on a block read). A capture
//     alone cannot see it: reading is then 0 and part of sending.
//   - sending: the response's first byte to its last on the wire.
//
// The abnormal part, the one that makes a fetch slow, is other, plus the
// reading from disk, plus the sending beyond what its bytes take at
// Options.SendRate.
//
// When purgatory ended is inferred from the requests of the same capture
// (Basis says how): a response with fewer than min_bytes waited for data
// up to max_wait_ms; a response with data waited until data for one of
// its partitions became available, which the capture shows as the first
// produce answered or fetch response (of any fetcher, follower or
// consumer) giving the partition a high watermark past the fetch offset.
// When the capture shows data already there before the broker could read
// the fetch, the fetch did not wait for it; when it shows nothing either
// way, the wait up to max_wait_ms is taken for purgatory (BasisAssumed):
// a broker answers a fetch as soon as it has the data, so this is what a
// fetch from a consumer at the end of its log looks like.
//
// The Splitter is a sink of the one decode pipeline: it takes
// *event.Request as the decoder emits them (in the order responses
// ended), nothing else. Its memory is bounded (Options.MaxPartitions).
package fetchsplit
