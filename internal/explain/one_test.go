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
	f := ExplainOne(cfg, indexOf(t, writes), nil, slow, nil)
	if f.Cause != CauseSlowWrite {
		t.Fatalf("cause %s (%s), want slow-write", f.Cause, f.Detail)
	}
	behind := req(8, 0.5, 82, func(r *event.Request) { r.QueuedMs = 80.5; r.BrokerMs = 1; r.Partitions[0].Bytes = 300 })
	if g := ExplainOne(cfg, indexOf(t, writes), []*event.Request{slow}, behind, nil); g.Cause != CauseLockWait || g.QueuedBehind == nil || g.QueuedBehind.CorrelationID != 7 {
		t.Errorf("queued request: cause %s queued behind %+v (%s), want lock-wait behind 7", g.Cause, g.QueuedBehind, g.Detail)
	}
	if g := ExplainOne(cfg, indexOf(t, writes), nil, behind, nil); g.QueuedBehind != nil {
		t.Errorf("without its context: queued behind %+v", g.QueuedBehind)
	}
}

// TestExplainOneFollowers: with the followers' fetches in memory, an
// acks=all request's wait is measured by the fetch past its offset, as
// Run measures it from a recording; without them there is no sign of
// followers, and replication is not named (as for a recording without
// follower fetches).
func TestExplainOneFollowers(t *testing.T) {
	cfg := Config{Slow: 50 * time.Millisecond}
	writes := []*event.Write{wr(11, 1, 1.2, 100)}
	r := req(7, 0, 100, acksAll(40))
	fetches := []*event.Request{ffetch(2, 2, 80, 41), ffetch(1, 2, -5, 40), req(9, 0, 1)} // out of order, and a produce
	f := ExplainOne(cfg, indexOf(t, writes), nil, r, fetches)
	if f.Cause != CauseReplication || f.ReplicationFrom != ReplicationByFetch || len(f.Replication) != 1 || f.Replication[0].Replica != 2 {
		t.Fatalf("cause %s from %s, fetches %+v: %s", f.Cause, f.ReplicationFrom, f.Replication, f.Detail)
	}
	if g := ExplainOne(cfg, indexOf(t, writes), nil, r, nil); g.Cause == CauseReplication {
		t.Errorf("without fetches: %s from %q", g.Cause, g.ReplicationFrom)
	}
}
