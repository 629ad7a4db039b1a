// Package profile turns a Java Flight Recorder profile of a broker
// (jfr.ReadProfile) into a report of where its CPU goes and where its
// threads wait: CPU by category (compression per codec, checksums,
// crypto, network, log, replication, request handling, GC), decided by
// rules on the frames of each sample; the top methods and stacks; a flame
// graph; lock contention by monitor with the waiting threads' stacks; and
// hints when a known costly pattern shows, stated with their numbers.
//
// # From samples to CPU
//
// HotSpot's JFR sampler takes, every period, up to five threads running
// Java code (jdk.ExecutionSample) but only one thread in native code
// (jdk.NativeMethodSample), in turn, whether that thread is busy (zstd-jni
// compressing) or waiting (epoll_wait). So a native sample stands for
// many more thread-milliseconds than a Java one. Build weighs them:
//
//   - native samples whose innermost frame is a wait (Idle) are not CPU;
//   - a Java sample weighs one sampling period; a busy native sample K
//     periods, where K, the number of threads JFR rotated its native
//     samples through, is all native samples over the most any single
//     thread got (a thread that never leaves native code, like a network
//     thread in epoll, is sampled once every K turns);
//   - with jdk.ThreadCPULoad in the recording, each thread's weights are
//     scaled to the CPU the thread really used, so threads count by their
//     CPU, not by how often JFR caught them; threads that used CPU but
//     have no sample are listed as unsampled (JIT compiler threads by
//     their name);
//   - with jdk.CPULoad, the JVM's CPU beyond the sum of its Java threads
//     is the GC and VM threads', which JFR never samples: category gc.
//
// Shares are of that estimate of the JVM's CPU. Sample counts are given
// beside them, unweighted. JFR cannot walk a stack whose innermost frame
// is an intrinsic stub (CRC32C, MD5, AES, GHASH when the JIT uses the
// intrinsic) or JVM code: such samples are lost, and the thread's CPU is
// spread over the samples it has; Report.Threads shows how densely each
// thread was sampled.
package profile

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/jfr"
)

// Options tune Build.
type Options struct {
	// Top is how many methods, stacks, threads, monitors and waits to
	// list; default 20.
	Top int
	// Flags are JVM flags from outside the recording (jfr.VMFlags), for
	// the hints; the recording's own jdk.BooleanFlag values are used too.
	Flags map[string]string
}

// Report is the profile's result; it is also the JSON output.
type Report struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	DurationSec float64   `json:"duration_s"`
	// Method says how shares were estimated: "thread-cpu" (samples
	// scaled by jdk.ThreadCPULoad) or "samples" (sample weights only).
	Method string `json:"method"`
	// JVMCPU and MachineCPU are the average shares of the machine's CPU
	// (all cores) used by the JVM and by everything (jdk.CPULoad); 0 when
	// the recording has no CPU load.
	JVMCPU     float64 `json:"jvm_cpu"`
	MachineCPU float64 `json:"machine_cpu"`
	// Samples counts the recording's samples: Java (jdk.ExecutionSample),
	// Native (jdk.NativeMethodSample), of those Idle (waiting, not CPU),
	// and NoStack (without a stack trace, not used).
	Samples struct {
		Java    int64 `json:"java"`
		Native  int64 `json:"native"`
		Idle    int64 `json:"idle"`
		NoStack int64 `json:"no_stack"`
		Busy    int64 `json:"busy"`
	} `json:"samples"`
	// NativeWeight is K, the weight of a busy native sample in Java
	// samples (see the package doc).
	NativeWeight float64 `json:"native_weight"`

	Categories []Category  `json:"categories"`
	TopSelf    []Method    `json:"top_self"`
	TopTotal   []Method    `json:"top_total"`
	TopStacks  []StackLine `json:"top_stacks"`
	Threads    []ThreadUse `json:"threads"`
	GCPauses   GCSummary   `json:"gc_pauses"`
	Monitors   []Monitor   `json:"monitors"`
	WorstWaits []WaitLine  `json:"worst_waits"`
	Hints      []Hint      `json:"hints"`
	// Flags are the JVM flags known (the recording's and Options.Flags)
	// that the hints look at.
	Flags map[string]string `json:"flags,omitempty"`

	// Flame is the call tree for the flame graph.
	Flame *Node `json:"-"`
}

