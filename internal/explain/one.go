package explain

import "github.com/kscope-dev/kscope/internal/event"

// ExplainOne explains one slow produce request from what a caller holds
// in memory rather than a recording on disk (an agent explaining each
// slow request as it completes): idx holds the events around it, before
// the requests ahead of it on its connection, oldest first (explained
// for context, as Run does, so that a request queued behind a slow one
// inherits its cause). Without the recording's other requests there are
// no follower fetches to match (replication is measured by the gap to the
// response) and no count of requests in flight.
func ExplainOne(cfg Config, idx *Index, before []*event.Request, r *event.Request) *Finding {
	e := New(cfg, idx, nil)
	for _, b := range before {
		if b.APIKey == produceKey && b.Answered && !b.End.IsZero() {
			e.explain(b, false)
		}
	}
	return e.explain(r, true)
}
