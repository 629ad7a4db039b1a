package report

import (
	"context"
	"fmt"
	"time"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/grouphold"
)

// ExplainRebalances joins explain's causes to the consumers view: each
// rebalance in which the coordinator's own time was grouphold.SlowOwn or
// more gets the cause explain --api group gives its coordinator request
// in the recording in, and the report's findings are evaluated again
// with it (o: the view's options). One explain of the recording serves
// every rebalance: the slow group requests it explains are those whose
// own part is SlowOwn or more, as each such rebalance's request is.
func ExplainRebalances(ctx context.Context, in explain.Input, opts explain.Options, rep *consumers.Report, o consumers.Options) error {
	type key struct {
		client  string
		corr    int32
		arrival int64
	}
	want := map[key]*consumers.Rebalance{}
	for i := range rep.Rebalances {
		rb := &rep.Rebalances[i]
		if ref := rb.CoordinatorRequest; ref != nil && rb.CoordinatorMs >= float64(grouphold.SlowOwn/time.Millisecond) {
			want[key{ref.Client, ref.CorrelationID, ref.Arrival.UnixNano()}] = rb
		}
	}
	if len(want) == 0 {
		return nil
	}
	opts.API, opts.Top, opts.Request = explain.APIGroup, 1, nil
	opts.Slow, opts.PercentileGiven = grouphold.SlowOwn, false
	out := explain.OutputFuncs{OnFinding: func(f *explain.Finding) error {
		// A request is named by its arrival too: a client port reused
		// by a later connection starts its correlation ids again.
		if rb := want[key{f.Client, f.CorrelationID, f.Arrival.UnixNano()}]; rb != nil {
			rb.CoordinatorCause, rb.CoordinatorWhy = f.Cause, f.Detail
		}
		return nil
	}}
	if err := explain.Run(ctx, []explain.Input{in}, opts, out); err != nil {
		return fmt.Errorf("explaining the coordinator's time in rebalances: %w", err)
	}
	rep.Findings = consumers.Evaluate(rep, o)
	return nil
}
