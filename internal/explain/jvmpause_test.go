package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

func pause(typ, name string, a, b float64) *event.JVMPause {
	return &event.JVMPause{Kind: event.KindJVMPause, Start: at(a), End: at(b), LatencyMs: b - a, Type: typ, Name: name, Source: "vm.log"}
}

func vmDelay(tid int, thread string, a, b float64, holder string) *event.RunDelay {
	d := runDelay(tid, a, b, holder)
	d.Thread = thread
	return d
}

func TestJVMPauses(t *testing.T) {
	tests := []struct {
		name   string
		writes []*event.Write
		pauses []*event.JVMPause
		delays []*event.RunDelay
		req    *event.Request
		cause  string
		detail string
	}{
		{
			name:   "a GC pause over most of the request",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 10, 80)},
			req:    req(1, 0, 100),
			cause:  CauseGCPause,
			detail: "stood still for 70.0 ms of it: 1 pause(s), the longest 70.0 ms, Pause Young (Normal)",
		},
		{
			name:   "a pause before the request arrived counts only from its arrival",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Full", -500, 40)},
			req:    req(2, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "a safepoint that is no GC",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseSafepoint, "ICBufferFull", 10, 70)},
			req:    req(3, 0, 100),
			cause:  CauseSafepoint,
			detail: "ICBufferFull",
		},
		{
			name:   "a pause stops the write it overlaps: the pause is named",
			writes: []*event.Write{wr(11, 5, 95, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 10, 70)},
			req:    req(4, 0, 100),
			cause:  CauseGCPause,
		},
		{
			name:   "several short pauses add up",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 5, 25), pause(event.PauseGC, "Pause Young (Normal)", 30, 50), pause(event.PauseGC, "Pause Remark", 55, 70)},
			req:    req(5, 0, 100),
			cause:  CauseGCPause,
			detail: "3 pause(s)",
		},
		{
			name:   "pauses after the response are no cause",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 100, 300)},
			req:    req(6, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			name:   "GC and safepoint together, neither alone: the larger named",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 5, 35), pause(event.PauseSafepoint, "Deoptimize", 40, 65)},
			req:    req(7, 0, 100),
			cause:  CauseGCPause,
			detail: "together with safepoint",
		},
		{
			name:   "a pause its GC threads spent waiting for a CPU is starvation's",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 10, 80)},
			delays: []*event.RunDelay{vmDelay(31, "GC Thread#0", 12, 50, "hog"), vmDelay(32, "GC Thread#1", 40, 75, "hog")},
			req:    req(8, 0, 100),
			cause:  CauseCPUStarved,
			detail: "hog (pid 4242)",
		},
		{
			name:   "a GC thread's short wait leaves the pause the cause",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 10, 80)},
			delays: []*event.RunDelay{vmDelay(31, "GC Thread#0", 12, 17, "hog")},
			req:    req(9, 0, 100),
			cause:  CauseGCPause,
			detail: "Pause Young",
		},
		{
			// The holders cover 3 ms of a 60 ms wait (the CPU's last
			// run slices), all of it another process: starvation.
			name:   "holders that cover part of a wait judge it",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Remark", 10, 80)},
			delays: []*event.RunDelay{holders(vmDelay(31, "GC Thread#0", 12, 72, "hog"), event.RunHolder{PID: 7, Comm: "hog", Ms: 2}, event.RunHolder{PID: 8, Comm: "java", Ms: 1})},
			req:    req(13, 0, 100),
			cause:  CauseCPUStarved,
			detail: "hog (pid 7)",
		},
		{
			name:   "a GC worker waiting for another is the pause's own work",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Full", 10, 80)},
			delays: []*event.RunDelay{holders(vmDelay(31, "GC Thread#0", 12, 78, "GC Thread#1"), event.RunHolder{PID: 4242, Comm: "GC Thread#1", Ms: 66})},
			req:    req(11, 0, 100),
			cause:  CauseGCPause,
			detail: "Pause Full",
		},
		{
			name:   "a handler's wait inside a pause is the pause's",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Full", 10, 80)},
			delays: []*event.RunDelay{runDelay(11, 12, 85, "GC Thread#0")},
			req:    req(12, 0, 100),
			cause:  CauseGCPause,
			detail: "Pause Full",
		},
		{
			name:   "other JVM threads' waits during a pause do not make it starvation",
			writes: []*event.Write{wr(11, 90, 90.1, 100)},
			pauses: []*event.JVMPause{pause(event.PauseGC, "Pause Young (Normal)", 10, 80)},
			delays: []*event.RunDelay{vmDelay(33, "G1 Conc#0", 12, 78, "hog")},
			req:    req(10, 0, 100),
			cause:  CauseGCPause,
			detail: "Pause Young",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, tt.writes, tt.pauses, tt.delays), nil).Explain(tt.req)
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			if !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", f.Detail, tt.detail)
			}
			if f.Cause == CauseGCPause && len(f.Pauses) == 0 {
				t.Error("gc-pause without pause evidence")
			}
		})
	}
}
