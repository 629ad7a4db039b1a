package findings

import (
	"fmt"
	"strings"

	"github.com/kscope-dev/kscope/internal/explain"
)

// The host's USE verdicts over the recording.
func init() { register("use", 30, useVerdicts) }

// useVerdicts makes a finding of each resource and kind the USE verdicts
// named. Saturation (by USE's definition: any queueing, e.g. more
// runnable tasks than CPUs) is an alarm when it held a quarter of the
// intervals or more and explain put slow requests on a cause the
// resource's queueing makes (showsIn); saturation that slowed no request
// (the headroom is gone, nothing suffers yet, or the slow requests had
// another cause), and errors, are warnings; utilization a note. Their
// weight is the seconds: the slow requests' findings, weighed in
// milliseconds of latency, say why and come first.
func useVerdicts(e *Evidence) []Finding {
	u := e.Use
	if u == nil || u.Intervals == 0 {
		return nil
	}
	var out []Finding
	for _, v := range u.Verdicts {
		if v.Intervals == 0 {
			continue
		}
		share := float64(v.Intervals) / float64(u.Intervals)
		sev := Note
		switch v.Kind {
		case "saturation":
			sev = Warning
			if share >= 0.25 && v.Intervals >= 3 && slowedBy(e, v.Resource) {
				sev = Alarm
			}
		case "errors":
			sev = Warning
		}
		f := Finding{
			Severity: sev,
			Title:    fmt.Sprintf("%s %s in %d of the %d seconds sampled (%.0f%%)", v.Resource, kindWord(v.Kind), v.Intervals, u.Intervals, 100*share),
			Evidence: v.Reason,
			Weight:   float64(v.Intervals),
		}
		if e.Meta != nil && e.Meta.Broker.PID > 0 {
			f.Next = fmt.Sprintf("kscope use --pid %d --duration 30s", e.Meta.Broker.PID)
		} else {
			f.Next = "kscope use --duration 30s"
		}
		out = append(out, f)
	}
	return out
}

func kindWord(kind string) string {
	switch kind {
	case "saturation":
		return "saturated"
	case "utilization":
		return "busy"
	case "errors":
		return "had errors"
	}
	return kind
}

// showsIn are the causes of slow requests that a resource's saturation
// makes, by the resource's first word.
var showsIn = map[string][]string{
	"cpu":    {explain.CauseCPUStarved},
	"disk":   {explain.CauseSlowWrite, explain.CauseLockWait},
	"io":     {explain.CauseSlowWrite, explain.CauseLockWait},
	"memory": {explain.CauseSlowWrite, explain.CauseLockWait, explain.CauseGCPause},
	"nic":    {explain.CauseNetwork, explain.CauseResponseSend},
	"tcp":    {explain.CauseNetwork, explain.CauseResponseSend},
}

// slowedBy reports whether explain put slow requests of AlarmMs or more on
// a cause resource's saturation makes.
func slowedBy(e *Evidence, resource string) bool {
	s := e.Summary
	if s == nil || s.ThresholdMs < e.alarmMs() {
		return false
	}
	first, _, _ := strings.Cut(resource, " ")
	for _, c := range s.Causes {
		for _, cause := range showsIn[first] {
			if c.Cause == cause && c.Requests > 0 {
				return true
			}
		}
	}
	return false
}
