package explain

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseCPUSteal: the hypervisor took most of the time from the broker's
// threads while the request was in the broker (a virtual machine's vCPU
// descheduled by its host): nothing in the broker ran then.
const CauseCPUSteal = "cpu-steal"

func init() {
	register(cause{
		name:  CauseCPUSteal,
		order: 130,
		short: "steal",
		help:  "the hypervisor took the CPU from the broker's threads",
		// Nothing in the broker ran then, whatever the stolen thread was
		// doing (a write stolen in the middle looks slow to the write
		// trace).
		stopsTheWorld: true,
		measure: func(m *measuring) measured {
			return measured{ns: m.e.steal(m.f, m.A, m.E, m.L)}
		},
		detail: cpuStealDetail,
	})
}

// maxStealEvidence bounds Finding.Steals.
const maxStealEvidence = 10

// steal is the hypervisor steal taken from the broker's threads during
// [A, E] (at most L), and keeps the largest intervals as evidence. Steal on
// different CPUs is not added up: the CPU that lost the most counts (the
// request waited on at least that much, if on any).
func (e *Explainer) steal(f *Finding, A, E, L int64) int64 {
	ss := e.idx.stealsOverlapping(A, E)
	if len(ss) == 0 {
		return 0
	}
	perCPU := map[int]int64{}
	for _, s := range ss {
		perCPU[s.CPU] += int64(s.Stolen())
	}
	var most int64
	for _, v := range perCPU {
		most = max(most, v)
	}
	slices.SortStableFunc(ss, func(a, b event.CPUSteal) int { return cmp.Compare(b.StolenMs, a.StolenMs) })
	f.Steals = ss[:min(len(ss), maxStealEvidence)]
	return min(most, L)
}

func cpuStealDetail(f *Finding) string {
	w := f.Steals[0]
	return fmt.Sprintf("the hypervisor took %.1f ms of CPU from the broker's threads while it was in the broker (%d intervals; largest %.1f ms from %s on cpu%d)",
		f.ExplainedMs, len(f.Steals), w.StolenMs, w.Thread, w.CPU)
}
