package findings

// The consumers view's findings: consumers behind in time, rebalances,
// consumers that never commit (consumers.Rules).
func init() { register("consumers", 45, consumerFindings) }

// consumerFindings passes on the consumers view's findings, each with the
// command that shows the whole view.
func consumerFindings(e *Evidence) []Finding {
	if e.Consumers == nil {
		return nil
	}
	var out []Finding
	for _, cf := range e.Consumers.Findings {
		f := Finding{Severity: clientSeverity(cf.Severity), Title: cf.Title, Evidence: cf.Evidence + " (rule " + cf.Rule + ")", Weight: cf.Weight}
		if e.Dir != "" {
			f.Next = "kscope consumers " + shellQuote(e.Dir) + " (every consumer's partitions, every rebalance's phases)"
		}
		out = append(out, f)
	}
	return out
}
