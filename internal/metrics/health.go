package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Health is the agent's own state at one moment: what it sees, what it
// lost, and what is degraded. Counters are totals since the agent
// started, across capture restarts and broker restarts.
type Health struct {
	CaptureUp bool // the packet socket is open and reading
	TraceUp   bool // the tracer is attached to a broker
	BrokerPID int  // the traced broker; 0 while none

	Packets       int64 // packets read from the capture ring
	KernelDrops   int64 // packets the kernel dropped: the ring was full
	SkippedBytes  int64 // stream bytes lost at gaps or while resynchronising
	Gaps          int64 // holes in TCP streams
	DecodeErrors  int64 // request or response bodies that failed to decode
	BatchErrors   int64 // record batches that failed to decode
	Evicted       int64 // requests dropped from a full in-flight table
	IDsNotHeld    int64 // produce requests whose message ids were not kept for the slow log (memory bound)
	Connections   int   // TCP connections tracked now
	InFlight      map[string]int
	RingbufDrops  map[string]int64 // by ring buffer: writes, journal, waits, run_delays, conns
	Restarts      map[string]int64 // by component: capture reopened, broker re-attached
	SlowRequests  int64            // slow requests written to the slow-request log
	SlowDropped   int64            // slow requests not written: over the rate limit
	TracedEvents  int64            // events read from the tracer's ring buffers
	HeapBytes     uint64           // Go heap in use (also in go_memstats_*)
	SlowLogErrors int64            // failed writes of the slow-request log
	// TLSConnections count TLS connections by outcome: decrypted (at
	// their first record), handshake_only (at close),
	// decrypted_then_stopped, and no_keys, failed, not_tls, lost (when
	// their decryption stopped before any record decrypted).
	TLSConnections map[string]int64
}

// HealthCollector exports a Health read at every scrape (the
// node_exporter style: no state kept here, nothing to update).
type HealthCollector struct {
	read func() Health

	up, brokerPID, packets, kernelDrops, skipped, gaps, decodeErrors, batchErrors, evicted, idsNotHeld,
	connections, inFlight, ringbufDrops, restarts, slow, slowDropped, traced, slowLogErrors, tlsConns *prometheus.Desc
}

// NewHealthCollector returns a collector that calls read at each scrape.
func NewHealthCollector(read func() Health) *HealthCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "agent", name), help, labels, nil)
	}
	return &HealthCollector{
		read:          read,
		up:            d("up", "1 when the component works: capture (the packet socket reads), trace (attached to a broker).", "component"),
		brokerPID:     d("broker_pid", "The traced broker's pid; 0 while no broker is traced."),
		packets:       d("packets_total", "Packets read from the capture."),
		kernelDrops:   d("capture_drops_total", "Packets the kernel dropped because the capture ring was full."),
		skipped:       d("skipped_bytes_total", "TCP stream bytes lost at gaps or skipped while resynchronising on Kafka frames."),
		gaps:          d("stream_gaps_total", "Holes in TCP streams: lost segments, connections joined mid-stream."),
		decodeErrors:  d("decode_errors_total", "Request or response bodies of known APIs that failed to decode."),
		batchErrors:   d("batch_errors_total", "Record batches that failed to decode."),
		evicted:       d("evicted_requests_total", "Requests dropped from a connection's full in-flight table."),
		idsNotHeld:    d("message_ids_not_held_total", "Produce requests whose message ids were not read for the slow log: the record bytes held for them were at their bound."),
		connections:   d("connections", "TCP connections on the broker ports being tracked."),
		inFlight:      d("requests_in_flight", "Requests seen whose response has not been seen yet.", "api"),
		ringbufDrops:  d("ringbuf_drops_total", "Traced events lost because an eBPF ring buffer was full.", "ring"),
		restarts:      d("restarts_total", "Times a component started again: capture reopened, tracer attached to a new broker.", "component"),
		slow:          d("slow_requests_total", "Slow requests written to the slow-request log."),
		slowDropped:   d("slow_requests_dropped_total", "Slow requests not written to the log: more than its rate limit."),
		traced:        d("traced_events_total", "Events read from the tracer's ring buffers."),
		slowLogErrors: d("slow_log_errors_total", "Failed writes of the slow-request log."),
		tlsConns:      d("tls_connections_total", "TLS connections by outcome: decrypted (counted at their first decrypted record), handshake_only (closed during the handshake), decrypted_then_stopped (decrypted, then a gap no record could be found after or a record that did not decrypt), and those whose decryption stopped before any record decrypted: no_keys (no secrets for the session), failed (a wrong key or a suite not decrypted), not_tls (not TLS records), lost (a capture gap in the handshake). decrypted minus decrypted_then_stopped and the others are disjoint.", "outcome"),
	}
}

// Describe implements prometheus.Collector.
func (c *HealthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.brokerPID, c.packets, c.kernelDrops, c.skipped, c.gaps, c.decodeErrors,
		c.batchErrors, c.evicted, c.idsNotHeld, c.connections, c.inFlight, c.ringbufDrops, c.restarts, c.slow, c.slowDropped, c.traced, c.slowLogErrors, c.tlsConns} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *HealthCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.read()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.up, b2f(h.CaptureUp), "capture")
	gauge(c.up, b2f(h.TraceUp), "trace")
	gauge(c.brokerPID, float64(h.BrokerPID))
	counter(c.packets, h.Packets)
	counter(c.kernelDrops, h.KernelDrops)
	counter(c.skipped, h.SkippedBytes)
	counter(c.gaps, h.Gaps)
	counter(c.decodeErrors, h.DecodeErrors)
	counter(c.batchErrors, h.BatchErrors)
	counter(c.evicted, h.Evicted)
	counter(c.idsNotHeld, h.IDsNotHeld)
	gauge(c.connections, float64(h.Connections))
	for _, api := range sortedKeys(h.InFlight) {
		gauge(c.inFlight, float64(h.InFlight[api]), api)
	}
	for _, ring := range sortedKeys(h.RingbufDrops) {
		counter(c.ringbufDrops, h.RingbufDrops[ring], ring)
	}
	for _, comp := range sortedKeys(h.Restarts) {
		counter(c.restarts, h.Restarts[comp], comp)
	}
	counter(c.slow, h.SlowRequests)
	counter(c.slowDropped, h.SlowDropped)
	counter(c.traced, h.TracedEvents)
	counter(c.slowLogErrors, h.SlowLogErrors)
	for _, outcome := range sortedKeys(h.TLSConnections) {
		counter(c.tlsConns, h.TLSConnections[outcome], outcome)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
