// Package jvmlog gives kscope the stop-the-world pauses of a running JVM
// (a Kafka broker) from the JVM's own unified logging, as event.JVMPause
// values: every safepoint, with the garbage collection it ran, if any, and
// the time it took to stop the threads. A produce request that waited
// through a 40 ms full GC is explained by it; a JFR recording gives the
// same pauses (internal/jfr's ReadPauses) when one is running anyway.
//
//   - Start(ctx, pid, path) adds a log output to the running JVM with jcmd
//     VM.log: the gc and safepoint tags at info level into path, with
//     decorators precise enough to place each line on the wall clock.
//   - Session.Stop(ctx) removes that output again, and only that one: the
//     outputs the operator configured (Kafka's start script logs gc* to
//     kafkaServer-gc.log) are left as they were, which Stop checks.
//   - ReadPauses(path, fn) parses such a file (or any -Xlog file with a
//     wall-clock decoration) into JVMPauses.
//
// # Lines
//
// Start asks for the decorators utctime,timenanos,level,tags:
//
//	[2026-11-25T13:38:04.418+0000][241325986729ns][info][gc       ] GC(16) Pause Full (Diagnostic Command) 179M->157M(265M) 35.257ms
//	[2026-11-25T13:38:04.418+0000][241326211374ns][info][safepoint] Safepoint "G1CollectFull", Time since last: 768315074 ns, Reaching safepoint: 14636 ns, Cleanup: 23501 ns, At safepoint: 35512935 ns, Total: 35551072 ns
//
// Both are written when the pause ends, so a pause ends at its line's time
// and starts Total (or the GC's duration) before. utctime is the wall
// clock in whole milliseconds; timenanos is the JVM's monotonic clock in
// nanoseconds; ReadPauses fits the offset between them over the whole
// file (clock.go), which places lines on the wall clock to a few
// microseconds (Stats.Precision says how well).
//
// # Merging
//
// A GC pause runs inside a safepoint (G1CollectForAllocation,
// G1CollectFull, G1PauseRemark, GenCollectForAllocation, ...), and its gc
// line comes just before the safepoint's line. A safepoint whose span
// holds GC pause lines becomes one JVMPause of Type event.PauseGC with the
// safepoint's start and end (the true stop-the-world span, reaching the
// safepoint included, in ReachMs) and the GC's Name and Cause ("Pause
// Young (Normal)", "G1 Evacuation Pause"; the longest GC's when a
// safepoint ran several). A safepoint without a GC line is a PauseGC
// named after its operation when that operation is a collection
// (event.IsGCOperation), else a PauseSafepoint ("Cleanup", "ICBufferFull",
// "RedefineClasses"...). A GC pause line that no safepoint line
// holds (a file without safepoint lines) is a PauseGC of its own.
//
// # Hostile input
//
// A log file is untrusted: lines are read at most MaxLine bytes at a
// time, names are printable ASCII of bounded length, numbers are checked
// for range, and memory stays bounded whatever the file holds. Lines that
// do not parse are counted in Stats, not fatal; only I/O errors are.
package jvmlog

import "github.com/kscope-dev/kscope/internal/event"

// Source is the JVMPause.Source of the pauses ReadPauses reads.
const Source = "vm.log"

// UnknownOperation names a safepoint whose line does not name its VM
// operation (JDK 11 and 12 print only the times at info level).
const UnknownOperation = event.UnknownVMOperation
