package event

import "time"

// Write is one write or fsync system call of a Kafka broker on a file in
// one of its log directories, traced by kscope iotrace (eBPF). Despite the
// name it also stands for fsync and fdatasync: Op says which call it was.
//
// Start and End are on the wall clock (CLOCK_REALTIME), the same clock as
// packet capture timestamps, so writes can be joined with requests. The
// kernel times calls on CLOCK_MONOTONIC; see docs/iotrace.md for the
// conversion and its error.
type Write struct {
	// Start is when the thread entered the system call, End when it
	// returned; both in RFC 3339 with nanoseconds in JSON.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// LatencyMs is End-Start in milliseconds.
	LatencyMs float64 `json:"latency_ms"`
	// TID is the kernel thread id, Thread its name (/proc/PID/task/TID/comm,
	// which the JVM sets to the Java thread's name, cut to 15 bytes).
	TID    int    `json:"tid"`
	Thread string `json:"thread"`
	// Op is the system call: write, pwrite64, writev, pwritev, pwritev2,
	// fsync or fdatasync.
	Op string `json:"op"`
	// Bytes is what a write call returned (bytes written); 0 for fsyncs and
	// for failed calls.
	Bytes int64 `json:"bytes"`
	// Offset is the file offset the write started at: the argument of the
	// positioned calls, the file position for write and writev. -1 for
	// fsyncs.
	Offset int64 `json:"offset"`
	// File is the file relative to its log directory: topic-partition/
	// segment, e.g. "orders-3/00000000000000001234.log".
	File string `json:"file"`
	// Topic and Partition name the partition directory holding File;
	// Topic is empty and Partition -1 for files outside partition
	// directories (only with --all-files).
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Dev is the file system's device as "major:minor".
	Dev string `json:"dev"`
	// Error is the errno name when the call failed, e.g. "EIO".
	Error string `json:"error,omitempty"`
}

// Latency returns End-Start.
func (w *Write) Latency() time.Duration { return w.End.Sub(w.Start) }
