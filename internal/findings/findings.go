// Package findings turns what a recording shows into a short ranked list
// of findings: one sentence each, the evidence for it, and the next
// command to run for the detail. `kscope doctor` prints the list, and
// `kscope report` puts it at the top of its page.
//
// Each view of the evidence is a check in a file of its own that
// registers itself (node_exporter's collector registry is the model):
// explain's causes, the file-system stalls, the host's USE verdicts, what
// the recording could not see. A new view is one new file; nothing else
// in the package changes.
package findings

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/recording"
)

// Severity says how much a finding matters.
type Severity int

const (
	// Note is context: what kscope could not see, a tail that is
	// within what a healthy broker shows.
	Note Severity = iota
	// Warning is a problem of a size that does not yet slow requests
	// past the alarm threshold, or slows only a few.
	Warning
	// Alarm is a problem that made produce requests slow (at or above
	// Evidence.AlarmMs) or saturated a resource for a good part of the
	// time.
	Alarm
)

var severityNames = [...]string{Note: "note", Warning: "warning", Alarm: "alarm"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText makes the JSON form the name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one thing wrong (or worth knowing) about the broker.
type Finding struct {
	Severity Severity `json:"severity"`
	// Check is the name of the check that found it.
	Check string `json:"check"`
	// Title is the finding in one sentence.
	Title string `json:"title"`
	// Evidence is what shows it: the measured figures, an example.
	Evidence string `json:"evidence,omitempty"`
	// Next is the command that shows the detail.
	Next string `json:"next,omitempty"`
	// Weight orders findings of one severity: for the slow-request
	// findings the milliseconds of slow latency they account for.
	Weight float64 `json:"weight"`
}

// Evidence is what the checks look at: one recording (or capture)
// explained, and its host's USE figures.
type Evidence struct {
	// Dir is the recording directory ("" for captures); the Next
	// commands name it.
	Dir  string
	Meta *recording.Meta
	// Summary and Slowest are explain's: the slow requests' causes,
	// and the slowest of them (slowest first).
	Summary *explain.Summary
	Slowest []*explain.Finding
	// Latency is the produce latency's distribution.
	Latency Latency
	// Use are the USE verdicts over the recording (nil without
	// use.jsonl).
	Use *Use
	// AlarmMs is the latency from which a slow request is cause for
	// alarm (0: DefaultAlarmMs).
	AlarmMs float64
	// Clients is the clients view of the same requests (nil: not
	// built).
	Clients *clients.Report
	// Consumers is the consumers view of the same requests (nil: not
	// built).
	Consumers *consumers.Report
}

// DefaultAlarmMs is Evidence.AlarmMs's default: a produce request of
// 100 ms or more. A healthy broker on local disks answers in a few
// milliseconds at the median and tens at p99 (its young GC pauses).
const DefaultAlarmMs = 100

func (e *Evidence) alarmMs() float64 { return cmp.Or(e.AlarmMs, DefaultAlarmMs) }

// Latency is the produce latency's distribution, in milliseconds.
type Latency struct {
	Requests            int64
	P50, P99, P999, Max float64
}

// Use is the host's USE verdicts over a recording: per resource and
// kind, in how many of the intervals.
type Use struct {
	Intervals int64
	Verdicts  []UseVerdict
}

// UseVerdict is one resource and kind past its threshold.
type UseVerdict struct {
	Resource  string // cpu, memory, io, disk NAME, nic NAME, tcp, fds
	Kind      string // saturation, utilization, errors
	Intervals int64
	Reason    string // the first interval's reason
}

// A check looks at the evidence and returns what it finds (none: nil).
type check struct {
	name  string
	order int
	run   func(*Evidence) []Finding
}

type registry struct {
	mu     sync.Mutex
	checks []check
}

var checks registry

// register adds a check; a check's file calls it from init. order breaks
// ties between findings of the same severity and weight.
func register(name string, order int, run func(*Evidence) []Finding) {
	checks.mu.Lock()
	defer checks.mu.Unlock()
	if slices.ContainsFunc(checks.checks, func(c check) bool { return c.name == name }) {
		panic("findings: check registered twice: " + name)
	}
	checks.checks = append(checks.checks, check{name, order, run})
}

// Checks lists the registered checks' names, in order.
func Checks() []string {
	var names []string
	for _, c := range sortedChecks() {
		names = append(names, c.name)
	}
	return names
}

func sortedChecks() []check {
	checks.mu.Lock()
	defer checks.mu.Unlock()
	cs := slices.Clone(checks.checks)
	slices.SortStableFunc(cs, func(a, b check) int { return cmp.Compare(a.order, b.order) })
	return cs
}

// Collect runs every check on e and returns their findings ranked: the
// most severe first, then by weight, then in the checks' order.
func Collect(e *Evidence) []Finding {
	var out []Finding
	for _, c := range sortedChecks() {
		for _, f := range c.run(e) {
			f.Check = c.name
			out = append(out, f)
		}
	}
	Rank(out)
	return out
}

// Worst is the most severe of fs (Note for none).
func Worst(fs []Finding) Severity {
	w := Note
	for _, f := range fs {
		w = max(w, f.Severity)
	}
	return w
}

// String is f as one JSON object, for logs and tests.
func (f Finding) String() string {
	b, _ := json.Marshal(f)
	return string(b)
}

// Rank sorts fs as Collect does: the most severe first, then by weight.
func Rank(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(b.Weight, a.Weight))
	})
}

// UnmarshalText reads the name MarshalText writes.
func (s *Severity) UnmarshalText(b []byte) error {
	for i, n := range severityNames {
		if n == string(b) {
			*s = Severity(i)
			return nil
		}
	}
	return fmt.Errorf("findings: unknown severity %q", b)
}
