package clients

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/output"
)

// Finding is one thing to fix about one client, with the rule that fired
// and the evidence.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // alarm, warning or note
	Title    string `json:"title"`
	Evidence string `json:"evidence"`
	// Client is the client's name (Client.Name); Weight orders findings
	// of one severity (the client's share of the broker's requests).
	Client string  `json:"client"`
	Weight float64 `json:"weight"`
}

// Severities, as findings.Severity names them.
const (
	Alarm   = "alarm"
	Warning = "warning"
	Note    = "note"
)

// Rule is one check of a client's row: what it looks at, its threshold
// and where that comes from.
type Rule struct {
	Name      string
	Severity  string
	Threshold string
	Source    string
	fire      func(r *Report, c *Client) (title, evidence string, ok bool)
}

// Rules is the table every row is checked against, most urgent first:
// what hurts the cluster now (storms), then what breaks on the target
// release, then waste.
func Rules() []Rule {
	return []Rule{
		{Name: "connection-storm", Severity: Alarm,
			Threshold: "60 or more new connections a minute, 10 or more in all",
			Source:    "a client keeps one connection per broker for hours (connections.max.idle.ms is 9 minutes); reconnect loops took clusters down (librdkafka #363, IBM/sarama #3224)",
			fire:      connectionStorm},
		{Name: "metadata-storm", Severity: Alarm,
			Threshold: "10 or more Metadata requests a second, or 1 or more for every topic, 30 or more in all",
			Source:    "clients refresh metadata every metadata.max.age.ms (5 minutes) or after an error; an all-topic request costs the broker the whole cluster's metadata (linkedin/kafka #251)",
			fire:      metadataStorm},
		{Name: "rejected-by-target", Severity: Warning,
			Threshold: "any request of a version the target release does not accept",
			Source:    "the target release's protocol definitions (kafka-clients common/message/*Request.json validVersions); KIP-896 removed the versions of clients before 2.1 in Kafka 4.0",
			fire:      rejectedByTarget},
		{Name: "old-record-format", Severity: Warning,
			Threshold: "any produce batch of record format (magic) 0 or 1",
			Source:    "magic 2 came with Kafka 0.11 (KIP-98); older formats cost the broker a conversion and Kafka 4.0 rejects Produce v0-v2 (KIP-896)",
			fire:      oldRecordFormat},
		{Name: "failing-requests", Severity: Warning,
			Threshold: "1% or more of its requests answered with an error, 10 or more",
			Source:    "a healthy client's requests fail only around leader changes",
			fire:      failingRequests},
		{Name: "throttled", Severity: Warning,
			Threshold: "1% or more of its produce requests throttled (throttle_time_ms > 0)",
			Source:    "the broker throttles a client past its quota (KIP-13, KIP-219): its latency is the quota's, not the broker's",
			fire:      throttled},
		{Name: "tiny-batches", Severity: Warning,
			Threshold: "100 or more produce requests a second with a median of 2 records or fewer per batch",
			Source:    "per-request cost dominates small batches; the tuning guides (Confluent, Strimzi, Red Hat) start from batch.size and linger.ms",
			fire:      tinyBatches},
		{Name: "busy-fetch", Severity: Warning,
			Threshold: "20 or more fetches a second, 90% or more of them empty, fetch.max.wait.ms under 100",
			Source:    "fetch.max.wait.ms (500 ms by default) lets the broker hold an empty fetch; a low one makes consumers poll",
			fire:      busyFetch},
		{Name: "uncompressed", Severity: Note,
			Threshold: "1 MiB/s or more of produce batches without compression",
			Source:    "compression.type (lz4 or zstd) cuts network and disk bytes several-fold on typical data",
			fire:      uncompressed},
		{Name: "unknown-software", Severity: Note,
			Threshold: "an ApiVersions request older than v3",
			Source:    "KIP-511 (Kafka 2.4, librdkafka 1.4) made clients announce their software; one that does not is older",
			fire:      unknownSoftware},
	}
}