// Category is one category's share.
type Category struct {
	Name    string  `json:"name"`
	Share   float64 `json:"share"`   // of the JVM's CPU, estimated
	Samples int64   `json:"samples"` // busy samples it decided
	// Frames are the deciding frames, most weight first.
	Frames []FrameCount `json:"frames,omitempty"`
	Note   string       `json:"note,omitempty"`
}

// FrameCount is a deciding frame and its weight.
type FrameCount struct {
	Frame   string  `json:"frame"`
	Share   float64 `json:"share"`
	Samples int64   `json:"samples"`
}

// Method is a method's share: where it was the innermost frame (self) or
// anywhere on the stack (total).
type Method struct {
	Method   string  `json:"method"`
	Category string  `json:"category"`
	Share    float64 `json:"share"`
	Samples  int64   `json:"samples"`
}

// StackLine is a distinct stack, innermost frame first.
type StackLine struct {
	Frames    []string `json:"frames"`
	Truncated bool     `json:"truncated,omitempty"`
	Category  string   `json:"category"`
	Share     float64  `json:"share"`
	Samples   int64    `json:"samples"`
}

// ThreadUse is a thread's share of the JVM's CPU and its samples.
type ThreadUse struct {
	Thread   string  `json:"thread"`
	TID      int     `json:"tid"`
	Share    float64 `json:"share"`
	Samples  int64   `json:"samples"`
	Category string  `json:"category"` // of most of its weight
}

// GCSummary sums jdk.GarbageCollection events.
type GCSummary struct {
	Count       int     `json:"count"`
	PausesMs    float64 `json:"pauses_ms"`
	LongestMs   float64 `json:"longest_ms"`
	PausedShare float64 `json:"paused_share"` // of the recording's duration
}

// Hint is an observation about a known costly pattern.
type Hint struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// weighted is one busy sample's contribution.
type weighted struct {
	s        *jfr.Sample
	w        float64
	category string
	decider  int // index of the deciding frame, -1 for none
}

type threadKey struct {
	javaID uint64
	tid    int
}

func keyOf(t jfr.Thread) threadKey { return threadKey{t.JavaID, t.TID} }

// extraCPU is CPU the JVM measured outside the busy samples: a thread's
// that has none (thread is set), or the JVM's outside its Java threads.
type extraCPU struct {
	label, category string
	thread          *jfr.Thread
	w               float64
}

// Build makes the report of pr.
func Build(pr *jfr.Profile, o Options) *Report {
	if o.Top <= 0 {
		o.Top = 20
	}
	r := &Report{Start: pr.Start, End: pr.End, Method: "samples"}
	if pr.End.After(pr.Start) {
		r.DurationSec = pr.End.Sub(pr.Start).Seconds()
	}
	cats := newCategorizer()
	busy, perThread := weighBusy(pr, r, cats)
	extras := scaleToThreadCPU(pr, r, busy, perThread)
	r.JVMCPU, r.MachineCPU = averageLoad(pr)

	var total float64
	for _, b := range busy {
		total += b.w
	}
	for _, e := range extras {
		total += e.w
	}
	share := func(w float64) float64 {
		if total <= 0 {
			return 0
		}
		return w / total
	}
	r.Categories = categories(busy, extras, share)
	addMethodsAndThreads(r, busy, extras, cats, o.Top, share)
	r.Flame = flameOf(busy, extras, cats)

	r.GCPauses = gcSummary(pr, r.DurationSec)
	r.Monitors, r.WorstWaits = contention(pr.Waits, o.Top)
	r.Flags = flags(pr, o.Flags)
	r.Hints = hints(r, busy)
	return r
}

