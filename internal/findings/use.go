package findings

import "fmt"

// The host's USE verdicts over the recording.
func init() { register("use", 30, useVerdicts) }

// useVerdicts makes a finding of each resource and kind the USE verdicts
// named: saturation for a quarter of the intervals or more is an alarm,
// saturation for less and errors are warnings, utilization a note.
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
			if share >= 0.25 && v.Intervals >= 3 {
				sev = Alarm
			}
		case "errors":
			sev = Warning
		}
		f := Finding{
			Severity: sev,
			Title:    fmt.Sprintf("%s %s in %d of the %d seconds sampled (%.0f%%)", v.Resource, kindWord(v.Kind), v.Intervals, u.Intervals, 100*share),
			Evidence: v.Reason,
			Weight:   float64(v.Intervals) * 1000,
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
