package event

import "time"

// The kinds of scheduling events: a broker thread waiting for a CPU, the
// broker's cgroup throttled by its CPU quota, and which broker thread
// serves a client connection. They travel in the same JSON Lines stream
// as journal events (a recording's journal.jsonl).
const (
	KindRunDelay    = "run_delay"
	KindCPUThrottle = "cpu_throttle"
	KindConnThread  = "conn_thread"
	KindWakeup      = "wakeup"
)

// RunDelay is a broker thread that was runnable but not running for at
// least the tracer's threshold (run-queue latency, as libbpf-tools'
// runqslower measures it): from when it became runnable (woken, or
// preempted while it ran) to when a CPU switched to it. Traced by kscope
// iotrace from the sched_wakeup, sched_wakeup_new and sched_switch
// tracepoints (bpf/iorunq.bpf.c). Times are on the wall clock, as in Write.
type RunDelay struct {
	Kind      string    `json:"kind"` // KindRunDelay
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	TID       int       `json:"tid"`
	Thread    string    `json:"thread"`
	// CPU is the CPU the thread then ran on.
	CPU int `json:"cpu"`
	// Preempted: the thread was preempted while it ran (it stayed
	// runnable); otherwise it had been woken.
	Preempted bool `json:"preempted,omitempty"`
	// Holder is the task that had the CPU until the thread got it (the
	// one switched away from), with its process: who ran instead.
	HolderPID  int    `json:"holder_pid"`
	HolderTID  int    `json:"holder_tid"`
	HolderComm string `json:"holder_comm"`
	// Throttled: the thread's cgroup (or an ancestor) had used up its CPU
	// quota when the wait began: it waited for quota, not for a CPU.
	Throttled bool `json:"throttled,omitempty"`
	// Holders are the processes that ran on the CPU during the wait, the
	// longest first (from the CPU's last run slices; PID 0 is the CPU
	// idle).
	Holders []RunHolder `json:"holders,omitempty"`
	// Waker is the task that woke the thread (not Preempted; 0 when an
	// interrupt did): a broker thread woken by another of the broker's
	// threads had waited for it (a lock it held, a queue it fills).
	WakerPID  int    `json:"waker_pid,omitempty"`
	WakerTID  int    `json:"waker_tid,omitempty"`
	WakerComm string `json:"waker_comm,omitempty"`
}

// Wakeup is a broker thread that slept (off CPU, waiting) from Start and
// was woken at End by another thread of the broker: it had waited for
// that thread, to release a lock or to fill a queue. Or, with Timer, the
// sleep's own timeout ended it: a timed wait ran out (WakerTID 0). A
// thread that waits for a lock in timed sleeps (the JVM's contended
// monitor parks for 1, 8, 64 and 512 ms in turn) shows as timer
// wake-ups, each followed at once by the next sleep, and a last one that
// the lock's holder ended. Reported by kscope iotrace (with --runq) for
// sleeps of at least the run-queue threshold; wake-ups by other
// processes or from softirqs (the network) are not reported.
type Wakeup struct {
	Kind        string    `json:"kind"` // KindWakeup
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	SleptMs     float64   `json:"slept_ms"`
	TID         int       `json:"tid"`
	Thread      string    `json:"thread"`
	WakerTID    int       `json:"waker_tid"`
	WakerThread string    `json:"waker_thread"`
	Timer       bool      `json:"timer,omitempty"`
}

// RunHolder is a process that had a CPU while a broker thread waited for
// it: for Ms of the wait, TID its thread that ran the longest.
type RunHolder struct {
	PID  int     `json:"pid"`
	TID  int     `json:"tid"`
	Comm string  `json:"comm"`
	Ms   float64 `json:"ms"`
}

// Latency is End-Start.
func (r *RunDelay) Latency() time.Duration { return r.End.Sub(r.Start) }

// CPUThrottle is CPU-quota throttling of the broker's cgroup seen between
// two samples of its cpu.stat (cgroup v1 cpu controller or v2): Periods
// more periods were throttled, for ThrottledMs in all, somewhere between
// Start and End.
type CPUThrottle struct {
	Kind  string    `json:"kind"` // KindCPUThrottle
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Cgroup is the cgroup's path under its hierarchy, e.g.
	// "/system.slice/kafka.service".
	Cgroup      string  `json:"cgroup"`
	Periods     int64   `json:"periods"`
	ThrottledMs float64 `json:"throttled_ms"`
}

// ConnThread says which broker thread serves a client connection: the
// thread that received from (or sent on) the connection's socket, first
// seen at Time. A Kafka broker hands each connection to one network
// (processor) thread for its whole life, so this names the thread whose
// CPU, blocking and queueing every request of the connection passes
// through.
type ConnThread struct {
	Kind   string    `json:"kind"` // KindConnThread
	Time   time.Time `json:"time"`
	TID    int       `json:"tid"`
	Thread string    `json:"thread"`
	// Client and Broker are the connection's ends as "ip:port", in the
	// form the wire decoder gives Request.Client and Request.Broker
	// (IPv4-mapped IPv6 addresses as IPv4).
	Client string `json:"client"`
	Broker string `json:"broker"`
}

// KindJVMPause marks a JVMPause.
const KindJVMPause = "jvm_pause"

// The kinds of JVM pause.
const (
	PauseGC        = "gc"        // a stop-the-world garbage collection pause
	PauseSafepoint = "safepoint" // any other VM operation at a safepoint
)

// JVMPause is a stop-the-world pause of the broker's JVM: every Java
// thread stopped, from the start of the safepoint's synchronisation (the
// time to reach the safepoint) to its end. From JFR (jdk.GCPhasePause,
// jdk.SafepointBegin/End) or from the JVM's unified logging
// (-Xlog:gc,safepoint, turned on at run time with jcmd VM.log).
type JVMPause struct {
	Kind      string    `json:"kind"` // KindJVMPause
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	// Type is PauseGC or PauseSafepoint.
	Type string `json:"type"`
	// Name is the VM operation (e.g. "G1CollectForAllocation",
	// "ICBufferFull") or the GC pause (e.g. "Pause Young (Normal)").
	Name string `json:"name"`
	// Cause is the GC's cause when known (e.g. "G1 Evacuation Pause").
	Cause string `json:"cause,omitempty"`
	// ReachMs is the part spent bringing the threads to the safepoint,
	// when known.
	ReachMs float64 `json:"reach_ms,omitempty"`
	// Source is "jfr" or "vm.log".
	Source string `json:"source"`
}

// Latency is End-Start.
func (p *JVMPause) Latency() time.Duration { return p.End.Sub(p.Start) }