// weighBusy counts pr's samples in r.Samples and returns the busy ones
// (a stack, not idle), each weighed (a native sample counts K times a
// Java one: the native rotation, see docs/profile.md) and categorized,
// with the weight per thread.
func weighBusy(pr *jfr.Profile, r *Report, cats *categorizer) ([]weighted, map[threadKey]float64) {
	var busy []weighted
	nativePer := map[threadKey]int64{}
	var nativeAll int64
	for i := range pr.Samples {
		s := &pr.Samples[i]
		if s.Native {
			r.Samples.Native++
			nativeAll++
			nativePer[keyOf(s.Thread)]++
		} else {
			r.Samples.Java++
		}
		if s.Stack == nil || len(s.Stack.Frames) == 0 {
			r.Samples.NoStack++
			continue
		}
		if s.Native && Idle(s.Stack.Frames[0]) {
			r.Samples.Idle++
			continue
		}
		busy = append(busy, weighted{s: s})
	}
	r.Samples.Busy = int64(len(busy))
	k := 1.0
	if most := maxValue(nativePer); most > 0 {
		k = float64(nativeAll) / float64(most)
	}
	r.NativeWeight = k
	javaW, nativeW := 1.0, k
	pj, okj := pr.Period("jdk.ExecutionSample")
	pn, okn := pr.Period("jdk.NativeMethodSample")
	if okj && okn {
		nativeW = k * float64(pn) / float64(pj)
	}
	perThread := map[threadKey]float64{}
	for i := range busy {
		b := &busy[i]
		b.w = javaW
		if b.s.Native {
			b.w = nativeW
		}
		b.category, b.decider = cats.categorize(b.s)
		perThread[keyOf(b.s.Thread)] += b.w
	}
	return busy, perThread
}

// scaleToThreadCPU scales the busy samples' weights to their threads' CPU
// as JFR measured it (jdk.ThreadCPULoad; r.Method says whether it could)
// and returns the CPU outside them: threads without samples, and the
// JVM's outside its Java threads.
func scaleToThreadCPU(pr *jfr.Profile, r *Report, busy []weighted, perThread map[threadKey]float64) []extraCPU {
	cpu := threadCPU(pr)
	if len(cpu) == 0 {
		return nil
	}
	r.Method = "thread-cpu"
	var sampledW, sampledCPU float64
	for key, c := range cpu {
		if w := perThread[key]; w > 0 {
			sampledW += w
			sampledCPU += c.cpu
		}
	}
	// Threads with samples but no CPU load (they ended before JFR
	// measured them) keep their weights at the average scale.
	avg := 0.0
	if sampledW > 0 {
		avg = sampledCPU / sampledW
	}
	for i := range busy {
		b := &busy[i]
		key := keyOf(b.s.Thread)
		if c, ok := cpu[key]; ok {
			b.w *= c.cpu / perThread[key]
		} else {
			b.w *= avg
		}
	}
	keys := make([]threadKey, 0, len(cpu))
	for key := range cpu {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b threadKey) int { return cmp.Or(cmp.Compare(a.tid, b.tid), cmp.Compare(a.javaID, b.javaID)) })
	var extras []extraCPU
	for _, key := range keys {
		c := cpu[key]
		if perThread[key] > 0 || c.cpu <= 0 {
			continue
		}
		cat := ThreadCategory(c.thread.Name)
		if cat == "" || cat == Network || cat == Request || cat == Replicate || cat == Log {
			// A name says what a thread is for, not where its CPU
			// went: without a sample it is unsampled.
			cat = Unsampled
		}
		t := c.thread
		extras = append(extras, extraCPU{label: c.thread.Name, category: cat, thread: &t, w: c.cpu})
	}
	if jvm, ok := jvmCPU(pr); ok {
		var threads float64
		for _, c := range cpu {
			threads += c.cpu
		}
		// Loads are sampled at different moments: ignore a small
		// difference either way.
		if rest := jvm - threads; rest > 0.02*jvm {
			extras = append(extras, extraCPU{label: "GC and VM threads", category: GC, w: rest})
		}
	}
	return extras
}

