package clients

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

var t0 = time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)

// req builds an answered request.
func req(client, clientID string, key, version int16, at time.Duration) *event.Request {
	return &event.Request{Arrival: t0.Add(at), End: t0.Add(at + time.Millisecond), LatencyMs: 1, Client: client, Broker: "10.0.0.1:9092",
		APIKey: key, APIVersion: version, ClientID: clientID, RequestBytes: 100, ResponseBytes: 50, Answered: true}
}

func produce(client, clientID string, version int16, at time.Duration, records, bytes int, codec string, producerID int64) *event.Request {
	r := req(client, clientID, apiProduce, version, at)
	acks := int16(-1)
	r.Acks = &acks
	r.Producer = event.Producer{Batches: 1, Magic: 2, Codec: codec, ProducerID: producerID}
	r.Partitions = []event.Partition{{Topic: "orders", Records: records, Bytes: bytes, Batches: 1}}
	return r
}

// rejectBelow is a target release that rejects versions below min of
// each key it lists.
type rejectBelow map[int16]int16

func (t rejectBelow) Range(key int16) (min, max int16, served bool) {
	if m, ok := t[key]; ok {
		return m, 20, true
	}
	return 0, 20, true
}

func find(r *Report, clientID string) *Client {
	for i := range r.Clients {
		if r.Clients[i].ClientID == clientID {
			return &r.Clients[i]
		}
	}
	return nil
}

func rules(r *Report) map[string][]string {
	out := map[string][]string{}
	for _, f := range r.Findings {
		out[f.Rule] = append(out[f.Rule], f.Client)
	}
	return out
}

func TestPrincipalKnownAfterAuthentication(t *testing.T) {
	a := New(Options{})
	conn := "10.0.0.7:40000"
	v := req(conn, "billing", apiVersionsKey, 3, 0)
	v.SoftwareName, v.SoftwareVersion = "apache-kafka-java", "3.9.1"
	a.Add(v)
	a.Add(req(conn, "billing", apiSaslHandshake, 1, time.Millisecond))
	auth := req(conn, "billing", apiSaslAuth, 2, 2*time.Millisecond)
	auth.Principal = "alice"
	a.Add(auth)
	p := produce(conn, "billing", 9, 3*time.Millisecond, 10, 1000, "lz4", 7)
	p.Principal = "alice"
	a.Add(p)
	// A connection of a listener without SASL.
	a.Add(req("10.0.0.8:40001", "plain", apiVersionsKey, 2, 0))
	a.Add(req("10.0.0.8:40001", "plain", apiMetadata, 9, time.Millisecond))
	rep := a.Report()
	if len(rep.Clients) != 2 {
		t.Fatalf("got %d clients, want 2: %+v", len(rep.Clients), rep.Clients)
	}
	c := find(rep, "billing")
	if c == nil || c.Principal != "alice" || c.Requests != 4 || c.Connections != 1 || c.Address != "10.0.0.7" {
		t.Fatalf("billing: %+v", c)
	}
	if len(c.Software) != 1 || c.Software[0] != "apache-kafka-java/3.9.1" {
		t.Errorf("software %v", c.Software)
	}
	if c.HandshakesPerMin == 0 {
		t.Errorf("handshakes not counted")
	}
	plain := find(rep, "plain")
	if plain.Principal != "" || !strings.Contains(plain.SoftwareNote, "ApiVersions v2") {
		t.Errorf("plain: principal %q note %q", plain.Principal, plain.SoftwareNote)
	}
	if got := rules(rep)["unknown-software"]; len(got) != 1 || !strings.Contains(got[0], "plain") {
		t.Errorf("unknown-software findings %v", got)
	}
}

