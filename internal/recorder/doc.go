// Package recorder makes a recording of a live broker: it captures the
// broker's Kafka traffic (AF_PACKET), traces its writes, journal, waits
// and scheduling with eBPF, samples the host's USE figures, collects the
// JVM's pauses (its log or a flight recording) and writes them all into a
// recording directory (package recording) that explain and report read.
//
// It is what `kscope record` runs, and the first step of `kscope doctor`.
// A source the host cannot give (no schedstats, no JVM attach, no steal
// clock) is noted and kept in meta.json; the recording goes on without it.
package recorder
