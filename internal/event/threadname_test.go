package event

import "testing"

func TestThreadNames(t *testing.T) {
	tests := []struct {
		name          string
		stw, handlers bool
	}{
		{"VM Thread", true, false},
		{"GC Thread#3", true, false},
		{"G1 Conc#0", false, false},
		{"data-plane-kafk", false, true}, // a handler's or a network thread's comm
		{"data-plane-kafka-request-handler-2", false, true},
		{"kafka-request-h", false, true},
		{"kafka-scheduler", false, false},
		{"kafka-1-raft-io", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := IsStopTheWorldThread(tt.name); got != tt.stw {
			t.Errorf("IsStopTheWorldThread(%q) = %v", tt.name, got)
		}
		if got := MaybeRequestHandler(tt.name); got != tt.handlers {
			t.Errorf("MaybeRequestHandler(%q) = %v", tt.name, got)
		}
	}
}
