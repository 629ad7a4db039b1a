package metrics

import (
	"bytes"
	"errors"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// checkGrafanaSchema decodes a dashboard strictly with Grafana's own
// dashboard schema (the Go types grafana-foundation-sdk generates from
// the schema Grafana validates dashboards against, with every core panel
// plugin's options): a missing required field, a wrong type or an
// unknown field anywhere is an error, and so is a value Validate rejects.
// A real Grafana is not available here (its module is refused as AGPL);
// this is stricter than Grafana's own loading, which fills defaults.
func checkGrafanaSchema(data []byte) error {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := d.UnmarshalJSONStrict(data); err != nil {
		// The generated code returns a typed nil on success.
		var be cog.BuildErrors
		if !errors.As(err, &be) || len(be) > 0 {
			return err
		}
	}
	return d.Validate()
}

func TestDashboardGrafanaSchema(t *testing.T) {
	data := readDashboard(t)
	if err := checkGrafanaSchema(data); err != nil {
		t.Errorf("the dashboard does not fit Grafana's schema:\n%v", err)
	}
	// Known no: the same check sees a field of the wrong type in a
	// panel's options, and a field the schema does not have.
	for _, bad := range []struct{ from, to string }{
		{`"showLegend": true`, `"showLegend": "yes"`},
		{`"gridPos"`, `"gridPosition"`},
	} {
		mutated := bytes.Replace(data, []byte(bad.from), []byte(bad.to), 1)
		if bytes.Equal(mutated, data) {
			t.Fatalf("%s not in the dashboard", bad.from)
		}
		if err := checkGrafanaSchema(mutated); err == nil {
			t.Errorf("%s → %s: not caught", bad.from, bad.to)
		}
	}
}
