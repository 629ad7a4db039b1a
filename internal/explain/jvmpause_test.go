package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

func pause(typ, name string, a, b float64) *event.JVMPause {
	return &event.JVMPause{Kind: event.KindJVMPause, Start: at(a), End: at(b), LatencyMs: b - a, Type: typ, Name: name, Source: "vm.log"}
}

func TestJVMPauses(t *testing.T) {
	tests := []struct {
		name   string
		writes []*event.Write
		pauses []*event.JVMPause
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := NewIndex()
			for _, w := range tt.writes {
				idx.AddWrite(w)
			}
			for _, p := range tt.pauses {
				idx.AddJVMPause(p)
			}
			f := New(Config{}, idx, nil).Explain(tt.req)
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
