package findings

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/clients"
)

func TestClientFindings(t *testing.T) {
	storm := clients.Finding{Rule: "connection-storm", Severity: clients.Alarm, Title: "client id `x` opens 300 connections a minute", Evidence: "300 connections", Weight: 0.4}
	old := clients.Finding{Rule: "rejected-by-target", Severity: clients.Warning, Title: "client id `y` sends Produce v2: rejected by Kafka 4.0", Weight: 0.1}
	for _, c := range []struct {
		name  string
		e     Evidence
		want  []Severity
		next  string
		first string
	}{
		{name: "no clients view", e: Evidence{}},
		{name: "view without findings", e: Evidence{Clients: &clients.Report{}}},
		{name: "storm and upgrade", e: Evidence{Dir: "rec", Clients: &clients.Report{Target: "4.0", Findings: []clients.Finding{old, storm}}},
			want: []Severity{Alarm, Warning}, next: "kscope clients rec --target-version 4.0", first: "opens 300 connections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []Finding
			for _, f := range Collect(&c.e) {
				if f.Check == "clients" {
					got = append(got, f)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want severities %v", got, c.want)
			}
			for i, f := range got {
				if f.Severity != c.want[i] || !strings.HasPrefix(f.Next, c.next) {
					t.Errorf("finding %d: %v", i, f)
				}
			}
			if c.first != "" && !strings.Contains(got[0].Title, c.first) {
				t.Errorf("ranked first: %v", got[0])
			}
		})
	}
}