// categories sums the weights per category, with the frames that decided
// each (at most five), the largest first.
func categories(busy []weighted, extras []extraCPU, share func(float64) float64) []Category {
	type catAcc struct {
		w       float64
		samples int64
		frames  map[string]*FrameCount
	}
	acc := map[string]*catAcc{}
	add := func(cat, frame string, w float64, samples int64) {
		a := acc[cat]
		if a == nil {
			a = &catAcc{frames: map[string]*FrameCount{}}
			acc[cat] = a
		}
		a.w += w
		a.samples += samples
		fc := a.frames[frame]
		if fc == nil {
			fc = &FrameCount{Frame: frame}
			a.frames[frame] = fc
		}
		fc.Share += w
		fc.Samples += samples
	}
	for _, b := range busy {
		f := "thread " + threadGroup(b.s.Thread.Name)
		if b.decider >= 0 {
			f = frameName(b.s.Stack.Frames[b.decider])
		}
		add(b.category, f, b.w, 1)
	}
	for _, e := range extras {
		f := e.label
		if e.thread != nil {
			f = "thread " + threadGroup(e.label)
		}
		add(e.category, f, e.w, 0)
	}
	var out []Category
	for name, a := range acc {
		c := Category{Name: name, Share: share(a.w), Samples: a.samples}
		for _, fc := range a.frames {
			fc.Share = share(fc.Share)
			c.Frames = append(c.Frames, *fc)
		}
		sortFrames(c.Frames)
		c.Frames = c.Frames[:min(len(c.Frames), 5)]
		if name == GC && a.samples == 0 {
			c.Note = "JVM CPU outside its Java threads (jdk.CPULoad minus jdk.ThreadCPULoad)"
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Category) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// addMethodsAndThreads sets r's top methods (self and total: a method
// once per sample however often it recurs), top stacks and threads (each
// in the category most of its weight went to), top of each.
func addMethodsAndThreads(r *Report, busy []weighted, extras []extraCPU, cats *categorizer, top int, share func(float64) float64) {
	self := map[string]*Method{}
	totalM := map[string]*Method{}
	stacks := map[*jfr.Stack]*StackLine{}
	threads := map[threadKey]*ThreadUse{}
	threadCats := map[threadKey]map[string]float64{}
	addThread := func(t jfr.Thread, w float64, samples int64, cat string) {
		key := keyOf(t)
		tu := threads[key]
		if tu == nil {
			tu = &ThreadUse{Thread: t.Name, TID: t.TID}
			threads[key] = tu
			threadCats[key] = map[string]float64{}
		}
		tu.Share += w
		tu.Samples += samples
		threadCats[key][cat] += w
	}
	seen := map[string]bool{}
	for _, b := range busy {
		frames := b.s.Stack.Frames
		name := frameName(frames[0])
		m := self[name]
		if m == nil {
			m = &Method{Method: name, Category: cats.frame(frames[0])}
			self[name] = m
		}
		m.Share += b.w
		m.Samples++
		clear(seen)
		for _, f := range frames {
			n := frameName(f)
			if seen[n] {
				continue // recursion: once per sample
			}
			seen[n] = true
			m := totalM[n]
			if m == nil {
				m = &Method{Method: n, Category: cats.frame(f)}
				totalM[n] = m
			}
			m.Share += b.w
			m.Samples++
		}
		sl := stacks[b.s.Stack]
		if sl == nil {
			sl = &StackLine{Category: b.category, Truncated: b.s.Stack.Truncated}
			stacks[b.s.Stack] = sl
		}
		sl.Share += b.w
		sl.Samples++
		addThread(b.s.Thread, b.w, 1, b.category)
	}
	for _, e := range extras {
		if e.thread != nil {
			addThread(*e.thread, e.w, 0, e.category)
		}
	}
	r.TopSelf = topMethods(self, top, share)
	r.TopTotal = topMethods(totalM, top, share)
	r.TopStacks = topStacks(stacks, top, share)
	for key, tu := range threads {
		tu.Share = share(tu.Share)
		best, bw := Other, -1.0
		for c, w := range threadCats[key] {
			if w > bw || w == bw && c < best {
				best, bw = c, w
			}
		}
		tu.Category = best
		r.Threads = append(r.Threads, *tu)
	}
	slices.SortFunc(r.Threads, func(a, b ThreadUse) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.TID, b.TID))
	})
	r.Threads = r.Threads[:min(len(r.Threads), top)]
}

