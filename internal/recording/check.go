package recording

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/use"
)

// How far outside a recording's window an event may lie and still be
// true.
const (
	// RequestSlack: packets are captured between the start and the end
	// meta.json records, so a request is timed within them, give or take
	// the order of the clock readings.
	RequestSlack = time.Second
	// EvidenceSlack: the tracer, the samplers and the JVM's log start
	// before the capture (a JFR or jcmd attach may take half a minute
	// each) and are stopped after it.
	EvidenceSlack = 2 * time.Minute
)

// Window is when a recording's events can have happened: its start and
// end, as meta.json says. A zero bound is open: events before a slow
// log's segment began, or the end of a recording that never finished.
type Window struct {
	Start, End time.Time
}

// Window is the recording's window. An agent's slow log keeps the
// requests and I/O that came before a slow request, from before its
// segment began, so its start is open.
func (m *Meta) Window() Window {
	w := Window{Start: m.Start, End: m.End}
	if m.SlowLog != nil {
		w.Start = time.Time{}
	}
	return w
}

// ImplausibleError is what a line's handler returns for an event whose
// values cannot be true (a negative latency, a time outside the
// recording): a Reader with a Tally leaves the line out of everything it
// reads and counts it; without one it is the read's error.
type ImplausibleError struct {
	Reason string
}

func (e *ImplausibleError) Error() string { return "impossible value: " + e.Reason }

func implausible(format string, args ...any) error {
	return &ImplausibleError{Reason: fmt.Sprintf(format, args...)}
}

// CheckRequest says why a request's times and latency cannot be true, or
// returns nil: an answered request without its arrival and end, a
// latency that is negative, not a number, longer than the recording or
// not its end less its arrival, or a time outside the window. An
// unanswered request has only its arrival checked.
func (w Window) CheckRequest(arrival, end time.Time, latencyMs float64, answered bool) error {
	if answered {
		if arrival.IsZero() || end.IsZero() {
			return implausible("answered without its arrival and end times")
		}
		if err := w.checkDuration("latency_ms", latencyMs, arrival, end, RequestSlack, true); err != nil {
			return err
		}
		if err := w.outside("end", end, RequestSlack); err != nil {
			return err
		}
	}
	return w.outside("arrival", arrival, RequestSlack)
}

// checkTimes says why an event of the iotrace streams cannot be true,
// from its times (event.Times), or returns nil.
func (w Window) checkTimes(t event.Times) error {
	switch {
	case t.Instant:
		return w.outside(t.Field, t.Start, EvidenceSlack)
	case t.OwnClock:
		// JVM pauses come from the JVM's own log, which may cover
		// hours around the recording: not held to the window.
		w = Window{}
	}
	return w.checkSpan(t.Field, t.Start, t.End, t.Ms, t.Length)
}

// checkEvent says why an event of the other evidence files cannot be
// true, or returns nil. Lock waits are not held to the window: they
// come from a JFR file, which may cover hours around the recording.
func (w Window) checkEvent(ev any) error {
	switch ev := ev.(type) {
	case *event.LockWait:
		return Window{}.checkSpan("latency_ms", ev.Start, ev.End, ev.LatencyMs, true)
	case *use.Sample:
		if err := finite("interval_s", ev.IntervalS); err != nil {
			return err
		}
		return w.outside("time", ev.Time, EvidenceSlack)
	}
	return nil
}

// checkSpan checks an event from start to end whose field is its length
// in milliseconds (isSpan) or some other non-negative time.
func (w Window) checkSpan(field string, start, end time.Time, ms float64, isSpan bool) error {
	if err := w.checkDuration(field, ms, start, end, EvidenceSlack, isSpan); err != nil {
		return err
	}
	if err := w.outside("start", start, EvidenceSlack); err != nil {
		return err
	}
	return w.outside("end", end, EvidenceSlack)
}

// checkDuration checks a time in milliseconds of an event from start to
// end: finite, not negative, not longer than the window, and, when it is
// the event's length (isSpan), given (hand-made files leave it 0) and
// both times are known, the time between them within a millisecond and
// a percent. An end before the start is refused too.
func (w Window) checkDuration(field string, ms float64, start, end time.Time, slack time.Duration, isSpan bool) error {
	if err := finite(field, ms); err != nil {
		return err
	}
	if !w.Start.IsZero() && !w.End.IsZero() && ms > millis(w.End.Sub(w.Start)+2*slack) {
		return implausible("%s %g is longer than the recording (%v)", field, ms, w.End.Sub(w.Start).Round(time.Millisecond))
	}
	if start.IsZero() || end.IsZero() {
		return nil
	}
	if end.Before(start) {
		return implausible("end %s is before start %s", stamp(end), stamp(start))
	}
	if between := millis(end.Sub(start)); isSpan && ms != 0 && math.Abs(ms-between) > 1+ms/100 {
		return implausible("%s %g is not the %g ms between start and end", field, ms, between)
	}
	return nil
}

func finite(field string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return implausible("%s is %g", field, v)
	case v < 0:
		return implausible("%s %g is negative", field, v)
	}
	return nil
}

// outside says when t lies outside the window widened by slack; nil when
// it does not (or the window is open on that side).
func (w Window) outside(what string, t time.Time, slack time.Duration) error {
	if !w.Start.IsZero() && t.Before(w.Start.Add(-slack)) {
		return implausible("%s %s is before the recording's start %s", what, stamp(t), stamp(w.Start))
	}
	if !w.End.IsZero() && t.After(w.End.Add(slack)) {
		return implausible("%s %s is after the recording's end %s", what, stamp(t), stamp(w.End))
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// isImplausible reports whether err is an ImplausibleError, and its
// reason.
func isImplausible(err error) (string, bool) {
	var ie *ImplausibleError
	if errors.As(err, &ie) {
		return ie.Reason, true
	}
	return "", false
}
