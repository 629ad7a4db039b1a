package findings

import "fmt"

// The produce latency's distribution: the context of every other finding.
func init() { register("latency", 100, latency) }

func latency(e *Evidence) []Finding {
	l := e.Latency
	if l.Requests == 0 {
		return []Finding{{Severity: Note, Title: "no answered produce request was seen: nothing to time"}}
	}
	sev := Note
	if l.P99 >= e.alarmMs() {
		sev = Warning
	}
	return []Finding{{Severity: sev,
		Title: fmt.Sprintf("produce latency over %d requests: p50 %s, p99 %s, p99.9 %s, max %s", l.Requests,
			fmtMs(l.P50), fmtMs(l.P99), fmtMs(l.P999), fmtMs(l.Max))}}
}