// flameOf is the flame graph's tree: the busy samples' stacks, and the
// CPU outside them as leaves of the root.
func flameOf(busy []weighted, extras []extraCPU, cats *categorizer) *Node {
	root := newNode("all")
	for _, b := range busy {
		root.add(b.s.Stack, b.w, cats)
	}
	for _, e := range extras {
		label := "[" + e.category + ": " + e.label + "]"
		if e.thread == nil {
			label = "[" + e.label + "]"
		}
		n := root.child(label, e.category)
		n.Weight += e.w
		n.Self += e.w
		root.Weight += e.w
	}
	return root
}

// categorizer caches the rules' verdict per frame.
type categorizer struct{ byFrame map[jfr.Frame]string }

func newCategorizer() *categorizer { return &categorizer{byFrame: map[jfr.Frame]string{}} }

func (c *categorizer) frame(f jfr.Frame) string {
	key := jfr.Frame{Class: f.Class, Method: f.Method}
	v, ok := c.byFrame[key]
	if !ok {
		v = FrameCategory(f)
		c.byFrame[key] = v
	}
	return v
}

func (c *categorizer) categorize(s *jfr.Sample) (string, int) {
	for i, f := range s.Stack.Frames {
		if v := c.frame(f); v != "" {
			return v, i
		}
	}
	if v := ThreadCategory(s.Thread.Name); v != "" {
		return v, -1
	}
	return Other, -1
}

type cpuOf struct {
	thread jfr.Thread
	cpu    float64 // machine-seconds: load times seconds
}

// threadCPU sums each thread's jdk.ThreadCPULoad. JFR measures every
// thread each period but writes an event only when the thread used 1 ms
// of CPU or more since its last event, and divides that CPU by one
// period: so an event's CPU is its load times the period, whatever the
// gap to the thread's previous event. A thread's first event is left
// out: its CPU dates from before the recording.
func threadCPU(pr *jfr.Profile) map[threadKey]*cpuOf {
	byThread := map[threadKey][]jfr.ThreadCPU{}
	for _, e := range pr.ThreadCPU {
		byThread[keyOf(e.Thread)] = append(byThread[keyOf(e.Thread)], e)
	}
	period, ok := pr.Period("jdk.ThreadCPULoad")
	if !ok {
		// The shortest gap between a thread's events.
		period = time.Duration(math.MaxInt64)
		for _, es := range byThread {
			slices.SortStableFunc(es, func(a, b jfr.ThreadCPU) int { return a.Time.Compare(b.Time) })
			for i := 1; i < len(es); i++ {
				if d := es[i].Time.Sub(es[i-1].Time); d > 0 {
					period = min(period, d)
				}
			}
		}
		if period == time.Duration(math.MaxInt64) {
			period = time.Second
		}
	}
	out := map[threadKey]*cpuOf{}
	for key, es := range byThread {
		if len(es) < 2 {
			continue
		}
		slices.SortStableFunc(es, func(a, b jfr.ThreadCPU) int { return a.Time.Compare(b.Time) })
		c := &cpuOf{thread: es[0].Thread}
		for _, e := range es[1:] {
			c.cpu += (e.User + e.System) * period.Seconds()
		}
		out[key] = c
	}
	return out
}

// jvmCPU sums jdk.CPULoad's JVM load over time, like threadCPU (JFR's
// first CPU load is all zeros).
func jvmCPU(pr *jfr.Profile) (float64, bool) {
	var es []jfr.CPULoad
	for _, e := range pr.CPULoad {
		if e.JVMUserOK {
			es = append(es, e)
		}
	}
	slices.SortStableFunc(es, func(a, b jfr.CPULoad) int { return a.Time.Compare(b.Time) })
	var sum float64
	for i := 1; i < len(es); i++ {
		sum += (es[i].JVMUser + es[i].JVMSystem) * es[i].Time.Sub(es[i-1].Time).Seconds()
	}
	return sum, len(es) >= 2
}

