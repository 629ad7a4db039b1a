package profile

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/jfr"
)

// Monitor is the lock waits on one lock, taken at one place: monitors
// are told apart by their class and the frame that takes them, since many
// locks are a plain java.lang.Object (UnifiedLog's lock is).
type Monitor struct {
	Monitor string `json:"monitor"` // class of the lock object
	// Site is the frame that takes the lock: for a synchronized block
	// the innermost frame, for a java.util.concurrent lock the innermost
	// frame outside the JDK and lock helpers; "?" without a stack.
	Site    string  `json:"site"`
	Kind    string  `json:"kind"` // "monitor" (synchronized) or "park" (a j.u.c. lock)
	Waits   int     `json:"waits"`
	TotalMs float64 `json:"total_ms"`
	WorstMs float64 `json:"worst_ms"`
	// Threads are the waiting threads' pools (digits as N), most waits
	// first; Owners the threads JFR saw holding the monitor.
	Threads []string `json:"threads"`
	Owners  []string `json:"owners,omitempty"`
	// Stack is the waiting stack with the most total wait, innermost
	// first.
	Stack []string `json:"stack,omitempty"`
}

// WaitLine is one lock wait.
type WaitLine struct {
	Start   time.Time `json:"start"`
	Ms      float64   `json:"ms"`
	Thread  string    `json:"thread"`
	TID     int       `json:"tid"`
	Monitor string    `json:"monitor"`
	Site    string    `json:"site"`
	Owner   string    `json:"owner,omitempty"`
	Kind    string    `json:"kind"`
}

// siteSkip are frames a lock site passes over: the JDK's lock machinery
// and Kafka's helpers that take a lock for their caller.
var siteSkip = []string{"java.", "jdk.", "sun.", "scala.", "kafka.utils.CoreUtils", "org.apache.kafka.server.util.LockUtils"}

// lockSite returns where a wait's lock is taken.
func lockSite(w *jfr.Wait) string {
	if w.Stack == nil || len(w.Stack.Frames) == 0 {
		return "?"
	}
	if !w.Park {
		return frameName(w.Stack.Frames[0])
	}
	for _, f := range w.Stack.Frames {
		n := frameName(f)
		skip := false
		for _, p := range siteSkip {
			if strings.HasPrefix(n, p) {
				skip = true
				break
			}
		}
		if !skip {
			return n
		}
	}
	return frameName(w.Stack.Frames[len(w.Stack.Frames)-1])
}

// lockPark reports whether an untimed park is a wait for a lock rather
// than for work or a signal: its innermost AbstractQueuedSynchronizer
// frame acquires (a condition's await parks elsewhere), and it is not a
// CountDownLatch's, which acquires to wait for the count. A park without
// a stack cannot be told apart and counts as a lock wait (as it does for
// explain).
func lockPark(w *jfr.Wait) bool {
	if w.Stack == nil || len(w.Stack.Frames) == 0 {
		return true
	}
	if strings.HasPrefix(w.Monitor, "java.util.concurrent.CountDownLatch") {
		return false
	}
	for _, f := range w.Stack.Frames {
		switch {
		case strings.HasPrefix(f.Class, "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"),
			strings.HasPrefix(f.Class, "java.util.concurrent.locks.AbstractQueuedLongSynchronizer$ConditionObject"):
			return false
		case f.Class == "java.util.concurrent.locks.AbstractQueuedSynchronizer",
			f.Class == "java.util.concurrent.locks.AbstractQueuedLongSynchronizer":
			return strings.HasPrefix(f.Method, "acquire")
		case f.Class == "java.util.concurrent.locks.StampedLock":
			return true
		}
	}
	return false
}

// contention groups the lock waits by monitor and site.
func contention(waits []jfr.Wait, top int) ([]Monitor, []WaitLine) {
	type acc struct {
		m       Monitor
		threads map[string]int
		owners  map[string]int
		stacks  map[*jfr.Stack]float64
	}
	groups := map[[3]string]*acc{}
	var lines []WaitLine
	for i := range waits {
		w := &waits[i]
		kind := "monitor"
		if w.Park {
			if !lockPark(w) {
				continue
			}
			kind = "park"
		}
		site := lockSite(w)
		key := [3]string{w.Monitor, site, kind}
		a := groups[key]
		if a == nil {
			a = &acc{m: Monitor{Monitor: w.Monitor, Site: site, Kind: kind}, threads: map[string]int{}, owners: map[string]int{}, stacks: map[*jfr.Stack]float64{}}
			groups[key] = a
		}
		a.m.Waits++
		a.m.TotalMs += w.LatencyMs
		a.m.WorstMs = max(a.m.WorstMs, w.LatencyMs)
		a.threads[threadGroup(w.Thread)]++
		if w.Owner != "" {
			a.owners[threadGroup(w.Owner)]++
		}
		if w.Stack != nil {
			a.stacks[w.Stack] += w.LatencyMs
		}
		lines = append(lines, WaitLine{Start: w.Start, Ms: w.LatencyMs, Thread: w.Thread, TID: w.TID, Monitor: w.Monitor,
			Site: site, Owner: w.Owner, Kind: kind})
	}
	var out []Monitor
	for _, a := range groups {
		a.m.Threads = byCount(a.threads, 5)
		a.m.Owners = byCount(a.owners, 5)
		var best *jfr.Stack
		bw := -1.0
		for st, w := range a.stacks {
			if w > bw || w == bw && stackLess(st, best) {
				best, bw = st, w
			}
		}
		if best != nil {
			for _, f := range best.Frames[:min(len(best.Frames), 16)] {
				a.m.Stack = append(a.m.Stack, frameName(f))
			}
		}
		out = append(out, a.m)
	}
	slices.SortFunc(out, func(a, b Monitor) int {
		return cmp.Or(cmp.Compare(b.TotalMs, a.TotalMs), cmp.Compare(b.Waits, a.Waits), cmp.Compare(a.Monitor, b.Monitor), cmp.Compare(a.Site, b.Site))
	})
	slices.SortFunc(lines, func(a, b WaitLine) int {
		return cmp.Or(cmp.Compare(b.Ms, a.Ms), a.Start.Compare(b.Start), cmp.Compare(a.TID, b.TID))
	})
	return out[:min(len(out), top)], lines[:min(len(lines), top)]
}

func stackLess(a, b *jfr.Stack) bool {
	if b == nil {
		return true
	}
	return slices.CompareFunc(a.Frames, b.Frames, func(x, y jfr.Frame) int {
		return cmp.Or(cmp.Compare(x.Class, y.Class), cmp.Compare(x.Method, y.Method))
	}) < 0
}

// byCount returns m's keys, most counted first, at most n.
func byCount(m map[string]int, n int) []string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return keys[:min(len(keys), n)]
}
