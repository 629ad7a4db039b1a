package agent

import (
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
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

func newClientsView(cfg *Config) View {
	l := clients.NewLive(cfg.Clients.Options, cfg.Clients.Window)
	return liveView[*clients.Report]{live: l, collector: metrics.NewClientsCollector(l, cfg.Clients.Top)}
}