// Evaluate checks every row against every rule and ranks the findings:
// the most severe first, then by weight, then in the table's order.
func Evaluate(r *Report) []Finding {
	var out []Finding
	for _, rule := range Rules() {
		for i := range r.Clients {
			c := &r.Clients[i]
			if title, ev, ok := rule.fire(r, c); ok {
				out = append(out, Finding{Rule: rule.Name, Severity: rule.Severity, Title: title, Evidence: ev, Client: c.Name(),
					Weight: c.RequestShare})
			}
		}
	}
	rank := map[string]int{Alarm: 0, Warning: 1, Note: 2}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(rank[a.Severity], rank[b.Severity]), cmp.Compare(b.Weight, a.Weight))
	})
	return out
}

func connectionStorm(r *Report, c *Client) (string, string, bool) {
	if c.ConnectionsPerMin < 60 || c.Connections < 10 {
		return "", "", false
	}
	return fmt.Sprintf("%s opens %.0f connections a minute", c.Name(), c.ConnectionsPerMin),
		fmt.Sprintf("%d connections in %s, each seen for %s at the median; %.0f ApiVersions and SASL handshakes a minute; %s of the broker's requests",
			c.Connections, secs(c.ActiveSec), secs(c.LifetimeSec), c.HandshakesPerMin, pct(c.RequestShare)), true
}

func metadataStorm(r *Report, c *Client) (string, string, bool) {
	total := c.MetadataPerSec * max(c.ActiveSec, 1)
	if total < 30 || (c.MetadataPerSec < 10 && c.AllTopicsMetadataPerSec < 1) {
		return "", "", false
	}
	what := "Metadata"
	if c.AllTopicsMetadataPerSec >= 1 {
		what = "Metadata for every topic"
	}
	return fmt.Sprintf("%s asks for %s %.1f times a second", c.Name(), what, max(c.AllTopicsMetadataPerSec, c.MetadataPerSec)),
		fmt.Sprintf("%.1f Metadata requests a second, %.1f of them for every topic; %s of the broker's requests", c.MetadataPerSec,
			c.AllTopicsMetadataPerSec, pct(c.RequestShare)), true
}

func rejectedByTarget(r *Report, c *Client) (string, string, bool) {
	if len(c.Rejected) == 0 {
		return "", "", false
	}
	var names, detail []string
	var n int64
	for _, rj := range c.Rejected {
		names = append(names, rj.API+" v"+strconv.Itoa(int(rj.Version)))
		detail = append(detail, fmt.Sprintf("%s v%d: %d requests, %s to %s", rj.API, rj.Version, rj.Requests,
			rj.First.UTC().Format("15:04:05"), rj.Last.UTC().Format("15:04:05")))
		n += rj.Requests
	}
	return fmt.Sprintf("%s sends %s: rejected by Kafka %s", c.Name(), strings.Join(names, ", "), r.Target),
		fmt.Sprintf("%d requests; %s", n, strings.Join(detail, "; ")), true
}

func oldRecordFormat(_ *Report, c *Client) (string, string, bool) {
	p := c.Producer
	if p == nil || p.MinMagic >= 2 || len(p.Codecs) == 0 {
		return "", "", false
	}
	return fmt.Sprintf("%s produces record format v%d (magic %d)", c.Name(), p.MinMagic, p.MinMagic),
		fmt.Sprintf("%d produce requests; the broker converts every such batch", p.Requests), true
}

func failingRequests(_ *Report, c *Client) (string, string, bool) {
	if c.Failed < 10 || share(c.Failed, c.Requests) < 0.01 {
		return "", "", false
	}
	return fmt.Sprintf("%s gets errors on %s of its requests", c.Name(), pct(share(c.Failed, c.Requests))),
		fmt.Sprintf("%d of %d requests: %s", c.Failed, c.Requests, errorList(c.Errors)), true
}

