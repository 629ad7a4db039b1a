package event

import "time"

// LockWait is one wait of a broker thread to enter a Java monitor
// (synchronized block), from a Java Flight Recorder jdk.JavaMonitorEnter
// event. Kafka appends to a partition log under the log's monitor, so a
// handler thread that waits here is queued behind another thread's append
// to the same partition.
//
// Start and End are on the wall clock, like Write's; TID is the waiting
// thread's kernel thread id (JFR's osThreadId), the same id iotrace
// reports for the thread's writes.
type LockWait struct {
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	TID       int       `json:"tid"`
	Thread    string    `json:"thread"` // Java thread name
	// Monitor is the class of the object waited on, e.g. java.lang.Object
	// or org.apache.kafka.storage.internals.log.UnifiedLog.
	Monitor string `json:"monitor"`
	// OwnerTID and Owner name the thread that held the monitor when the
	// wait began (JFR's previousOwner), when recorded.
	OwnerTID int    `json:"owner_tid,omitempty"`
	Owner    string `json:"owner,omitempty"`
	// Park marks a jdk.ThreadPark event without a timeout (a
	// java.util.concurrent lock or condition): Monitor is the class parked
	// on, and the owner is not known.
	Park bool `json:"park,omitempty"`
}

// Latency is End-Start.
func (l *LockWait) Latency() time.Duration { return l.End.Sub(l.Start) }