// TestRules runs each rule on a case where it must fire and one where it
// must not.
func TestRules(t *testing.T) {
	type scenario func(a *Aggregator)
	steady := func(a *Aggregator) {
		// One connection producing 10 batches of 100 records a second
		// for a minute, one consumer fetching with the default wait.
		for i := range 600 {
			a.Add(produce("10.0.0.2:5000", "steady", 9, time.Duration(i)*100*time.Millisecond, 100, 20000, "zstd", 3))
		}
		for i := range 120 {
			f := req("10.0.0.3:5001", "reader", apiFetch, 12, time.Duration(i)*500*time.Millisecond)
			f.Fetch = event.FetchParams{MaxWaitMs: 500, MinBytes: 1}
			a.Add(f)
		}
		for i := range 2 {
			a.Add(req("10.0.0.2:5000", "steady", apiMetadata, 9, time.Duration(i)*30*time.Second))
		}
	}
	cases := []struct {
		rule     string
		yes, no  scenario
		target   Target
		wantFrom string
	}{
		{rule: "connection-storm", wantFrom: "stormy",
			yes: func(a *Aggregator) {
				for i := range 300 { // 5 a second for a minute
					conn := fmt.Sprintf("10.0.0.9:%d", 20000+i)
					a.Add(req(conn, "stormy", apiVersionsKey, 3, time.Duration(i)*200*time.Millisecond))
					a.Add(req(conn, "stormy", apiMetadata, 12, time.Duration(i)*200*time.Millisecond+time.Millisecond))
				}
			}},
		{rule: "metadata-storm", wantFrom: "poller",
			yes: func(a *Aggregator) {
				for i := range 300 {
					m := req("10.0.0.4:6000", "poller", apiMetadata, 12, time.Duration(i)*200*time.Millisecond)
					m.AllTopics = true
					a.Add(m)
				}
			}},
		{rule: "rejected-by-target", wantFrom: "old", target: rejectBelow{apiProduce: 3},
			yes: func(a *Aggregator) {
				a.Add(produce("10.0.0.5:7000", "old", 2, time.Second, 1, 100, "none", -1))
			}},
		{rule: "tiny-batches", wantFrom: "chatty",
			yes: func(a *Aggregator) {
				for i := range 3000 { // 200 a second for 15 s
					a.Add(produce("10.0.0.6:8000", "chatty", 9, time.Duration(i)*5*time.Millisecond, 1, 80, "none", -1))
				}
			}},
		{rule: "busy-fetch", wantFrom: "spinner",
			yes: func(a *Aggregator) {
				for i := range 1200 { // 40 a second for 30 s, all empty
					f := req("10.0.0.10:9000", "spinner", apiFetch, 12, time.Duration(i)*25*time.Millisecond)
					f.Fetch = event.FetchParams{MaxWaitMs: 10, MinBytes: 1}
					a.Add(f)
				}
			}},
		{rule: "failing-requests", wantFrom: "failing",
			yes: func(a *Aggregator) {
				for i := range 50 {
					r := req("10.0.0.11:9100", "failing", 19, 7, time.Duration(i)*time.Second)
					code := int16(36)
					r.ErrorCode = &code
					a.Add(r)
				}
			}},
		{rule: "throttled", wantFrom: "greedy",
			yes: func(a *Aggregator) {
				for i := range 100 {
					p := produce("10.0.0.12:9200", "greedy", 9, time.Duration(i)*100*time.Millisecond, 500, 50000, "lz4", -1)
					if i%10 == 0 {
						p.ThrottleMs = 200
					}
					a.Add(p)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			no := New(Options{Target: c.target, TargetName: "4.0"})
			steady(no)
			if got := rules(no.Report())[c.rule]; len(got) != 0 {
				t.Errorf("fired on the steady clients: %v", got)
			}
			yes := New(Options{Target: c.target, TargetName: "4.0"})
			steady(yes)
			c.yes(yes)
			rep := yes.Report()
			got := rules(rep)[c.rule]
			if len(got) != 1 || !strings.Contains(got[0], "`"+c.wantFrom+"`") {
				t.Errorf("fired for %v, want once for %s; findings %+v", got, c.wantFrom, rep.Findings)
			}
			for rule, from := range rules(rep) {
				if rule != c.rule && rule != "uncompressed" {
					t.Errorf("%s also fired: %v", rule, from)
				}
			}
		})
	}
}

func TestStormRankedFirst(t *testing.T) {
	a := New(Options{Target: rejectBelow{apiProduce: 3}, TargetName: "4.0"})
	for i := range 100 {
		a.Add(produce("10.0.0.5:7000", "old", 2, time.Duration(i)*time.Second, 1, 100, "none", -1))
	}
	for i := range 300 {
		conn := fmt.Sprintf("10.0.0.9:%d", 20000+i)
		a.Add(req(conn, "stormy", apiVersionsKey, 3, time.Duration(i)*200*time.Millisecond))
	}
	rep := a.Report()
	if len(rep.Findings) < 2 || rep.Findings[0].Rule != "connection-storm" {
		t.Fatalf("findings %+v", rep.Findings)
	}
	rj := find(rep, "old").Rejected
	if len(rj) != 1 || rj[0].Requests != 100 || !rj[0].First.Equal(t0) || !rj[0].Last.Equal(t0.Add(99*time.Second)) {
		t.Errorf("rejected %+v", rj)
	}
}

func TestProducerSettings(t *testing.T) {
	a := New(Options{})
	for i := range 200 {
		// linger 20 ms, batches of ~50 records well under their largest
		a.Add(produce("10.0.0.2:5000", "p", 9, time.Duration(i)*20*time.Millisecond, 50, 5000+i%3, "zstd", 11))
	}
	p := find(a.Report(), "p").Producer
	if p.Acks[-1] != 200 || p.Codecs["zstd"] != 200 || p.Idempotent != 200 || p.Transactional != 0 {
		t.Errorf("producer %+v", p)
	}
	if p.Topics[0].RecordsPerBatch.P50 != 50 || p.InferredLingerMs < 19 || p.InferredLingerMs > 21 {
		t.Errorf("records per batch %+v, linger %v", p.Topics[0].RecordsPerBatch, p.InferredLingerMs)
	}
}

func TestBounded(t *testing.T) {
	a := New(Options{MaxClients: 2, MaxConnections: 3})
	for i := range 5 {
		a.Add(req(fmt.Sprintf("10.0.0.%d:1", i), fmt.Sprintf("c%d", i), apiMetadata, 9, time.Duration(i)*time.Second))
	}
	rep := a.Report()
	if len(rep.Clients) != 3 || find(rep, "") == nil || find(rep, "").Address != "other" || find(rep, "").Requests != 3 {
		t.Errorf("clients %+v", rep.Clients)
	}
	if rep.UntrackedRequests != 2 {
		t.Errorf("untracked %d, want 2", rep.UntrackedRequests)
	}
	// One client naming a thousand softwares and error codes keeps a
	// bounded number of each.
	b := New(Options{})
	for i := range 1000 {
		r := req("10.0.0.1:1", "x", apiVersionsKey, 3, time.Duration(i)*time.Millisecond)
		r.SoftwareName, r.SoftwareVersion = "s", fmt.Sprint(i)
		code := int16(i + 1)
		r.ErrorCode = &code
		b.Add(r)
	}
	c := b.clients[key{"10.0.0.1", "", "x"}]
	if len(c.software) != maxDistinct || len(c.errors) != maxDistinct || c.requests != 1000 || c.failed != 999 { // code 35 on ApiVersions is negotiation
		t.Errorf("%d softwares, %d error codes, %d requests, %d failed", len(c.software), len(c.errors), c.requests, c.failed)
	}
}

// TestOnlyOldVersionsRejected: a version newer than the target's newest
// is negotiated down by a client that asked ApiVersions; only one older
// than its oldest is rejected.
func TestOnlyOldVersionsRejected(t *testing.T) {
	a := New(Options{Target: rejectBelow{apiProduce: 3}, TargetName: "4.0"})
	a.Add(produce("10.0.0.1:1", "new", 25, 0, 1, 100, "none", -1))
	a.Add(produce("10.0.0.2:1", "old", 2, 0, 1, 100, "none", -1))
	a.Add(produce("10.0.0.3:1", "oldest-accepted", 3, 0, 1, 100, "none", -1))
	rep := a.Report()
	for id, want := range map[string]int{"new": 0, "old": 1, "oldest-accepted": 0} {
		if got := len(find(rep, id).Rejected); got != want {
			t.Errorf("%s: %d rejections, want %d", id, got, want)
		}
	}
	if rj := find(rep, "old").Rejected; len(rj) == 1 && rj[0].Why != "Kafka 4.0 accepts Produce v3-v20" {
		t.Errorf("why %q", rj[0].Why)
	}
}
