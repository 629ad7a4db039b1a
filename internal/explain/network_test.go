package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestNetwork(t *testing.T) {
	tests := []struct {
		name   string
		writes []*event.Write
		req    *event.Request
		cause  string
	}{
		{
			// First byte at 0, last at 80: the broker answered 20 ms later.
			name:   "bytes slow to arrive",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(1, 0, 100, func(r *event.Request) { r.BrokerMs = 20; r.RequestBytes = 1 << 20 }),
			cause:  CauseNetwork,
		},
		{
			// Queued 70 ms behind the previous request while its bytes
			// arrived: the arrival cost nothing.
			name:   "arrival hidden by the queue",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(2, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 70, 20 }),
			cause:  CauseUnexplained,
		},
		{
			name:   "a short arrival",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(3, 0, 100, func(r *event.Request) { r.BrokerMs = 70 }),
			cause:  CauseUnexplained,
		},
		{
			name:   "slow arrival and a slow write add up",
			writes: []*event.Write{wr(11, 40, 70, 100)},
			req:    req(4, 0, 100, func(r *event.Request) { r.BrokerMs = 65 }),
			cause:  CauseNetwork,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := NewIndex()
			for _, w := range tt.writes {
				idx.AddWrite(w)
			}
			f := New(Config{}, idx, nil).Explain(tt.req)
			if f.Cause != tt.cause {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			if f.Cause == CauseNetwork && !strings.Contains(f.Detail, "to arrive") {
				t.Errorf("detail %q", f.Detail)
			}
		})
	}
}
