package findings

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The file-system stalls: a device whose writes stopped completing.
func init() { register("stalls", 20, stalls) }

// stalls makes one finding per device with stalls (explain's: writes of
// explain's --stall or more, overlapping, merged): an alarm when one
// lasted AlarmMs or more.
func stalls(e *Evidence) []Finding {
	if e.Summary == nil || len(e.Summary.Stalls) == 0 {
		return nil
	}
	type device struct {
		n, requests    int
		longest, total float64
		at             []string
		partitions     map[string]bool
	}
	byDev := map[string]*device{}
	var order []string
	for _, st := range e.Summary.Stalls {
		d := byDev[st.Dev]
		if d == nil {
			d = &device{partitions: map[string]bool{}}
			byDev[st.Dev] = d
			order = append(order, st.Dev)
		}
		d.n++
		d.requests += st.Requests
		d.longest = max(d.longest, st.DurationMs)
		d.total += st.DurationMs
		if len(d.at) < 5 {
			d.at = append(d.at, fmt.Sprintf("%s (%s)", st.Start.Format("15:04:05.000"), fmtMs(st.DurationMs)))
		}
		for _, p := range st.Partitions {
			d.partitions[p] = true
		}
	}
	var out []Finding
	for _, dev := range order {
		d := byDev[dev]
		sev := Warning
		if d.longest >= e.alarmMs() {
			sev = Alarm
		}
		parts := make([]string, 0, len(d.partitions))
		for p := range d.partitions {
			parts = append(parts, p)
		}
		slices.SortFunc(parts, cmp.Compare)
		if len(parts) > 6 {
			parts = append(parts[:6], fmt.Sprintf("%d more", len(parts)-6))
		}
		f := Finding{
			Severity: sev,
			Title: fmt.Sprintf("the file system on device %s stopped completing the broker's writes %s, for up to %s", dev,
				times(d.n), fmtMs(d.longest)),
			Evidence: fmt.Sprintf("stalls at %s; partitions %s; %d slow requests rest on them", strings.Join(d.at, ", "),
				strings.Join(parts, ", "), d.requests),
			Weight: d.total,
		}
		if e.Dir != "" {
			f.Next = "kscope report " + shellQuote(e.Dir) + " -o report.html (the write latency heatmap of each device, with its journal commits)"
		}
		out = append(out, f)
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
