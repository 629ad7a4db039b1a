package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/clients"
)

// ClientsCollector exports the clients view of the agent (clients.Live) as Prometheus gauges over its window: per
// client (the top N by requests, the rest summed as client_id "other"),
// its request rate, connections a minute, Metadata rate and the requests
// a target release would reject; per rule, the findings. Series stay
// bounded on a cluster with any number of clients.
type ClientsCollector struct {
	live *clients.Live
	top  int
	now  func() time.Time

	clients, requests, connections, metadata, allTopics, rejected, findings *prometheus.Desc
}

// DefaultTopClientRows is the clients named in the metrics by default.
const DefaultTopClientRows = 20

// NewClientsCollector returns a collector of live's view naming top clients (0:
// DefaultTopClientRows).
func NewClientsCollector(live *clients.Live, top int) *ClientsCollector {
	if top <= 0 {
		top = DefaultTopClientRows
	}
	labels := []string{"client_id", "address", "principal", "software"}
	return &ClientsCollector{live: live, top: top, now: time.Now,
		clients:     prometheus.NewDesc("kscope_clients", "Clients seen in the clients window (address, principal, client id).", nil, nil),
		requests:    prometheus.NewDesc("kscope_client_requests_per_second", "A client's requests a second over the clients window.", labels, nil),
		connections: prometheus.NewDesc("kscope_client_connections_per_minute", "Connections a client opened a minute over the clients window.", labels, nil),
		metadata:    prometheus.NewDesc("kscope_client_metadata_requests_per_second", "A client's Metadata requests a second over the clients window.", labels, nil),
		allTopics:   prometheus.NewDesc("kscope_client_all_topics_metadata_requests_per_second", "A client's Metadata requests for every topic a second.", labels, nil),
		rejected: prometheus.NewDesc("kscope_client_rejected_requests", "Requests in the clients window the target release would reject, by client, API and version.",
			append(labels, "api", "version"), nil),
		findings: prometheus.NewDesc("kscope_client_findings", "Findings of the clients rules in the clients window, by rule and severity.", []string{"rule", "severity"}, nil),
	}
}

// Describe sends the descriptors.
func (c *ClientsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.clients, c.requests, c.connections, c.metadata, c.allTopics, c.rejected, c.findings} {
		ch <- d
	}
}

// Collect sends the current view's gauges.
func (c *ClientsCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.live.Report(c.now())
	ch <- prometheus.MustNewConstMetric(c.clients, prometheus.GaugeValue, float64(len(rep.Clients)))
	rows := rep.Clients // busiest first
	var other clients.Client
	named := min(len(rows), c.top)
	for i := range rows[:named] {
		c.collectClient(ch, &rows[i], labelsOf(&rows[i]))
	}
	if len(rows) > named {
		other = clients.Client{ClientID: "other"}
		for i := range rows[named:] {
			r := &rows[named+i]
			other.RequestsPerSec += r.RequestsPerSec
			other.ConnectionsPerMin += r.ConnectionsPerMin
			other.MetadataPerSec += r.MetadataPerSec
			other.AllTopicsMetadataPerSec += r.AllTopicsMetadataPerSec
			other.Rejected = append(other.Rejected, r.Rejected...)
		}
		c.collectClient(ch, &other, []string{"other", "", "", ""})
	}
	counts := map[[2]string]int{}
	for _, f := range rep.Findings {
		counts[[2]string{f.Rule, f.Severity}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.findings, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

func (c *ClientsCollector) collectClient(ch chan<- prometheus.Metric, r *clients.Client, labels []string) {
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.GaugeValue, r.RequestsPerSec, labels...)
	ch <- prometheus.MustNewConstMetric(c.connections, prometheus.GaugeValue, r.ConnectionsPerMin, labels...)
	ch <- prometheus.MustNewConstMetric(c.metadata, prometheus.GaugeValue, r.MetadataPerSec, labels...)
	ch <- prometheus.MustNewConstMetric(c.allTopics, prometheus.GaugeValue, r.AllTopicsMetadataPerSec, labels...)
	// "other" sums several clients' rejections of one API version.
	byVersion := map[[2]int16]int64{}
	var order [][2]int16
	for _, rj := range r.Rejected {
		k := [2]int16{rj.Key, rj.Version}
		if _, ok := byVersion[k]; !ok {
			order = append(order, k)
		}
		byVersion[k] += rj.Requests
	}
	for _, k := range order {
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.GaugeValue, float64(byVersion[k]),
			append(labels, clients.APIName(k[0]), strconv.Itoa(int(k[1])))...)
	}
}

// labelsOf are a client's label values, cleaned as every label from the
// wire is.
func labelsOf(r *clients.Client) []string {
	software := "unknown"
	if len(r.Software) > 0 {
		software = r.Software[0]
	}
	return []string{cleanLabel(r.ClientID), r.Address, cleanLabel(r.Principal), cleanLabel(software)}
}
