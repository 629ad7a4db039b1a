package agent

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestViewsSwitch: the views --views names are fed, exported and served;
// the others have no series, a 404 saying they are off at their path, no
// link on the index page, and the decoder skips the fields only they read
// (unless the slow log keeps every field).
func TestViewsSwitch(t *testing.T) {
	const allLinks = `<a href="/metrics">/metrics</a> <a href="/healthz">/healthz</a> <a href="/clients">/clients</a> <a href="/consumers">/consumers</a></p>`
	tests := []struct {
		name     string
		views    []string
		slowLog  bool
		on       map[string]bool // by view
		skip     wire.Extras
		indexHas string
	}{
		{"default: all", nil, false, map[string]bool{"clients": true, "consumers": true}, 0, allLinks},
		{"none", []string{ViewsNone}, false, nil, wire.AllExtras, `<a href="/healthz">/healthz</a></p>`},
		{"empty list: none", []string{}, false, nil, wire.AllExtras, `<a href="/healthz">/healthz</a></p>`},
		{"consumers only", []string{"consumers"}, false, map[string]bool{"consumers": true}, wire.ProducerHeaders,
			`<a href="/healthz">/healthz</a> <a href="/consumers">/consumers</a></p>`},
		{"clients only", []string{"clients"}, false, map[string]bool{"clients": true}, wire.FetchExtent,
			`<a href="/healthz">/healthz</a> <a href="/clients">/clients</a></p>`},
		{"both, named", []string{"consumers", "clients"}, false, map[string]bool{"clients": true, "consumers": true}, 0, allLinks},
		{"none with the slow log: every field kept", []string{ViewsNone}, true, nil, 0, `<a href="/healthz">/healthz</a></p>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Wire: wire.Config{Ports: []uint16{9092}}, NoTrace: true, Identity: Identity{BrokerID: "1", ClusterID: "c"}, Views: tt.views}
			if tt.slowLog {
				cfg.SlowLog = SlowLogConfig{Dir: t.TempDir()}
			}
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if a.cfg.Wire.Skip != tt.skip {
				t.Errorf("decoder skips %v, want %v", a.cfg.Wire.Skip, tt.skip)
			}
			feedViews(a)
			metricsText := get(t, a, "/metrics", 200)
			for _, v := range []struct{ name, series string }{{"clients", "kscope_client_requests_per_second{"}, {"consumers", "kscope_consumer_lag_seconds{"}} {
				if got := strings.Contains(metricsText, v.series); got != tt.on[v.name] {
					t.Errorf("%s series in /metrics: %v, want %v", v.series, got, tt.on[v.name])
				}
				if tt.on[v.name] {
					if body := get(t, a, "/"+v.name, 200); !strings.HasPrefix(body, "{") {
						t.Errorf("/%s: %s", v.name, body)
					}
				} else if body := get(t, a, "/"+v.name, 404); !strings.Contains(body, "the "+v.name+" view is off (kscope agent --views)") {
					t.Errorf("/%s off: %q", v.name, body)
				}
			}
			if index := get(t, a, "/", 200); !strings.Contains(index, tt.indexHas) {
				t.Errorf("index page %q lacks %q", index, tt.indexHas)
			}
		})
	}
}

// TestUnknownView: a view no file registers is refused, naming those
// that are; none goes alone.
func TestUnknownView(t *testing.T) {
	for _, tt := range []struct {
		views []string
		want  string
	}{
		{[]string{"producers"}, `unknown view "producers" (known: clients, consumers, or none)`},
		{[]string{"clients", "nope"}, `unknown view "nope" (known: clients, consumers, or none)`},
		{[]string{"none", "clients"}, "none goes alone"},
	} {
		_, err := New(Config{Wire: wire.Config{Ports: []uint16{9092}}, NoTrace: true, Identity: Identity{BrokerID: "1", ClusterID: "c"}, Views: tt.views})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("views %q: err %v, want %q", tt.views, err, tt.want)
		}
	}
}

// feedViews gives the agent a produce request of a client and a fetch of
// a consumer 40 s behind.
func feedViews(a *Agent) {
	now := time.Now()
	a.onRequest(&event.Request{Arrival: now, Client: "10.0.0.5:4000", Broker: "10.0.0.1:9092",
		APIKey: 0, API: "Produce", ClientID: "billing", Answered: true})
	off, last, hwm := int64(0), int64(9), int64(500)
	ts := now.Add(-40 * time.Second).UnixMilli()
	replica := int32(-1)
	a.onRequest(&event.Request{Arrival: now, End: now, Client: "10.0.0.6:4001", Broker: "10.0.0.1:9092", APIKey: 1, API: "Fetch", ClientID: "etl",
		Answered: true, ReplicaID: &replica, Partitions: []event.Partition{{Topic: "orders", FetchOffset: &off, FirstOffset: &off,
			LastOffset: &last, HighWatermark: &hwm, FirstTimestamp: &ts, Bytes: 1000}}})
}

// get serves path and checks its status.
func get(t *testing.T, a *Agent, path string, status int) string {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Code != status {
		t.Errorf("%s: status %d, want %d: %s", path, rec.Code, status, rec.Body)
	}
	return rec.Body.String()
}
