package profile

import (
	"fmt"
	"io"
	"strings"

	"github.com/kscope-dev/kscope/internal/output"
)

// stackLines is how many frames of a stack the text report prints.
const stackLines = 8

// WriteText writes the report for a terminal, section after section.
// Names from the recording (classes, methods, threads) are escaped.
func WriteText(w io.Writer, r *Report) error {
	bw := &errWriter{w: w}
	for _, section := range []func(*errWriter, *Report){
		writeTextHead,
		writeTextCategories,
		writeTextMethods,
		writeTextStacks,
		writeTextThreads,
		writeTextLocks,
		writeTextHints,
	} {
		section(bw, r)
	}
	return bw.err
}

// writeTextHead says what was recorded: the span, the samples and what
// the shares are of.
func writeTextHead(bw *errWriter, r *Report) {
	bw.printf("Profile %s to %s UTC (%.1f s).\n", r.Start.UTC().Format("2006-01-02 15:04:05"), r.End.UTC().Format("15:04:05"), r.DurationSec)
	bw.printf("Samples: %d busy of %d (%d Java, %d native of which %d waiting in epoll/poll/accept/fsync; native weight K=%.1f).\n",
		r.Samples.Busy, r.Samples.Java+r.Samples.Native, r.Samples.Java, r.Samples.Native, r.Samples.Idle, r.NativeWeight)
	switch r.Method {
	case "thread-cpu":
		bw.printf("Shares are of the JVM's CPU: samples scaled to each thread's CPU (jdk.ThreadCPULoad)")
	default:
		bw.printf("Shares are of the weighted samples (the recording has no jdk.ThreadCPULoad)")
	}
	if r.JVMCPU > 0 {
		bw.printf("; the JVM used %s of the machine's CPU on average, the machine %s", pct(r.JVMCPU), pct(r.MachineCPU))
	}
	bw.printf(".\n")
}

// writeTextCategories writes CPU by category with the frames that
// decided each.
func writeTextCategories(bw *errWriter, r *Report) {
	e := output.Escape
	bw.printf("\nCPU by category (cpu: share of the JVM's CPU, estimated; samples: busy samples it decided)\n")
	bw.printf("%6s %7s  %-18s %s\n", "cpu", "samples", "category", "deciding frames")
	for _, c := range r.Categories {
		var fs []string
		for _, f := range c.Frames[:min(len(c.Frames), 3)] {
			if f.Samples > 0 {
				fs = append(fs, fmt.Sprintf("%s %s (%d)", e(f.Frame), pct(f.Share), f.Samples))
			} else {
				fs = append(fs, fmt.Sprintf("%s %s", e(f.Frame), pct(f.Share)))
			}
		}
		if c.Note != "" {
			fs = append(fs, c.Note)
		}
		bw.printf("%6s %7d  %-18s %s\n", pct(c.Share), c.Samples, c.Name, strings.Join(fs, "; "))
	}
}

// writeTextMethods writes the top methods by self and by total CPU.
func writeTextMethods(bw *errWriter, r *Report) {
	methods := func(title string, ms []Method) {
		bw.printf("\n%s\n", title)
		bw.printf("%6s %7s  %s\n", "cpu", "samples", "method")
		for _, m := range ms {
			bw.printf("%6s %7d  %s%s\n", pct(m.Share), m.Samples, output.Escape(m.Method), orEmpty(m.Category, " ["+m.Category+"]"))
		}
	}
	methods("Top methods (self: the innermost frame)", r.TopSelf)
	methods("Top methods (total: anywhere on the stack)", r.TopTotal)
}

// writeTextStacks writes the top stacks, each cut at stackLines frames.
func writeTextStacks(bw *errWriter, r *Report) {
	bw.printf("\nTop stacks (innermost frame first)\n")
	for _, s := range r.TopStacks {
		bw.printf("%6s %5d  [%s]\n", pct(s.Share), s.Samples, s.Category)
		for i, f := range s.Frames {
			if i == stackLines {
				bw.printf("               … %d more frames\n", len(s.Frames)-stackLines)
				break
			}
			bw.printf("               %s\n", output.Escape(f))
		}
		if s.Truncated && len(s.Frames) <= stackLines {
			bw.printf("               … (truncated by JFR)\n")
		}
	}
}

// writeTextThreads writes the threads by CPU, and the GC pauses.
func writeTextThreads(bw *errWriter, r *Report) {
	bw.printf("\nThreads\n")
	bw.printf("%6s %7s %8s  %s\n", "cpu", "samples", "tid", "thread [category of most of its CPU]")
	for _, t := range r.Threads {
		bw.printf("%6s %7d %8d  %s [%s]\n", pct(t.Share), t.Samples, t.TID, output.Escape(t.Thread), t.Category)
	}
	if g := r.GCPauses; g.Count > 0 {
		bw.printf("\nGC: %d collections, pauses %.0f ms in all (%s of the recording), the longest %.1f ms.\n", g.Count, g.PausesMs, pct(g.PausedShare), g.LongestMs)
	}
}

// writeTextLocks writes the lock contention: the monitors with their
// waiters, holders and a stack, then the worst single waits.
func writeTextLocks(bw *errWriter, r *Report) {
	e := output.Escape
	bw.printf("\nLock contention (synchronized monitors, and parks on java.util.concurrent locks)\n")
	if len(r.Monitors) == 0 {
		bw.printf("none recorded\n")
	}
	for _, m := range r.Monitors {
		bw.printf("%s %s in %s: %d waits, %.1f ms in all, worst %.1f ms; waiting %s", e(m.Monitor), "("+m.Kind+")", e(m.Site), m.Waits, m.TotalMs, m.WorstMs, e(strings.Join(m.Threads, ", ")))
		if len(m.Owners) > 0 {
			bw.printf("; held by %s", e(strings.Join(m.Owners, ", ")))
		}
		bw.printf("\n")
		for i, f := range m.Stack {
			if i == 4 {
				break
			}
			bw.printf("    %s\n", e(f))
		}
	}
	if len(r.WorstWaits) > 0 {
		bw.printf("\nWorst single waits\n")
		for _, l := range r.WorstWaits {
			bw.printf("%s %8.1f ms  %s: %s in %s%s\n", l.Start.UTC().Format("15:04:05.000"), l.Ms, e(l.Thread), e(l.Monitor), e(l.Site), orEmpty(l.Owner, ", held by "+e(l.Owner)))
		}
	}
}

// writeTextHints writes the hints, or that none reached its threshold.
func writeTextHints(bw *errWriter, r *Report) {
	bw.printf("\nHints\n")
	if len(r.Hints) == 0 {
		bw.printf("none: no known costly pattern reached its threshold (docs/profile.md)\n")
	}
	for _, h := range r.Hints {
		bw.printf("- %s\n", output.Escape(h.Text))
	}
}

func orEmpty(cond, s string) string {
	if cond == "" {
		return ""
	}
	return s
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
