package findings

import "github.com/kscope-dev/kscope/internal/clients"

// The clients view's findings: connection and metadata storms, requests
// the target release would reject, waste (clients.Rules).
func init() { register("clients", 40, clientFindings) }

// clientSeverity maps the views' severities (clients, consumers: the
// same three names).
func clientSeverity(s string) Severity {
	switch s {
	case clients.Alarm:
		return Alarm
	case clients.Warning:
		return Warning
	}
	return Note
}

// clientFindings passes on the clients view's findings, each with the
// command that shows the client's whole row.
func clientFindings(e *Evidence) []Finding {
	if e.Clients == nil {
		return nil
	}
	var out []Finding
	for _, cf := range e.Clients.Findings {
		f := Finding{Severity: clientSeverity(cf.Severity), Title: cf.Title, Evidence: cf.Evidence + " (rule " + cf.Rule + ")",
			Weight: cf.Weight}
		if e.Dir != "" {
			next := "kscope clients " + shellQuote(e.Dir)
			if e.Clients.Target != "" {
				next += " --target-version " + e.Clients.Target
			}
			f.Next = next + " (every client's protocol versions, producer and consumer settings)"
		}
		out = append(out, f)
	}
	return out
}
