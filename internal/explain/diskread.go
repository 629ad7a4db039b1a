package explain

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseDiskRead: a consumer fetch's data came from disk. The network
// thread serving its connection slept on page-cache misses (a read of
// file pages, traced with its kernel stack) while the fetch's response
// left: sendfile of data old enough to have left the page cache. Only
// fetches (kscope explain --api fetch) have it.
const CauseDiskRead = "disk-read"

func init() {
	register(cause{
		name:  CauseDiskRead,
		order: 65,
		short: "disk read",
		help: "(fetch) its data came from disk: the network thread\n" +
			"slept on page-cache misses while its response left",
		measure: measureDiskRead,
		detail:  diskReadDetail,
	})
}

// measureDiskRead measures the waits of a fetch's network thread on
// reads from disk while its response left, and lists them with the runs
// of pages the thread added to the page cache meanwhile.
func measureDiskRead(m *measuring) measured {
	if m.fetch == nil || m.netTID == 0 {
		return measured{}
	}
	span := interval{m.fetch.respStart, m.E}
	var ivs []interval
	for _, kw := range m.e.idx.waitsOverlapping(m.netTID, span.a, span.b) {
		parts := m.e.diskWaits([]event.KernelWait{kw}, span)
		if len(parts) > 0 {
			ivs = append(ivs, parts...)
			m.f.DiskReads = append(m.f.DiskReads, kw)
		}
	}
	slices.SortStableFunc(m.f.DiskReads, func(a, b event.KernelWait) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	m.f.DiskReads = m.f.DiskReads[:min(len(m.f.DiskReads), maxNetWaitEvidence)]
	runs := m.e.idx.pagesOverlapping(m.netTID, span.a, span.b)
	m.f.PagesFromDisk = 0
	for _, p := range runs {
		m.f.PagesFromDisk += p.Pages
	}
	slices.SortStableFunc(runs, func(a, b event.PageCacheAdds) int { return cmp.Compare(b.Pages, a.Pages) })
	m.f.PageCacheAdds = runs[:min(len(runs), maxNetWaitEvidence)]
	return measured{ns: min(unionLen(ivs), m.L), ivs: ivs}
}

func diskReadDetail(f *Finding) string {
	s := fmt.Sprintf("its data came from disk: %.1f ms of page-cache misses while its %d-byte response left", f.ExplainedMs, responseBytes(f))
	if len(f.DiskReads) > 0 {
		k := f.DiskReads[0]
		s += fmt.Sprintf(" (network thread tid %d, longest %.1f ms at %s)", k.TID, k.LatencyMs, frames(k.Stack))
	}
	if f.PagesFromDisk > 0 {
		p := f.PageCacheAdds[0]
		s += fmt.Sprintf("; %d pages read into the page cache meanwhile (the most, %d, of inode %d on %s)", f.PagesFromDisk, p.Pages, p.Inode, p.Dev)
	}
	if f.Group != "" {
		s += fmt.Sprintf("; consumer group %s", f.Group)
	}
	if p, ok := largestPartition(f.Partitions); ok {
		s += fmt.Sprintf(", reading %s-%d", p.Topic, p.Partition)
	}
	return s + alsoDetail(f)
}

// responseBytes is what a fetch finding's partitions returned.
func responseBytes(f *Finding) int {
	n := 0
	for _, p := range f.Partitions {
		n += max(p.Bytes, 0)
	}
	return n
}

// largestPartition is the partition a fetch returned the most bytes of.
func largestPartition(ps []PartitionEvidence) (PartitionEvidence, bool) {
	if len(ps) == 0 {
		return PartitionEvidence{}, false
	}
	return slices.MaxFunc(ps, func(a, b PartitionEvidence) int { return cmp.Compare(a.Bytes, b.Bytes) }), true
}
