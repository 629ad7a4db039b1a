package recorder

import (
	"context"
	"path/filepath"
	"time"

	"github.com/kscope-dev/kscope/internal/cgroupcpu"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/jvmlog"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
)

// schedSources are record's sources of scheduling evidence beside the
// tracer's run-queue delays and connection threads: the sampler of the
// broker's cgroup CPU throttling, and the JVM's log of its pauses (when
// the pauses do not come from a JFR recording). Both end with the
// recording; their counters go into meta.json's sched section.
type schedSources struct {
	counters *recording.SchedCounters

	throttleDone  chan struct{}
	throttleStats cgroupcpu.Stats
	throttleErr   error

	vmlog     *jvmlog.Session
	vmlogPath string
}

// startSchedSources starts the throttle sampler and, unless the pauses
// come from JFR (jfrPath set) or are not wanted, turns on the JVM's
// logging of its GC and safepoint pauses into the recording. A source
// that cannot start is noted (on stderr and in the counters), never
// fatal: the recording is still worth having without it.
func startSchedSources(ctx context.Context, o *Options, jfrPath string, rec *recording.Writer) *schedSources {
	pid, throttle, jvmPauses := o.PID, o.Sched, o.JVMPauses
	s := &schedSources{counters: &recording.SchedCounters{}, throttleDone: make(chan struct{})}
	go func() {
		defer close(s.throttleDone)
		if throttle {
			s.throttleStats, s.throttleErr = cgroupcpu.Run(ctx, pid, cgroupcpu.DefaultInterval, rec.Throttle)
		}
	}()
	if !jvmPauses || jfrPath != "" {
		return s
	}
	s.vmlogPath = filepath.Join(o.Out, recording.JVMLogFile)
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := jvmlog.Start(jctx, pid, s.vmlogPath)
	if err != nil {
		s.counters.JVMPauseError = err.Error()
		o.notef("no JVM pauses: %s", output.Escape(err.Error()))
		return s
	}
	s.vmlog = sess
	return s
}

// stop waits for the sampler, turns the JVM's logging off again, reads
// the pauses of the JVM log or of the JFR file at jfrPath into rec, and
// returns the counters with the tracer's st.
func (s *schedSources) stop(st iotrace.Stats, runqMin time.Duration, jfrPath string, rec *recording.Writer) (*recording.SchedCounters, error) {
	<-s.throttleDone
	c := s.counters
	c.RunDelays, c.RunDelayRingbufDrops, c.RunDelayStartFull = int64(st.RunDelayEvents), int64(st.RunDelayRingbufDrops), int64(st.RunDelayStartFull)
	c.MinRunDelayNs, c.Wakeups = int64(runqMin), int64(st.WakeupEvents)
	c.ConnThreads, c.ConnRingbufDrops = int64(st.ConnEvents), int64(st.ConnRingbufDrops)
	c.Throttles, c.ThrottleSamples, c.Cgroups = s.throttleStats.Throttles, s.throttleStats.Samples, s.throttleStats.Cgroups
	if s.throttleErr != nil {
		c.ThrottleError = s.throttleErr.Error()
	}

	count := func(p *event.JVMPause) error {
		c.JVMPauses++
		return rec.JVMPause(p)
	}
	var err error
	switch {
	case jfrPath != "":
		c.JVMPauseSource = "jfr"
		_, err = jfr.ReadPauses(jfrPath, count)
	case s.vmlog != nil:
		c.JVMPauseSource = "vm.log"
		jctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = s.vmlog.Stop(jctx)
		cancel()
		if err == nil {
			_, err = jvmlog.ReadPauses(s.vmlogPath, count)
		}
	}
	if err != nil {
		c.JVMPauseError = err.Error()
	}
	return c, err
}
