// Package use applies Brendan Gregg's USE method (for every resource:
// utilization, saturation, errors) to a Kafka broker's host, from /proc
// and /sys only: CPUs, memory, the block devices of the broker's log
// directories, the network interfaces, TCP, and file descriptors.
//
// A Reader takes a Snapshot of the kernel's counters; Diff turns two
// snapshots into a Sample (rates and percentages over the interval);
// Verdict names the saturated resources by documented Thresholds; a
// Sampler keeps what Diff needs between intervals, and Run samples on a
// ticker. The /proc and /sys roots are configurable, so the whole path
// runs on fixture trees in tests. The figures, their sources and
// formulas, and what is n/a where, are in docs/use.md.
package use

import (
	"strings"
	"time"
)

// Sample is one interval of the USE figures of a host, and its verdict.
// It is the JSON encoding of `kscope use --format json` and of a
// recording's use.jsonl. Figures that could not be measured (no PSI in
// this kernel, no link speed for a veth, no broker process) are absent
// (null pointers), never zero.
type Sample struct {
	Time time.Time `json:"time"` // end of the interval
	// IntervalS is the interval's length in seconds.
	IntervalS float64   `json:"interval_s"`
	CPU       CPU       `json:"cpu"`
	Memory    Memory    `json:"memory"`
	IOPSI     *Stall    `json:"io_psi,omitempty"` // /proc/pressure/io, for all devices
	Disks     []Disk    `json:"disks"`
	NICs      []NIC     `json:"nics"`
	TCP       *TCP      `json:"tcp,omitempty"`
	FDs       FDs       `json:"fds"`
	Notes     []string  `json:"notes,omitempty"` // counters reset, sources missing
	Verdict   VerdictOf `json:"verdict"`
}

// Stall is pressure stall information (PSI) of one resource: the share
// of the interval in which some (or all non-idle) tasks were stalled on
// it, from the difference of the kernel's stall totals, and the kernel's
// own 10 s averages. Full is absent where the kernel has no full line.
type Stall struct {
	SomePct      float64  `json:"some_pct"`
	FullPct      *float64 `json:"full_pct,omitempty"`
	SomeAvg10Pct float64  `json:"some_avg10_pct"`
	FullAvg10Pct *float64 `json:"full_avg10_pct,omitempty"`
}

// CPU is every CPU together, and each one.
type CPU struct {
	CPUs      int     `json:"cpus"`
	UtilPct   float64 `json:"util_pct"` // not idle and not iowait
	UserPct   float64 `json:"user_pct"` // user and nice
	SystemPct float64 `json:"system_pct"`
	IRQPct    float64 `json:"irq_pct"` // irq and softirq
	IowaitPct float64 `json:"iowait_pct"`
	StealPct  float64 `json:"steal_pct"`
	// RunQueue is the mean number of runnable tasks (running or waiting
	// for a CPU, the sampler itself not counted) over the interval's
	// polls; saturation when above CPUs. Blocked is the mean number in
	// uninterruptible sleep (procs_blocked).
	RunQueue float64  `json:"run_queue"`
	Blocked  float64  `json:"blocked"`
	Load1    float64  `json:"load1"`
	PSI      *Stall   `json:"psi,omitempty"`
	PerCPU   []CPUOne `json:"per_cpu"`
}

// CPUOne is one CPU. RunDelay is the mean number of tasks waiting for
// it (time waited on its run queue per second, /proc/schedstat): absent
// without schedstats.
type CPUOne struct {
	CPU       int      `json:"cpu"`
	UtilPct   float64  `json:"util_pct"`
	IowaitPct float64  `json:"iowait_pct"`
	StealPct  float64  `json:"steal_pct"`
	RunDelay  *float64 `json:"run_delay,omitempty"`
}

// Memory is main memory and the page cache's dirty data.
type Memory struct {
	TotalBytes     int64   `json:"total_bytes"`
	AvailableBytes int64   `json:"available_bytes"`
	UsedPct        float64 `json:"used_pct"` // 100 × (1 − available/total)
	CachedBytes    int64   `json:"cached_bytes"`
	DirtyBytes     int64   `json:"dirty_bytes"`
	WritebackBytes int64   `json:"writeback_bytes"`
	// DirtyLimitBytes and DirtyBackgroundBytes are the kernel's dirty
	// thresholds, approximated from vm.dirty_* and the dirtyable memory
	// (MemFree + file pages); writers are throttled from halfway between
	// them (DirtyThrottleBytes).
	DirtyLimitBytes      int64 `json:"dirty_limit_bytes"`
	DirtyBackgroundBytes int64 `json:"dirty_background_bytes"`
	DirtyThrottleBytes   int64 `json:"dirty_throttle_bytes"`
	// Per interval, from /proc/vmstat (absent when it lacks the counter).
	SwapInPages     *int64 `json:"swap_in_pages,omitempty"`
	SwapOutPages    *int64 `json:"swap_out_pages,omitempty"`
	DirectScanPages *int64 `json:"direct_scan_pages,omitempty"`
	OOMKills        *int64 `json:"oom_kills,omitempty"`
	PSI             *Stall `json:"psi,omitempty"`
}