// averageLoad is the mean JVM and machine load of jdk.CPULoad events,
// leaving out the zeros JFR writes first.
func averageLoad(pr *jfr.Profile) (jvm, machine float64) {
	n := 0
	for _, e := range pr.CPULoad {
		if !e.JVMUserOK || e.JVMUser+e.JVMSystem == 0 && e.MachineTotal == 0 {
			continue
		}
		jvm += e.JVMUser + e.JVMSystem
		machine += e.MachineTotal
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return jvm / float64(n), machine / float64(n)
}

func maxValue[K comparable](m map[K]int64) int64 {
	var v int64
	for _, x := range m {
		v = max(v, x)
	}
	return v
}

func sortFrames(fs []FrameCount) {
	slices.SortFunc(fs, func(a, b FrameCount) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Frame, b.Frame))
	})
}

func topMethods(m map[string]*Method, top int, share func(float64) float64) []Method {
	out := make([]Method, 0, len(m))
	for _, x := range m {
		x.Share = share(x.Share)
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b Method) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Method, b.Method))
	})
	return out[:min(len(out), top)]
}

func topStacks(m map[*jfr.Stack]*StackLine, top int, share func(float64) float64) []StackLine {
	// Equal stacks from different chunks are different pointers: merge
	// them by their text, in an order that does not depend on the map's
	// (floating-point sums differ in their last bits with the order, and
	// so could the ranking of two stacks that tie).
	type textLine struct {
		key   string
		names []string
		sl    *StackLine
	}
	lines := make([]textLine, 0, len(m))
	for st, sl := range m {
		names := make([]string, len(st.Frames))
		for i, f := range st.Frames {
			names[i] = frameName(f)
		}
		lines = append(lines, textLine{strings.Join(names, "\n"), names, sl})
	}
	slices.SortFunc(lines, func(a, b textLine) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.sl.Share, b.sl.Share), cmp.Compare(a.sl.Samples, b.sl.Samples))
	})
	byText := map[string]*StackLine{}
	for _, l := range lines {
		key, names, sl := l.key, l.names, l.sl
		if x := byText[key]; x != nil {
			x.Share += sl.Share
			x.Samples += sl.Samples
			continue
		}
		sl.Frames = names
		byText[key] = sl
	}
	out := make([]StackLine, 0, len(byText))
	for _, sl := range byText {
		sl.Share = share(sl.Share)
		out = append(out, *sl)
	}
	slices.SortFunc(out, func(a, b StackLine) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.Samples, a.Samples), slices.Compare(a.Frames, b.Frames))
	})
	return out[:min(len(out), top)]
}

// poolNumber is a thread's number in its pool: digits after a separator
// (handler-3, GC Thread#0, ReplicaFetcherThread-0-2) or ending ...Thread0
// (C2 CompilerThread0), not the digits of a word (md5, crc32c).
var poolNumber = regexp.MustCompile(`([-#_ .])[0-9]+|(Thread)[0-9]+$`)

// threadGroup names a pool of threads: their numbers become N.
func threadGroup(name string) string { return poolNumber.ReplaceAllString(name, "${1}${2}N") }

func gcSummary(pr *jfr.Profile, durSec float64) GCSummary {
	var g GCSummary
	for _, e := range pr.GCs {
		g.Count++
		g.PausesMs += float64(e.SumOfPauses) / 1e6
		g.LongestMs = max(g.LongestMs, float64(e.LongestPause)/1e6)
	}
	if durSec > 0 {
		g.PausedShare = g.PausesMs / 1000 / durSec
	}
	return g
}

// flags keeps the JVM flags the hints look at.
func flags(pr *jfr.Profile, extra map[string]string) map[string]string {
	out := map[string]string{}
	for name, v := range pr.Flags {
		if strings.HasPrefix(name, "Use") && (strings.Contains(name, "AES") || strings.Contains(name, "SHA") ||
			strings.Contains(name, "MD5") || strings.Contains(name, "CRC32") || strings.Contains(name, "GHASH")) {
			out[name] = fmt.Sprint(v)
		}
	}
	for name, v := range extra {
		if strings.Contains(name, "Intrinsics") || name == "UseAES" || name == "UseSHA" {
			out[name] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// pct formats a share as a percentage.
func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	p := f * 100
	switch {
	case p == 0:
		return "0%"
	case p < 0.1:
		return "<0.1%"
	case p < 10:
		return fmt.Sprintf("%.1f%%", p)
	default:
		return fmt.Sprintf("%.0f%%", p)
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
