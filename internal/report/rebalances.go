package report

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/grouphold"
)

// MaxExplainedRebalances bounds the rebalances whose coordinator time
// ExplainRebalances explains (the longest first): each is one explain of
// the recording.
const MaxExplainedRebalances = 5

// ExplainRebalances joins explain's causes to the consumers view: each
// rebalance in which the coordinator's own time was grouphold.SlowOwn or
// more (the longest MaxExplainedRebalances) gets the cause explain --api
// group gives its coordinator request in the recording in, and the
// report's findings are evaluated again with it (o: the view's options).
func ExplainRebalances(ctx context.Context, in explain.Input, opts explain.Options, rep *consumers.Report, o consumers.Options) error {
	var slow []int
	for i, rb := range rep.Rebalances {
		if rb.CoordinatorRequest != nil && rb.CoordinatorMs >= float64(grouphold.SlowOwn.Milliseconds()) {
			slow = append(slow, i)
		}
	}
	if len(slow) == 0 {
		return nil
	}
	slices.SortStableFunc(slow, func(a, b int) int {
		return cmp.Compare(rep.Rebalances[b].CoordinatorMs, rep.Rebalances[a].CoordinatorMs)
	})
	opts.API, opts.Top = explain.APIGroup, 1
	for _, i := range slow[:min(len(slow), MaxExplainedRebalances)] {
		rb := &rep.Rebalances[i]
		ref := rb.CoordinatorRequest
		opts.Request = &explain.RequestID{Client: ref.Client, CorrelationID: ref.CorrelationID}
		var found *explain.Finding
		out := explain.OutputFuncs{OnFinding: func(f *explain.Finding) error { found = f; return nil }}
		if err := explain.Run(ctx, []explain.Input{in}, opts, out); err != nil {
			return fmt.Errorf("explaining the coordinator's time in group %s's rebalance: %w", rb.Group, err)
		}
		if found != nil {
			rb.CoordinatorCause, rb.CoordinatorWhy = found.Cause, found.Detail
		}
	}
	rep.Findings = consumers.Evaluate(rep, o)
	return nil
}
