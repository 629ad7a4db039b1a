package agent

import (
	"time"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/metrics"
	"github.com/kscope-dev/kscope/internal/wire"
)

// The consumers view (issue 36): lag from the wire, end-to-end latency,
// fetch latency split, rebalances; at /consumers and as kscope_consumer_*
// gauges. Lag and end-to-end latency read the offsets and timestamps of
// the batches each fetch response returned.
func init() {
	registerView(viewSpec{Name: "consumers", Needs: wire.FetchExtent, New: newConsumersView})
}

// ConsumersConfig configures the agent's consumers view.
type ConsumersConfig struct {
	// Options: the lag thresholds of its findings.
	consumers.Options
	// Window is what the view forgets: consumers silent longer, older
	// rebalances (0: consumers.DefaultWindow).
	Window time.Duration
	// Top is how many (consumer, topic) pairs the gauges name (0:
	// metrics.DefaultTopConsumerSeries).
	Top int
}

func newConsumersView(cfg *Config) View {
	l := consumers.NewLive(cfg.Consumers.Options, cfg.Consumers.Window)
	return liveView[*consumers.Report]{live: l, collector: metrics.NewConsumersCollector(l, cfg.Consumers.Top)}
}
