package iotrace

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// clockOffset converts bpf_ktime_get_ns (CLOCK_MONOTONIC) to the wall
// clock (CLOCK_REALTIME), the clock of packet capture timestamps.
type clockOffset struct {
	// realMinusMono is CLOCK_REALTIME - CLOCK_MONOTONIC in nanoseconds.
	realMinusMono int64
	// uncertainty is half the shortest REALTIME-MONOTONIC-REALTIME read
	// window: the error of realMinusMono.
	uncertainty time.Duration
}

// measureClockOffset reads REALTIME, MONOTONIC, REALTIME several times
// (as bcc's tools do) and keeps the pair read in the shortest window,
// taking the midpoint of the two REALTIME reads.
func measureClockOffset() (clockOffset, error) {
	best := clockOffset{uncertainty: time.Hour}
	for range 16 {
		var r1, m, r2 unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME, &r1); err != nil {
			return clockOffset{}, fmt.Errorf("iotrace: clock_gettime(CLOCK_REALTIME): %w", err)
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &m); err != nil {
			return clockOffset{}, fmt.Errorf("iotrace: clock_gettime(CLOCK_MONOTONIC): %w", err)
		}
		if err := unix.ClockGettime(unix.CLOCK_REALTIME, &r2); err != nil {
			return clockOffset{}, fmt.Errorf("iotrace: clock_gettime(CLOCK_REALTIME): %w", err)
		}
		window := r2.Nano() - r1.Nano()
		if half := time.Duration(window / 2); half < best.uncertainty {
			best = clockOffset{realMinusMono: r1.Nano() + window/2 - m.Nano(), uncertainty: half}
		}
	}
	return best, nil
}

// wall converts a CLOCK_MONOTONIC time in nanoseconds to the wall clock.
func (c clockOffset) wall(monoNs uint64) time.Time {
	return time.Unix(0, int64(monoNs)+c.realMinusMono).UTC()
}
