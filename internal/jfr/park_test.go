package jfr

import (
	"testing"

	"github.com/grafana/jfr-parser/parser/types"
)

func TestUntimedPark(t *testing.T) {
	const none = uint64(1) << 63
	tests := []struct {
		timeout, until uint64
		want           bool
	}{
		{none, none, true},      // LockSupport.park: a lock or condition
		{0, 0, true},            // as some JDKs write it
		{300_000_000, 0, false}, // parkNanos(300 ms): a queue poll
		{none, 1_700_000_000_000, false},
	}
	for _, tt := range tests {
		if got := untimedPark(&types.ThreadPark{Timeout: tt.timeout, Until: tt.until}); got != tt.want {
			t.Errorf("timeout %d until %d: %v", tt.timeout, tt.until, got)
		}
	}
}
