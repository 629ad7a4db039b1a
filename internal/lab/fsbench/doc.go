// Package fsbench is `kscope lab fs`: it measures how the file system
// under a Kafka broker's log directory shapes produce latency, the way
// Allegro compared ext4, ext4 with data=writeback, ext4 with fast_commit
// and XFS (docs/labfs.md).
//
// Each run of a variant makes the file system afresh on a loop device
// backed by a sparse image in the work dir, mounts it, starts a real
// broker (internal/lab) with its log dir there, optionally adds a noisy
// neighbour on the same file system (a writer that fsyncs in a loop, which
// makes ext4's jbd2 commits contend with the broker's appends) and
// injected stalls (fsfreeze), runs the open-loop load of internal/bench
// with the broker's writes and the file system's journal commits traced
// by internal/iotrace, and tears everything down. Variants are
// interleaved within each trial round (ABCD ABCD ...) so that drift of the
// machine favours none.
//
// Per run it keeps produce latency (bench's service latency) p50, p99,
// p99.9 and max, the share of messages over an SLO (from the run's
// HdrHistogram), the broker's write latency p99, and the journal's commit
// latency p99 and count; per variant the mean over trials with a 95%
// confidence interval (Student's t); and per metric a verdict against the
// first variant from a Mann–Whitney test on the per-second samples pooled
// over trials, Holm-adjusted over the metrics (the statistics of
// internal/bench/compare). Output: a table, JSON, and one self-contained
// HTML page.
//
// Everything it creates outside its own process (image files, loop
// devices, mounts, broker JVMs, frozen file systems) is pushed on a
// cleanup stack that is unwound in reverse on every exit path, and listed
// in a state file in the work dir, so that the next run (or Cleanup, for
// `kscope lab fs --cleanup`) removes what a killed run left behind.
package fsbench
