package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kscope-dev/kscope/internal/event"
)

func (e *Explainer) detail(f *Finding, L int64) string {
	switch f.Cause {
	case CauseSlowWrite:
		for _, p := range f.Partitions {
			if p.Write != nil && p.Write.LatencyMs >= f.ExplainedMs/2 {
				s := fmt.Sprintf("its append to %s-%d (tid %d) took %.1f ms", p.Topic, p.Partition, p.Write.TID, p.Write.LatencyMs)
				return s + e.rootDetail(f)
			}
		}
		if k, ok := longestWait(f.KernelWaits); ok {
			return fmt.Sprintf("its handler (tid %d) blocked %.1f ms in the file system outside its write call, at %s", k.TID, k.LatencyMs, frames(k.Stack))
		}
	case CauseLockWait:
		if qb := f.QueuedBehind; qb != nil && f.Via == ViaConnection {
			if len(qb.Writes) > 0 {
				w := longest(qb.Writes)
				return fmt.Sprintf("waited %.1f ms behind request %d on its connection (%s), whose append to %s-%d (tid %d) took %.1f ms",
					f.ExplainedMs, qb.CorrelationID, qb.Cause, w.Topic, w.Partition, w.TID, w.LatencyMs) + e.rootDetail(f)
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
				return fmt.Sprintf("waited %.1f ms %s append to %s-%d (tid %d) took %.1f ms", f.ExplainedMs, how, p.Topic, p.Partition, b.TID, b.LatencyMs) + e.rootDetail(f)
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
			return fmt.Sprintf("waited %.1f ms for monitor %s (JFR)%s", f.ExplainedMs, l.Monitor, owner) + e.rootDetail(f)
		}
	case CauseReplication:
		return replicationDetail(f) + alsoDetail(f)
	case CauseThrottle:
		return fmt.Sprintf("throttled %d ms by quota", f.ThrottleMs)
	case CauseResponseSend:
		return fmt.Sprintf("the %.1f ms response took %.1f ms to leave", f.LatencyMs, f.ResponseMs)
	case CauseCPUSteal:
		return cpuStealDetail(f)
	case CauseNetwork:
		return networkDetail(f) + alsoDetail(f)
	case CauseNetworkThreadBlocked:
		return networkThreadBlockedDetail(f) + alsoDetail(f)
	case CauseCPUStarved:
		return cpuStarvedDetail(f) + alsoDetail(f)
	case CauseParkWait:
		return parkWaitDetail(f) + alsoDetail(f)
	case CauseRequestQueue:
		return requestQueueDetail(f) + alsoDetail(f)
	case CauseGCPause, CauseSafepoint:
		return jvmPauseDetail(f) + alsoDetail(f)
	}
	s := f.Shares
	return fmt.Sprintf("no cause accounts for %.0f%% of %.1f ms (write %.1f, wait %.1f, replication %.1f, throttle %.1f, response %.1f, network %.1f, network thread %.1f, steal %.1f, cpu %.1f, park %.1f, queue %.1f, gc %.1f, safepoint %.1f ms)",
		e.cfg.Share*100, ms(L), s.SlowWriteMs, s.LockWaitMs, s.ReplicationMs, s.ThrottleMs, s.ResponseSendMs, s.NetworkMs, s.NetThreadMs, s.CPUStealMs,
		s.CPUStarvedMs, s.ParkWaitMs, s.RequestQueueMs, s.GCPauseMs, s.SafepointMs)
}

// alsoDetail names the causes that together with the finding's account
// for its latency.
func alsoDetail(f *Finding) string {
	if len(f.Also) == 0 {
		return ""
	}
	return "; together with " + strings.Join(f.Also, ", ")
}

// longest is the slowest of ws (not empty).
func longest(ws []WriteEvidence) WriteEvidence {
	return slices.MaxFunc(ws, func(a, b WriteEvidence) int { return cmp.Compare(a.LatencyMs, b.LatencyMs) })
}

func (e *Explainer) rootDetail(f *Finding) string {
	s := ""
	if k, ok := longestWait(f.KernelWaits); ok && k.LatencyMs >= f.ExplainedMs/2 {
		s = fmt.Sprintf("; tid %d blocked at %s", k.TID, frames(k.Stack))
	}
	if f.Root != RootJournal || len(f.Commits) == 0 {
		return s
	}
	c := f.Commits[0]
	return s + fmt.Sprintf("; root: %s on %s took %.1f ms", c.Kind, c.Dev, c.LatencyMs)
}

// fsFrames are kernel function name prefixes that put a wait in the file
// system or the page cache under it.
var fsFrames = []string{"ext4_", "xfs_", "jbd2", "__jbd2", "sb_start", "__sb_start", "percpu_rwsem", "__percpu_down",
	"do_page_mkwrite", "filemap_", "folio_wait", "__folio_lock", "wait_on_page", "__filemap", "io_schedule", "blk_"}

// isFSWait reports whether a kernel stack is in the file system.
func isFSWait(stack []string) bool {
	for _, fr := range stack {
		for _, p := range fsFrames {
			if strings.HasPrefix(fr, p) {
				return true
			}
		}
	}
	return false
}

// longestWait is the longest of ws.
func longestWait(ws []event.KernelWait) (event.KernelWait, bool) {
	if len(ws) == 0 {
		return event.KernelWait{}, false
	}
	return slices.MaxFunc(ws, func(a, b event.KernelWait) int { return cmp.Compare(a.LatencyMs, b.LatencyMs) }), true
}

// frames names the innermost file-system frames of a stack, under the
// scheduler's.
func frames(stack []string) string {
	var out []string
	for _, fr := range stack {
		if strings.HasPrefix(fr, "__schedule") || strings.HasPrefix(fr, "__traceiter") || strings.HasPrefix(fr, "schedule") || strings.HasPrefix(fr, "io_schedule") ||
			strings.HasPrefix(fr, "do_syscall") || strings.HasPrefix(fr, "entry_SYSCALL") {
			continue
		}
		out = append(out, fr)
		if len(out) == 4 {
			break
		}
	}
	return strings.Join(out, " < ")
}
