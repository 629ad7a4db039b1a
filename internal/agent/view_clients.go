package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/metrics"
	"github.com/kscope-dev/kscope/internal/wire"
)

// The clients view (issue 35): who sends what, with which software and
// settings, and what a target release would reject, over the last whole
// window; at /clients and as kscope_client_* gauges. Its producer rows
// read the produce requests' batch headers.
func init() {
	registerView(viewSpec{Name: "clients", Needs: wire.ProducerHeaders, New: newClientsView})
}

// ClientsConfig configures the agent's clients view.
type ClientsConfig struct {
	// Options: the target release requests are checked against.
	clients.Options
	// Window is how long each view covers (0: clients.DefaultWindow).
	Window time.Duration
	// Top is how many clients the gauges name (0:
	// metrics.DefaultTopClientRows).
	Top int
}

type clientsView struct {
	live *clients.Live
	top  int
}

func newClientsView(cfg *Config) View {
	return &clientsView{live: clients.NewLive(cfg.Clients.Options, cfg.Clients.Window), top: cfg.Clients.Top}
}

func (v *clientsView) Add(r *event.Request) { v.live.Add(r) }

func (v *clientsView) Collector() prometheus.Collector {
	return metrics.NewClientsCollector(v.live, v.top)
}

func (v *clientsView) Report(now time.Time) any { return v.live.Report(now) }
