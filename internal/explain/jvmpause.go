package explain

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// The JVM's stop-the-world causes: every Java thread of the broker (the
// network threads reading and sending, the handlers appending) stood still
// at a safepoint.
const (
	// CauseGCPause: a garbage collection pause.
	CauseGCPause = "gc-pause"
	// CauseSafepoint: another VM operation at a safepoint (deoptimisation,
	// code cache clean-up, biased-lock revocation, a thread dump...).
	CauseSafepoint = "safepoint"
)

func init() {
	register(cause{
		name:          CauseGCPause,
		order:         110,
		short:         "gc",
		help:          "the broker's JVM stood still for a garbage collection",
		stopsTheWorld: true,
		measure:       func(m *measuring) measured { return m.e.jvmPauses(m.reqCtx, m.f) },
		detail:        func(f *Finding) string { return jvmPauseDetail(f) + alsoDetail(f) },
	})
	register(cause{
		name:          CauseSafepoint,
		order:         120,
		short:         "safepoint",
		help:          "the broker's JVM stood still for another VM operation",
		stopsTheWorld: true,
		// Measured with the GC pauses, in one pass over the pauses.
		after:   []string{CauseGCPause},
		measure: func(m *measuring) measured { return moreOf[*jvmStops](m.of(CauseGCPause)).safepoint },
		detail:  func(f *Finding) string { return jvmPauseDetail(f) + alsoDetail(f) },
	})
}

// jvmStops is what jvmPauses found beyond the GC pauses' time (the
// gc-pause measure's more): the safepoints' measure, and for cpu-starved
// the pauses during the request (a broker thread's wait for a CPU inside
// one is the pause's: the GC had the CPUs), the parts of them that the
// JVM's stop-the-world threads spent waiting for a CPU (starvation that
// made the pauses longer), and those waits.
type jvmStops struct {
	safepoint measured
	pauses    []interval
	starved   []interval
	delays    []event.RunDelay
}

// maxPauseEvidence bounds Finding.Pauses.
const maxPauseEvidence = 10

// jvmPauses measures the time the broker's JVM stood still while the
// request was in flight, over its whole span: a pause stops the network
// thread that would read or send it as much as the handler. GC pauses and
// other safepoints are measured apart, so that each names its own cause.
//
// The part of a pause during which the VM's own stop-the-world threads
// (the VM Thread, the GC workers) waited for a CPU is not the pause's
// but CPU starvation's: another process (or the cgroup's quota) made the
// pause that long (not when the CPU they waited for went to another GC
// worker: that is the pause's own work). It goes to the jvmStops in the
// GC pauses' measure (more), with those waits and the pauses themselves,
// for cpuStarved; so does the safepoints' measure.
func (e *Explainer) jvmPauses(c *reqCtx, f *Finding) (gc measured) {
	stops := &jvmStops{safepoint: measured{cause: CauseSafepoint, stw: true}}
	gc = measured{cause: CauseGCPause, stw: true, more: stops}
	safepoint := &stops.safepoint
	ps := e.idx.pausesOverlapping(c.A, c.E)
	if len(ps) == 0 {
		return gc
	}
	whole := interval{c.A, c.E}
	for _, p := range ps {
		iv := clip(interval{p.Start.UnixNano(), p.End.UnixNano()}, whole)
		stops.pauses = append(stops.pauses, iv)
		var starved []interval
		for _, d := range e.idx.vmThreadDelays(iv.a, iv.b) {
			if !heldOutsideVM(&d) {
				continue // one GC worker waiting for another: the pause's own work
			}
			starved = append(starved, clip(interval{d.Start.UnixNano(), d.End.UnixNano()}, iv))
			stops.delays = append(stops.delays, d)
		}
		stops.starved = append(stops.starved, starved...)
		rest := minus(iv, mergeIntervals(starved))
		if p.Type == event.PauseGC {
			gc.ivs = append(gc.ivs, rest...)
		} else {
			safepoint.ivs = append(safepoint.ivs, rest...)
		}
	}
	gc.ns, safepoint.ns = unionLen(gc.ivs), unionLen(safepoint.ivs)
	slices.SortStableFunc(ps, func(a, b event.JVMPause) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	f.Pauses = ps[:min(len(ps), maxPauseEvidence)]
	return gc
}

// heldOutsideVM reports whether, for most of the part of a wait its
// holders cover, the CPU went to tasks other than the JVM's stop-the-world
// threads (another process, or
// the broker's threads that run on through a pause in native code).
func heldOutsideVM(d *event.RunDelay) bool {
	if len(d.Holders) == 0 {
		return !event.IsStopTheWorldThread(d.HolderComm)
	}
	// Judged on the part the holders cover: a CPU's last 32 run slices
	// may span less than a long wait.
	var outside, seen float64
	for _, h := range d.Holders {
		seen += h.Ms
		if !event.IsStopTheWorldThread(h.Comm) {
			outside += h.Ms
		}
	}
	return seen > 0 && outside*2 >= seen
}

// jvmPauseDetail names the longest pause of the finding's kind.
func jvmPauseDetail(f *Finding) string {
	want := event.PauseGC
	if f.Cause == CauseSafepoint {
		want = event.PauseSafepoint
	}
	n := 0
	var longest *event.JVMPause
	for i := range f.Pauses {
		if p := &f.Pauses[i]; p.Type == want {
			n++
			if longest == nil || p.LatencyMs > longest.LatencyMs {
				longest = p
			}
		}
	}
	if longest == nil {
		return fmt.Sprintf("the broker's JVM stood still for %.1f ms", f.ExplainedMs)
	}
	what := longest.Name
	if longest.Cause != "" {
		what += " (" + longest.Cause + ")"
	}
	s := fmt.Sprintf("the broker's JVM stood still for %.1f ms of it: %d pause(s), the longest %.1f ms, %s", f.ExplainedMs, n, longest.LatencyMs, what)
	if longest.ReachMs >= 1 {
		s += fmt.Sprintf(", %.1f ms of it reaching the safepoint", longest.ReachMs)
	}
	return s + " [" + longest.Source + "]"
}
