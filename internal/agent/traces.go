package agent

import (
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/traceexport"
)

// slowJob is what explaining one slow request needs, taken from the slow
// log when the request is written: the request, the requests ahead of it
// on its connection (oldest first), the traced events around it, the
// thread serving its connection and the followers' fetches around it.
type slowJob struct {
	r      *event.Request
	before []*event.Request
	events []any
	conn   *event.ConnThread
	// fetches are the followers' fetches around it.
	fetches []*event.Request
}

// explainSlow explains each slow request of jobs from its own events and
// exports the explanation as a trace. It runs outside the slow log's
// lock: the capture and the tracer go on meanwhile.
func explainSlow(cfg explain.Config, x *traceexport.Exporter, jobs []slowJob) {
	for _, j := range jobs {
		idx := explain.NewIndex()
		h := idx.Handlers()
		for _, ev := range j.events {
			_ = h.Handle(ev)
		}
		if j.conn != nil {
			_ = h.ConnThread(j.conn)
		}
		x.Finding(explain.ExplainOne(cfg, idx, j.before, j.r, j.fetches))
	}
}
