package findings

import "fmt"

// What the recording could not see, and what it lost: the findings above
// are as good as the evidence.
func init() { register("evidence", 90, evidence) }

// evidence makes a note of each kind of evidence the recording lacks and
// a warning of losses (packets, events dropped).
func evidence(e *Evidence) []Finding {
	if e.Meta == nil {
		return nil
	}
	var out []Finding
	for _, m := range e.Meta.MissingEvidence() {
		out = append(out, Finding{Severity: Note, Title: "not seen: " + m})
	}
	c, t := e.Meta.Capture, e.Meta.Trace
	if c.KernelDrops > 0 || t.RingbufDrops > 0 || t.JournalRingbufDrops > 0 {
		out = append(out, Finding{Severity: Warning,
			Title: fmt.Sprintf("the recording lost %d packets in the kernel, %d writes and %d journal events: the counts above are short",
				c.KernelDrops, t.RingbufDrops, t.JournalRingbufDrops)})
	}
	return out
}
