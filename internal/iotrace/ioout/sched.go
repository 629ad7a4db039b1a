package ioout

import (
	"fmt"
	"strconv"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
)

// RunDelayRow is a run-queue delay in the table's columns: the thread
// that waited, OP "run-delay", FILE the CPU, how it became runnable and
// the task that had the CPU until the thread got it.
func RunDelayRow(r *event.RunDelay) []string {
	return []string{timeOfDay(r.Start), timeOfDay(r.End), strconv.FormatFloat(r.LatencyMs, 'f', 3, 64),
		strconv.Itoa(r.TID), output.Escape(r.Thread), "run-delay", "-", "-", runDelayWhat(r)}
}

func runDelayWhat(r *event.RunDelay) string {
	how := "woken"
	if r.Preempted {
		how = "preempted"
	}
	return fmt.Sprintf("cpu%d %s, behind %s (pid %d tid %d)", r.CPU, how, output.Escape(r.HolderComm), r.HolderPID, r.HolderTID)
}

// ConnThreadRow is a connection's thread in the table's columns: START
// TIME when it was seen, TID and THREAD the thread receiving on it, OP
// "conn", FILE both ends.
func ConnThreadRow(c *event.ConnThread) []string {
	return []string{timeOfDay(c.Time), "-", "-", strconv.Itoa(c.TID), output.Escape(c.Thread), "conn", "-", "-", connWhat(c)}
}

func connWhat(c *event.ConnThread) string { return "client " + c.Client + " -> broker " + c.Broker }

func runDelayRecord(r *event.RunDelay) []string {
	return csvRecord(r.Start, r.End, r.LatencyMs, strconv.Itoa(r.TID), output.Escape(r.Thread), "run-delay", 0, -1,
		runDelayWhat(r), "", -1, "", "")
}

// connThreadRecord: start and end are the time it was seen, latency 0.
func connThreadRecord(c *event.ConnThread) []string {
	return csvRecord(c.Time, c.Time, 0, strconv.Itoa(c.TID), output.Escape(c.Thread), "conn", 0, -1, connWhat(c), "", -1, "", "")
}

// WakeupRow is a wake-up in the table's columns: START and END TIME the
// sleep, the thread that slept, OP "woken", FILE the thread that woke it.
func WakeupRow(u *event.Wakeup) []string {
	return []string{timeOfDay(u.Start), timeOfDay(u.End), strconv.FormatFloat(u.SleptMs, 'f', 3, 64),
		strconv.Itoa(u.TID), output.Escape(u.Thread), "woken", "-", "-", wakeupWhat(u)}
}

func wakeupWhat(u *event.Wakeup) string {
	if u.Timer {
		return "by its timeout"
	}
	return fmt.Sprintf("by %s (tid %d)", output.Escape(u.WakerThread), u.WakerTID)
}

func wakeupRecord(u *event.Wakeup) []string {
	return csvRecord(u.Start, u.End, u.SleptMs, strconv.Itoa(u.TID), output.Escape(u.Thread), "woken", 0, -1,
		wakeupWhat(u), "", -1, "", "")
}