// Disk is one block device, from /proc/diskstats.
type Disk struct {
	Name string `json:"name"` // e.g. loop3, nvme0n1p2
	Dev  string `json:"dev"`  // major:minor
	// UtilPct: share of the interval with I/O in flight (io_ticks).
	UtilPct float64 `json:"util_pct"`
	// AvgQueue: mean requests in flight (weighted time / interval).
	AvgQueue float64 `json:"avg_queue"`
	// AwaitMs: mean time of the requests completed in the interval, from
	// issue to completion; absent when none completed.
	AwaitMs *float64 `json:"await_ms,omitempty"`
	// AwaitBestMs: the lowest AwaitMs of this device seen so far in the
	// run (a baseline: await well above it, with a queue, is queueing).
	AwaitBestMs *float64 `json:"await_best_ms,omitempty"`
	ReadBps     float64  `json:"read_bps"`
	WriteBps    float64  `json:"write_bps"`
	ReadIOPS    float64  `json:"read_iops"`
	WriteIOPS   float64  `json:"write_iops"`
	InFlight    int64    `json:"in_flight"`
	// Throttles are the cgroup limits on this device (blkio throttle,
	// io.max) and how much of each the cgroup used.
	Throttles []Throttle `json:"throttles,omitempty"`
}

// Throttle is one cgroup's limit on one device in one direction, and the
// cgroup's use of it in the interval.
type Throttle struct {
	Cgroup string  `json:"cgroup"` // path below the cgroup mount, e.g. /kafka
	Limit  string  `json:"limit"`  // rbps, wbps, riops or wiops
	Max    float64 `json:"max"`    // the limit, bytes or I/Os per second
	Rate   float64 `json:"rate"`   // the cgroup's rate in the interval
	Pct    float64 `json:"pct"`    // 100 × rate/max
}

// NIC is one network interface, from /sys/class/net/IF (and the drops of
// its root qdisc, from rtnetlink). Counts are per interval.
type NIC struct {
	Name string `json:"name"`
	// SpeedMbps is the link speed; absent where the driver has none (veth,
	// lo, a link that is down): then utilization is n/a.
	SpeedMbps *int64   `json:"speed_mbps,omitempty"`
	RxBps     float64  `json:"rx_bps"` // bytes per second
	TxBps     float64  `json:"tx_bps"`
	UtilPct   *float64 `json:"util_pct,omitempty"` // max(rx, tx) bits / speed
	RxPackets int64    `json:"rx_packets"`
	TxPackets int64    `json:"tx_packets"`
	RxDrops   int64    `json:"rx_drops"`
	TxDrops   int64    `json:"tx_drops"`
	RxErrors  int64    `json:"rx_errors"`
	TxErrors  int64    `json:"tx_errors"`
	// Qdisc is the root egress qdisc's kind; QdiscDrops the packets it
	// dropped (queue full, or netem loss), QdiscOverlimits the times a
	// shaper held packets back, QdiscBacklog the bytes queued at the end.
	// Absent when qdiscs could not be read.
	Qdisc           string `json:"qdisc,omitempty"`
	QdiscDrops      *int64 `json:"qdisc_drops,omitempty"`
	QdiscOverlimits *int64 `json:"qdisc_overlimits,omitempty"`
	QdiscBacklog    *int64 `json:"qdisc_backlog_bytes,omitempty"`
}

// TCP is the TCP of one network namespace (the broker's), per interval.
type TCP struct {
	OutSegs     int64 `json:"out_segs"`
	RetransSegs int64 `json:"retrans_segs"`
	// RetransPct is 100 × RetransSegs/OutSegs; absent with no segments.
	RetransPct      *float64 `json:"retrans_pct,omitempty"`
	InErrs          int64    `json:"in_errs"`
	OutRsts         int64    `json:"out_rsts"`
	ListenOverflows int64    `json:"listen_overflows"`
	ListenDrops     int64    `json:"listen_drops"`
	CurrEstab       int64    `json:"curr_estab"`
}

// FDs are open files: the system's (file-nr) and the broker's.
type FDs struct {
	SystemOpen int64   `json:"system_open"`
	SystemMax  int64   `json:"system_max"`
	SystemPct  float64 `json:"system_pct"`
	// Broker is absent without a broker process.
	Broker *BrokerFDs `json:"broker,omitempty"`
}

// BrokerFDs are the broker process's open files against its soft limit
// (Max open files); Limit and Pct are absent when unlimited.
type BrokerFDs struct {
	PID   int      `json:"pid"`
	Open  int64    `json:"open"`
	Limit *int64   `json:"limit,omitempty"`
	Pct   *float64 `json:"pct,omitempty"`
}

// VerdictOf is a sample's verdict: every finding, and one line naming
// the saturated resources.
type VerdictOf struct {
	Findings []Finding `json:"findings,omitempty"`
	Line     string    `json:"line"`
}

// Kinds of findings: the U, S and E of USE.
const (
	KindSaturation  = "saturation"
	KindUtilization = "utilization"
	KindErrors      = "errors"
)

// Finding is one resource past a threshold.
type Finding struct {
	// Resource: cpu, memory, io, disk NAME, nic NAME, tcp, fds.
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	Reason   string `json:"reason"`
}

// Saturated returns the resources the verdict names saturated, in order.
func (v VerdictOf) Saturated() []string {
	var out []string
	for _, f := range v.Findings {
		if f.Kind == KindSaturation && (len(out) == 0 || out[len(out)-1] != f.Resource) {
			out = append(out, f.Resource)
		}
	}
	return out
}

// Names reports whether the verdict has a finding of kind about
// resource (a prefix ending in a space, such as "disk ", matches every
// disk).
func (v VerdictOf) Names(resource, kind string) bool {
	for _, f := range v.Findings {
		if f.Kind != kind {
			continue
		}
		if f.Resource == resource || strings.HasSuffix(resource, " ") && strings.HasPrefix(f.Resource, resource) {
			return true
		}
	}
	return false
}
