package explain

import (
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestExplainOne: a request explained alone from in-memory events gets
// the cause Run gives it, and one queued behind it inherits that cause
// from the request ahead passed as context.
func TestExplainOne(t *testing.T) {
	cfg := Config{Slow: 50 * time.Millisecond}
	writes := []*event.Write{wr(11, 1, 80, 100)}
	slow := req(7, 0, 81)
	f := ExplainOne(cfg, indexOf(t, writes), nil, slow)
	if f.Cause != CauseSlowWrite {
		t.Fatalf("cause %s (%s), want slow-write", f.Cause, f.Detail)
	}
	behind := req(8, 0.5, 82, func(r *event.Request) { r.QueuedMs = 80.5; r.BrokerMs = 1; r.Partitions[0].Bytes = 300 })
	if g := ExplainOne(cfg, indexOf(t, writes), []*event.Request{slow}, behind); g.Cause != CauseLockWait || g.QueuedBehind == nil || g.QueuedBehind.CorrelationID != 7 {
		t.Errorf("queued request: cause %s queued behind %+v (%s), want lock-wait behind 7", g.Cause, g.QueuedBehind, g.Detail)
	}
	if g := ExplainOne(cfg, indexOf(t, writes), nil, behind); g.QueuedBehind != nil {
		t.Errorf("without its context: queued behind %+v", g.QueuedBehind)
	}
}
