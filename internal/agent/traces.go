package agent

import (
	"context"

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
// lock: the capture and the tracer go on meanwhile. cfg.Slow is the slow
// log's threshold, which kept the requests.
func explainSlow(cfg explain.Config, x *traceexport.Exporter, jobs []slowJob) {
	opts := explain.Options{Config: cfg}
	out := explain.OutputFuncs{OnFinding: func(f *explain.Finding) error { x.Finding(f); return nil }}
	for _, j := range jobs {
		idx := explain.NewIndex()
		h := idx.Handlers()
		for _, ev := range j.events {
			_ = h.Handle(ev)
		}
		if j.conn != nil {
			_ = h.ConnThread(j.conn)
		}
		in := explain.Input{Index: idx, Held: &explain.HeldRequest{Request: j.r, Before: j.before, Fetches: j.fetches}}
		// Nothing to fail: the evidence is in memory, and out takes all.
		_ = explain.Run(context.Background(), []explain.Input{in}, opts, out)
	}
}
