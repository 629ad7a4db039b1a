package explain

import (
	"slices"

	"github.com/kscope-dev/kscope/internal/event"
)

// ExplainOne explains one slow produce request from what a caller holds
// in memory rather than a recording on disk (an agent explaining each
// slow request as it completes): idx holds the events around it, before
// the requests ahead of it on its connection, oldest first (explained
// for context, as Run does, so that a request queued behind a slow one
// inherits its cause), and fetches the followers' Fetch requests around
// it (replica id set), by which its wait for followers is measured as
// from a recording. Without fetches there is no sign of followers and
// replication is not named (as for a recording without follower
// fetches). There is no count of requests in flight.
func ExplainOne(cfg Config, idx *Index, before []*event.Request, r *event.Request, fetches []*event.Request) *Finding {
	e := New(cfg, idx, nil)
	e.useFetches(fetches)
	return e.explainHeld(before, r)
}

// explainHeld explains r after the answered produce requests of before,
// for context.
func (e *Explainer) explainHeld(before []*event.Request, r *event.Request) *Finding {
	for _, b := range before {
		if b.APIKey == produceKey && b.Answered && !b.End.IsZero() {
			e.explain(b, false)
		}
	}
	return e.explain(r, true)
}

// useFetches gives the explainer in-memory follower fetches in place of a
// scan's: their positions are indices into fetches.
func (e *Explainer) useFetches(fetches []*event.Request) {
	var kept []*event.Request
	for _, f := range fetches {
		if f.APIKey == fetchKey && f.ReplicaID != nil && *f.ReplicaID >= 0 {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return
	}
	slices.SortStableFunc(kept, func(a, b *event.Request) int { return a.Arrival.Compare(b.Arrival) })
	e.fetches = make([]fetchRef, len(kept))
	for i, f := range kept {
		ref := fetchRef{pos: int64(i), arrival: f.Arrival.UnixNano(), client: f.Client, replica: *f.ReplicaID}
		if !f.End.IsZero() {
			ref.end = f.End.UnixNano()
		}
		e.fetches[i] = ref
	}
	e.followers = true
	e.readRequest = func(pos int64) (*event.Request, error) { return kept[pos], nil }
}