func throttled(_ *Report, c *Client) (string, string, bool) {
	p := c.Producer
	if p == nil || p.Throttled == 0 || p.ThrottledShare < 0.01 {
		return "", "", false
	}
	return fmt.Sprintf("%s is throttled on %s of its produce requests", c.Name(), pct(p.ThrottledShare)),
		fmt.Sprintf("%d of %d produce requests had throttle_time_ms > 0: its quota, not the broker, sets its latency", p.Throttled, p.Requests), true
}

func tinyBatches(r *Report, c *Client) (string, string, bool) {
	p := c.Producer
	if p == nil || p.PerSec < 100 {
		return "", "", false
	}
	records := recordsPerBatch(p)
	if records.N == 0 || records.P50 > 2 {
		return "", "", false
	}
	codec := "uncompressed"
	if len(p.Codecs) > 0 && p.Codecs["none"] == 0 {
		codec = "compressed"
	}
	return fmt.Sprintf("%s sends %.0f-record batches %s at %.0f requests/s: %s of the broker's produce requests", c.Name(),
			records.P50, codec, p.PerSec, pct(share(p.Requests, produceRequests(r)))),
		fmt.Sprintf("records per batch p50 %.0f, p90 %.0f; batches per request p50 %.0f; gap between a connection's requests p50 %.1f ms",
			records.P50, records.P90, p.BatchesPerRequest.P50, p.GapMs.P50), true
}

func busyFetch(_ *Report, c *Client) (string, string, bool) {
	cs := c.Consumer
	if cs == nil || cs.PerSec < 20 || cs.EmptyShare < 0.9 {
		return "", "", false
	}
	wait := mode(cs.MaxWaitMs)
	if wait >= 100 {
		return "", "", false
	}
	return fmt.Sprintf("%s polls with %.0f fetches a second, %s of them empty", c.Name(), cs.PerSec, pct(cs.EmptyShare)),
		fmt.Sprintf("max_wait_ms %d, min_bytes %d: the broker cannot hold its fetches for data", wait, mode(cs.MinBytes)), true
}

func uncompressed(r *Report, c *Client) (string, string, bool) {
	p := c.Producer
	if p == nil || p.Codecs["none"] == 0 {
		return "", "", false
	}
	var bytes int64
	for _, t := range p.Topics {
		bytes += t.Bytes
	}
	perSec := float64(bytes) * share(p.Codecs["none"], p.Requests) / max(c.ActiveSec, 1)
	if perSec < 1<<20 {
		return "", "", false
	}
	return fmt.Sprintf("%s produces %.1f MiB/s uncompressed", c.Name(), perSec/(1<<20)),
		fmt.Sprintf("%d of %d produce requests without compression", p.Codecs["none"], p.Requests), true
}

func unknownSoftware(_ *Report, c *Client) (string, string, bool) {
	if len(c.Software) > 0 || !c.OldAPIVersions {
		return "", "", false
	}
	return fmt.Sprintf("%s does not say which software it runs", c.Name()), c.SoftwareNote, true
}

// recordsPerBatch is the records-per-batch summary of the client's
// busiest topic.
func recordsPerBatch(p *Producer) Dist {
	if len(p.Topics) == 0 {
		return Dist{}
	}
	return p.Topics[0].RecordsPerBatch
}

func produceRequests(r *Report) int64 {
	var n int64
	for i := range r.Clients {
		if p := r.Clients[i].Producer; p != nil {
			n += p.Requests
		}
	}
	return n
}

// mode is the most used value.
func mode(m map[int32]int64) int32 {
	var best int32
	var n int64 = -1
	for v, c := range m {
		if c > n || (c == n && v < best) {
			best, n = v, c
		}
	}
	return best
}

func errorList(es []ErrorCount) string {
	var s []string
	for i, e := range es {
		if i == 4 {
			s = append(s, fmt.Sprintf("%d more", len(es)-4))
			break
		}
		s = append(s, fmt.Sprintf("%s %d", e.Name, e.Count))
	}
	return strings.Join(s, ", ")
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func secs(s float64) string {
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + " s"
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// quote is a client-chosen name, escaped for a terminal and quoted.
func quote(s string) string { return "`" + output.Escape(s) + "`" }
