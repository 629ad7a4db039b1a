package recording

import (
	"strings"
	"testing"
)

func TestMissingEvidence(t *testing.T) {
	full := SchedCounters{RunDelays: 10, ConnThreads: 2, MinRunDelayNs: 1e6, JVMPauses: 3, JVMPauseSource: "vm.log"}
	tests := []struct {
		name string
		meta Meta
		want []string // substrings, one per line, in order
	}{
		{"everything there", Meta{Sched: &full}, nil},
		{"a recording from before", Meta{}, []string{"no scheduling evidence"}},
		{"an agent's slow log says its own", Meta{SlowLog: &SlowLog{ThresholdMs: 50}}, nil},
		{"--sched=false", Meta{Sched: &SchedCounters{JVMPauses: 3, JVMPauseSource: "jfr"}}, []string{"no run-queue delays"}},
		{"the JVM's log refused", Meta{Sched: &SchedCounters{RunDelays: 1, MinRunDelayNs: 1e6, JVMPauseError: "jcmd: no such process"}},
			[]string{"no JVM pauses: jcmd: no such process"}},
		{"pauses off", Meta{Sched: &SchedCounters{RunDelays: 1, MinRunDelayNs: 1e6}}, []string{"no JVM pauses: not recorded"}},
		{"losses and a sampler error", Meta{Sched: &SchedCounters{RunDelays: 1, MinRunDelayNs: 1e6, JVMPauseSource: "jfr",
			ThrottleError: "no cpu controller", RunDelayRingbufDrops: 2, RunDelayStartFull: 1, ConnRingbufDrops: 4}},
			[]string{"no cgroup CPU throttling: no cpu controller", "3 run-queue delays lost", "4 connection threads lost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.meta.MissingEvidence()
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d lines like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d %q lacks %q", i, got[i], w)
				}
			}
		})
	}
}
