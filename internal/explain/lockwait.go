package explain

import "fmt"

// CauseLockWait: no slow write of its own, but while the request waited,
// another append to the same partition log was in progress: it queued
// behind it, on the partition's lock or behind the previous request on
// its connection (which the broker handles one at a time).
const CauseLockWait = "lock-wait"

// How a lock-wait request waited.
const (
	ViaPartitionLock = "partition-lock" // in the broker, on the partition log
	ViaConnection    = "connection"     // behind the previous request on its connection
)

func init() {
	register(cause{
		name:  CauseLockWait,
		order: 20,
		short: "wait",
		help: "it waited while another append to the same partition log\n" +
			"was in progress (on the partition lock, or behind the\n" +
			"previous request on its connection)",
		measure: func(m *measuring) measured {
			waited := m.sw.waited()
			return measured{ns: unionLen(waited), ivs: waited}
		},
		detail: lockWaitDetail,
	})
}

// lockWaitDetail names what the request waited behind: the request ahead
// on its connection, another append to its partition, or a monitor JFR
// saw it wait for.
func lockWaitDetail(f *Finding) string {
	if qb := f.QueuedBehind; qb != nil && f.Via == ViaConnection {
		if len(qb.Writes) > 0 {
			w := longest(qb.Writes)
			return fmt.Sprintf("waited %.1f ms behind request %d on its connection (%s), whose append to %s-%d (tid %d) took %.1f ms",
				f.ExplainedMs, qb.CorrelationID, qb.Cause, w.Topic, w.Partition, w.TID, w.LatencyMs) + rootDetail(f)
		}
		return fmt.Sprintf("waited %.1f ms behind request %d on its connection (%s)", f.ExplainedMs, qb.CorrelationID, qb.Cause)
	}
	for _, p := range f.Partitions {
		if len(p.Blocking) > 0 && (longest(p.Blocking).LatencyMs >= f.ExplainedMs/2 || len(f.LockWaits) == 0) {
			b := longest(p.Blocking)
			how := "behind the previous request on its connection, whose"
			if f.Via == ViaPartitionLock {
				how = "on the partition lock while"
			}
			return fmt.Sprintf("waited %.1f ms %s append to %s-%d (tid %d) took %.1f ms", f.ExplainedMs, how, p.Topic, p.Partition, b.TID, b.LatencyMs) + rootDetail(f)
		}
	}
	if len(f.LockWaits) > 0 {
		l := f.LockWaits[0]
		owner := ""
		if l.OwnerTID != 0 {
			owner = fmt.Sprintf(", held by tid %d %s", l.OwnerTID, l.Owner)
		}
		if k, ok := longestWait(f.KernelWaits); ok && k.TID == l.OwnerTID {
			owner += fmt.Sprintf(", blocked %.1f ms in the file system at %s", k.LatencyMs, frames(k.Stack))
		}
		return fmt.Sprintf("waited %.1f ms for monitor %s (JFR)%s", f.ExplainedMs, l.Monitor, owner) + rootDetail(f)
	}
	return ""
}
