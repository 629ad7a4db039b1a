package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kscope-dev/kscope/internal/event"
)

// detail is the sentence saying why f's request, of latency L, was slow:
// its cause's, else (unexplained, or a cause with nothing to tell) every
// cause's share.
func (e *Explainer) detail(f *Finding, L int64) string {
	if c := e.causes.named(f.Cause); c != nil && c.detail != nil {
		if s := c.detail(f); s != "" {
			return s
		}
	}
	return e.sharesDetail(f, L)
}

// sharesDetailOrder is the order of the shares sharesDetail lists from
// when the sentence was written out by hand: kept, since users and tests
// read it, and a new cause's share follows them in order. Add no cause
// here.
var sharesDetailOrder = []string{CauseSlowWrite, CauseLockWait, CauseReplication, CauseThrottle, CauseResponseSend, CauseNetwork,
	CauseNetworkThreadBlocked, CauseCPUSteal, CauseCPUStarved, CauseParkWait, CauseRequestQueue, CauseGCPause, CauseSafepoint}

// sharesDetail says that no cause accounts for enough of the latency L,
// and what each did account for.
func (e *Explainer) sharesDetail(f *Finding, L int64) string {
	var shares []string
	for _, c := range e.causes.inOrder(sharesDetailOrder) {
		shares = append(shares, fmt.Sprintf("%s %.1f", c.short, f.Shares[c.name]))
	}
	return fmt.Sprintf("no cause accounts for %.0f%% of %.1f ms (%s ms)", e.cfg.Share*100, ms(L), strings.Join(shares, ", "))
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

// rootDetail names where the thread the storage cause rests on blocked,
// and the journal commit under it.
func rootDetail(f *Finding) string {
	s := ""
	if k, ok := longestWait(f.KernelWaits); ok && k.LatencyMs >= f.ExplainedMs/2 {
		s = fmt.Sprintf("; tid %d blocked at %s", k.TID, frames(k.Stack))
	}
	if f.Root != RootJournal || len(f.Commits) == 0 {
		return s
	}
	return s + "; root: " + commitDetail(&f.Commits[0])
}

// commitDetail says what a journal commit under a storage cause was. An
// ext4 fast commit is run by a thread (an fsync's, or the write's own with
// O_SYNC): it names that thread, the blocks it wrote, and a fall back to a
// full jbd2 commit, which is then most of its time.
func commitDetail(c *event.JournalCommit) string {
	fc := c.FastCommit
	if fc == nil {
		return fmt.Sprintf("%s on %s took %.1f ms", c.Kind, c.Dev, c.LatencyMs)
	}
	s := fmt.Sprintf("ext4 fast commit on %s by tid %d took %.1f ms (%s, %d blocks", c.Dev, fc.TID, c.LatencyMs, fc.Status, fc.Blocks)
	if fc.FellBack() {
		s += ", fell back to a full jbd2 commit"
	}
	return s + ")"
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
