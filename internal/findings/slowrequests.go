package findings

import (
	"fmt"
	"strings"

	"github.com/kscope-dev/kscope/internal/explain"
)

// The slow produce requests, one finding per cause explain put them on.
func init() { register("slow-requests", 10, slowRequests) }

// slowRequests makes a finding of each cause of the slow requests. They
// are cause for alarm when slow means AlarmMs or more and the cause
// holds enough requests to shape the p99.9 (and three at least); a
// stray one is a warning; below AlarmMs (a p99 of a healthy broker) the
// causes are notes.
func slowRequests(e *Evidence) []Finding {
	s := e.Summary
	if s == nil || s.Slow == 0 {
		return nil
	}
	alarming := s.ThresholdMs >= e.alarmMs()
	var out []Finding
	for _, c := range s.Causes {
		if c.Requests == 0 {
			continue
		}
		sev := Note
		if alarming {
			sev = Warning
			// Enough to shape the p99.9, and more than a stray pair.
			if c.Requests >= 3 && float64(c.Requests) >= 0.001*float64(s.ProduceRequests) {
				sev = Alarm
			}
		}
		f := Finding{
			Severity: sev,
			Title: fmt.Sprintf("%s: %d of the %d produce requests of %s or more (%s): %s", c.Cause, c.Requests, s.Slow,
				fmtMs(s.ThresholdMs), threshold(s), explain.CauseMeaning(c.Cause)),
			Weight: c.LatencyMs,
		}
		if ex := slowestOf(e.Slowest, c.Cause); ex != nil {
			f.Evidence = fmt.Sprintf("the slowest, %s at %s from %s: %s", fmtMs(ex.LatencyMs),
				ex.Arrival.Format("15:04:05.000"), ex.Client, ex.Detail)
			f.Next = nextExplain(e, s, fmt.Sprintf("--request %s/%d", ex.Client, ex.CorrelationID))
		} else {
			f.Next = nextExplain(e, s, "")
		}
		out = append(out, f)
	}
	return out
}

// threshold says where the slow threshold came from.
func threshold(s *explain.Summary) string {
	if s.ThresholdFrom == "--slow" || s.ThresholdFrom == "" {
		return "slow"
	}
	return "the " + s.ThresholdFrom
}

func slowestOf(fs []*explain.Finding, cause string) *explain.Finding {
	for _, f := range fs {
		if f.Cause == cause {
			return f
		}
	}
	return nil
}

// nextExplain is the explain command that shows the detail: on the
// recording, with the same threshold, and extra.
func nextExplain(e *Evidence, s *explain.Summary, extra string) string {
	if e.Dir == "" {
		return ""
	}
	args := []string{"kscope explain", shellQuote(e.Dir)}
	if s.ThresholdFrom == "--slow" {
		args = append(args, "--slow", fmt.Sprintf("%gms", s.ThresholdMs))
	}
	if extra != "" {
		args = append(args, extra)
	}
	return strings.Join(args, " ")
}

// fmtMs is a latency for a sentence: 512 ms, 1.2 s, 3.4 ms.
func fmtMs(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f ms", ms)
	}
}

// shellQuote quotes a path for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '+' || r == ',' || r == '=' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
