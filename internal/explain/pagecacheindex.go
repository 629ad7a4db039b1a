package explain

import (
	"cmp"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// pageRuns are the runs of pages the broker's threads added to the page
// cache (reads from disk, bpf/iopcache.bpf.c), by thread, sorted by
// start; maxRun is the longest run, ns.
type pageRuns struct {
	byTID  map[int][]event.PageCacheAdds
	maxRun int64
}

// AddPageCacheAdds adds a run of pages a broker thread added to the page
// cache.
func (x *Index) AddPageCacheAdds(p *event.PageCacheAdds) {
	if x.pages.byTID == nil {
		x.pages.byTID = make(map[int][]event.PageCacheAdds)
	}
	x.pages.byTID[p.TID] = append(x.pages.byTID[p.TID], *p)
	x.pages.maxRun = max(x.pages.maxRun, int64(p.End.Sub(p.Start)))
	x.PageCacheRuns++
	x.built = false
}

func (r *pageRuns) build() {
	for _, rs := range r.byTID {
		slices.SortStableFunc(rs, func(a, b event.PageCacheAdds) int { return a.Start.Compare(b.Start) })
	}
}

// pagesOverlapping returns tid's page-cache runs overlapping [a, b].
func (x *Index) pagesOverlapping(tid int, a, b int64) []event.PageCacheAdds {
	rs := x.pages.byTID[tid]
	lo, _ := slices.BinarySearchFunc(rs, a-x.pages.maxRun, func(p event.PageCacheAdds, t int64) int { return cmp.Compare(p.Start.UnixNano(), t) })
	var out []event.PageCacheAdds
	for _, p := range rs[lo:] {
		if p.Start.UnixNano() > b {
			break
		}
		if p.End.UnixNano() >= a {
			out = append(out, p)
		}
	}
	return out
}
