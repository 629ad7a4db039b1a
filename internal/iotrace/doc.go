// Package iotrace traces the write and fsync system calls of a Kafka
// broker with eBPF and attributes each one to the topic-partition and
// segment file it went to.
//
// The BPF side (bpf/iotrace.bpf.c, compiled by bpf2go into the committed
// iotrace_bpfel.go and .o) attaches to the syscalls tracepoints only, since
// many kernels refuse kprobes and fentry. It filters by the broker's
// process id in the kernel, counts every call in a log2 latency histogram
// per file (device, inode) and operation, and sends the calls at or above
// a minimum latency to user space through a ring buffer.
//
// The user side (Tracer) names each file from the broker's open files
// (/proc/PID/fd) or its log directories, turns it into a topic, partition
// and segment with logdir.ParsePath, names threads from
// /proc/PID/task/TID/comm, and converts the kernel's CLOCK_MONOTONIC
// timestamps to the wall clock.
//
// With Config.Journal a second BPF object (bpf/iojournal.bpf.c, in
// iojournal_bpfel.go and .o) times what lies under those calls on the log
// directories' devices: ext4 jbd2 commits with jbd2_run_stats' phases,
// ext4 fsyncs, XFS iclog writes and log forces, and block requests, from
// the jbd2, ext4, xfs and block tracepoints, with histograms per (device,
// kind) and its own ring buffer. See docs/iotrace.md.
package iotrace
