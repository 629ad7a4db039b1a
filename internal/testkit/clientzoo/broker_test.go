package clientzoo

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
)

// zooKafka is the broker release TestZooAgainstBroker runs. 3.9.1 is the
// last release that accepts every old version; -zoo-kafka=4.1.2 runs the
// zoo against Kafka 4 by hand (the old clients then fail, as they should).
var zooKafka = flag.String("zoo-kafka", "3.9.1", "Kafka release of TestZooAgainstBroker's broker")

// zooPort is the broker's PLAINTEXT port: fixed, in the range this
// package's tests were given on a machine shared with other brokers.
const zooPort = 19500

// oldVersions are the highest versions the old clients may send, per API:
// what their releases knew. A higher one means the client was not pinned
// as declared.
var oldVersions = map[string]map[string]int16{
	"java-2.0.1":              {"PRODUCE": 6, "FETCH": 8, "API_VERSIONS": 2, "JOIN_GROUP": 3, "OFFSET_COMMIT": 4},
	"librdkafka-noapiversion": {"PRODUCE": 2, "FETCH": 2},
	"kafka-python-0.10.1":     {"PRODUCE": 2, "FETCH": 3, "OFFSET_COMMIT": 2},
	"sarama-0.10.2":           {"PRODUCE": 2, "FETCH": 3, "OFFSET_COMMIT": 2, "JOIN_GROUP": 1},
}

// rejectedBy4 are the clients that send versions Kafka 4.0 removed
// (KIP-896: Produce v0-2 and more): a 3.x broker marks those requests
// deprecated, a 4.x one closes the connection and logs nothing, and the
// clients retry until their Timeout. Every other client must send no
// deprecated version at all.
var rejectedBy4 = map[string]bool{"librdkafka-noapiversion": true, "kafka-python-0.10.1": true, "sarama-0.10.2": true}

// rejectedTimeout bounds the rejected clients against Kafka 4: they send
// what is rejected within their first second, then only retry.
const rejectedTimeout = 15 * time.Second

// TestZooAgainstBroker runs the whole zoo against a real broker with its
// request log on, and checks from the log that every client came with its
// client id and software, that the old ones sent old versions, and that
// what the clients declare (acks, transactional id, fetch wait and
// minimum, storm counts) is what went over the wire. It logs a summary
// per client: software and the versions of each API.
func TestZooAgainstBroker(t *testing.T) {
	if err := lab.CheckVersion(*zooKafka); err != nil {
		t.Fatal(err)
	}
	clients := Default("zoo")
	kafka4 := atLeast(*zooKafka, "4.0.0")
	for i, c := range clients {
		if kafka4 && rejectedBy4[c.Kind] {
			clients[i].Timeout = rejectedTimeout
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tools, err := EnsureTools(ctx, clients)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	libs, err := lab.EnsureLibsVersion(ctx, *zooKafka)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	b := labtest.Broker(t, lab.BrokerConfig{Version: *zooKafka, LibsDir: libs, Port: zooPort, RequestLog: true})

	start := time.Now()
	results, err := Run(ctx, Env{Bootstrap: b.Addr(), BrokerVersion: *zooKafka, Tools: tools}, clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the zoo took %v against Kafka %s", time.Since(start).Round(time.Millisecond), *zooKafka)
	entries := readLog(t, b.RequestLogPath())
	byClient := map[string][]requestlog.Entry{}
	for _, e := range entries {
		byClient[e.ClientID] = append(byClient[e.ClientID], e)
	}
	for _, r := range results {
		logResult(t, r, byClient[r.Client.ClientID])
	}
	for _, r := range results {
		t.Run(r.Client.Kind, func(t *testing.T) {
			checkClient(t, r, byClient[r.Client.ClientID], *zooKafka)
		})
	}
}

func readLog(t *testing.T, path string) []requestlog.Entry {
	t.Helper()
	// The broker logs a request once its response is sent: give the last
	// ones a moment.
	time.Sleep(time.Second)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := requestlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// logResult logs one client's line of the summary.
func logResult(t *testing.T, r Result, entries []requestlog.Entry) {
	t.Helper()
	c := r.Client
	status := "ok"
	switch {
	case r.Skipped != "":
		status = "skipped: " + r.Skipped
	case r.Err != nil:
		status = "FAILED: " + r.Err.Error()
	}
	t.Logf("%-24s %-30s %-48s %6.1fs produced %d consumed %d requests %d: %s\n    %s",
		c.Kind, c.ClientID, softwareOf(entries), r.End.Sub(r.Start).Seconds(), r.Produced, r.Consumed, len(entries), status,
		apiVersions(entries))
	if r.Err != nil {
		t.Logf("%s output:\n%s", c.ClientID, lastLines(r.Output, 20))
	}
}

// softwareOf is the distinct clientInformation values of entries.
func softwareOf(entries []requestlog.Entry) string {
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.SoftwareName+"/"+e.SoftwareVersion] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ",")
}

// apiVersions is "API vN×count ..." for entries, by API key; a version
// the broker marks deprecated is followed by "(deprecated)".
func apiVersions(entries []requestlog.Entry) string {
	type key struct {
		api        int16
		name       string
		version    int16
		deprecated bool
	}
	n := map[key]int{}
	for _, e := range entries {
		n[key{e.APIKey, e.APIName, e.APIVersion, e.Deprecated}]++
	}
	keys := slices.Collect(maps.Keys(n))
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].api != keys[j].api {
			return keys[i].api < keys[j].api
		}
		return keys[i].version < keys[j].version
	})
	var parts []string
	for _, k := range keys {
		part := fmt.Sprintf("%s v%d×%d", k.name, k.version, n[k])
		if k.deprecated {
			part += " (deprecated)"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// checkClient compares one client's declaration with its requests in the
// broker's log.
func checkClient(t *testing.T, r Result, entries []requestlog.Entry, brokerVersion string) {
	c := r.Client
	if r.Skipped != "" {
		if c.MinBroker == "" || atLeast(brokerVersion, c.MinBroker) {
			t.Fatalf("skipped against Kafka %s: %s", brokerVersion, r.Skipped)
		}
		if len(entries) > 0 {
			t.Fatalf("skipped, yet the broker logged %d requests of %s", len(entries), c.ClientID)
		}
		return
	}
	if rejectedBy4[c.Kind] && atLeast(brokerVersion, "4.0.0") {
		if r.Err == nil {
			t.Fatalf("Kafka %s served a client that sends versions 4.0 removed", brokerVersion)
		}
		return
	}
	if r.Err != nil {
		t.Fatalf("%v", r.Err)
	}
	if len(entries) == 0 {
		t.Fatalf("no request of client id %q in the broker's log", c.ClientID)
	}
	checkSoftware(t, c, entries)
	checkOldVersions(t, c, entries)
	checkDeprecated(t, c, entries, brokerVersion)
	checkProducer(t, c, r, entries)
	checkConsumer(t, c, r, entries)
	checkStorm(t, c, r, entries)
}

func checkSoftware(t *testing.T, c Client, entries []requestlog.Entry) {
	t.Helper()
	want := c.Software.Logged()
	for _, e := range entries {
		// The broker learns the software from the ApiVersions request,
		// and logs that request itself as unknown.
		if e.APIName == "API_VERSIONS" {
			continue
		}
		if got := (Software{e.SoftwareName, e.SoftwareVersion}); got != want {
			t.Errorf("%s v%d (connection %s): clientInformation %v, declared %v", e.APIName, e.APIVersion, e.Connection, got, want)
			return
		}
	}
}

func checkOldVersions(t *testing.T, c Client, entries []requestlog.Entry) {
	t.Helper()
	limits, ok := oldVersions[c.Kind]
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if limit, ok := limits[e.APIName]; ok {
			seen[e.APIName] = true
			if e.APIVersion > limit {
				t.Errorf("%s v%d: an old client sends v%d at most", e.APIName, e.APIVersion, limit)
			}
		}
	}
	for api := range limits {
		if !seen[api] && api != "API_VERSIONS" {
			t.Errorf("no %s request: the old versions were not exercised", api)
		}
	}
}

// checkDeprecated: a 3.7-3.9 broker marks the versions 4.0 removed; the
// clients of rejectedBy4 send some, the others none.
func checkDeprecated(t *testing.T, c Client, entries []requestlog.Entry, brokerVersion string) {
	t.Helper()
	if !atLeast(brokerVersion, "3.7.0") || atLeast(brokerVersion, "4.0.0") {
		return
	}
	var deprecated []string
	for _, e := range entries {
		if e.Deprecated && !slices.Contains(deprecated, fmt.Sprintf("%s v%d", e.APIName, e.APIVersion)) {
			deprecated = append(deprecated, fmt.Sprintf("%s v%d", e.APIName, e.APIVersion))
		}
	}
	if rejectedBy4[c.Kind] != (len(deprecated) > 0) {
		t.Errorf("deprecated versions sent: %v; expected some: %v", deprecated, rejectedBy4[c.Kind])
	}
}

// requestField reads one top-level field of a logged request's JSON.
func requestField(t *testing.T, e requestlog.Entry, field string, v any) bool {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.Request, &m); err != nil {
		t.Fatalf("%s request JSON: %v", e.APIName, err)
	}
	raw, ok := m[field]
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s request field %s: %v", e.APIName, field, err)
	}
	return true
}

func count(entries []requestlog.Entry, api string) int {
	n := 0
	for _, e := range entries {
		if e.APIName == api {
			n++
		}
	}
	return n
}

func checkProducer(t *testing.T, c Client, r Result, entries []requestlog.Entry) {
	t.Helper()
	p := c.Producer
	if p == nil {
		if n := count(entries, "PRODUCE"); n > 0 {
			t.Errorf("%d Produce requests from a client that declares no producer", n)
		}
		return
	}
	if r.Produced != p.Records {
		t.Errorf("produced %d records, declared %d", r.Produced, p.Records)
	}
	if count(entries, "PRODUCE") == 0 {
		t.Fatal("no Produce request")
	}
	for _, e := range entries {
		if e.APIName != "PRODUCE" {
			continue
		}
		var acks int16
		var txn *string
		requestField(t, e, "acks", &acks)
		requestField(t, e, "transactionalId", &txn)
		if acks != p.Acks {
			t.Errorf("Produce v%d: acks %d, declared %d", e.APIVersion, acks, p.Acks)
		}
		if p.Transactional != (txn != nil) || txn != nil && *txn != c.TransactionalID() {
			t.Errorf("Produce v%d: transactionalId %v, declared transactional %v (%s)", e.APIVersion, txn, p.Transactional, c.TransactionalID())
		}
		if t.Failed() {
			return
		}
	}
	// An idempotent producer asks for a producer id; others must not.
	if n := count(entries, "INIT_PRODUCER_ID"); (n > 0) != p.Idempotent {
		t.Errorf("%d InitProducerId requests, declared idempotent %v", n, p.Idempotent)
	}
	if n := count(entries, "END_TXN"); (n > 0) != p.Transactional {
		t.Errorf("%d EndTxn requests, declared transactional %v", n, p.Transactional)
	}
}

func checkConsumer(t *testing.T, c Client, r Result, entries []requestlog.Entry) {
	t.Helper()
	k := c.Consumer
	if k == nil {
		return
	}
	if r.Consumed < k.Records {
		t.Errorf("consumed %d records, declared %d", r.Consumed, k.Records)
	}
	if count(entries, "FETCH") == 0 {
		t.Fatal("no Fetch request")
	}
	for _, e := range entries {
		if e.APIName != "FETCH" {
			continue
		}
		var maxWait, minBytes int
		sessionEpoch := 0
		// A fetch that closes a fetch session (KIP-227, epoch -1) is no
		// consumer's setting: franz-go sends it on close with a wait of 1 ms.
		if requestField(t, e, "sessionEpoch", &sessionEpoch) && sessionEpoch == -1 {
			continue
		}
		requestField(t, e, "maxWaitMs", &maxWait)
		requestField(t, e, "minBytes", &minBytes)
		if maxWait != k.FetchMaxWaitMs || minBytes != k.FetchMinBytes {
			t.Errorf("Fetch v%d: maxWaitMs %d minBytes %d, declared %d and %d", e.APIVersion, maxWait, minBytes, k.FetchMaxWaitMs, k.FetchMinBytes)
			return
		}
	}
	groupAPI := map[string]string{Classic: "JOIN_GROUP", KIP848: "CONSUMER_GROUP_HEARTBEAT"}
	other := map[string]string{Classic: "CONSUMER_GROUP_HEARTBEAT", KIP848: "JOIN_GROUP"}
	if count(entries, groupAPI[k.GroupProtocol]) == 0 || count(entries, other[k.GroupProtocol]) > 0 {
		t.Errorf("group protocol %s: %d %s and %d %s requests", k.GroupProtocol,
			count(entries, groupAPI[k.GroupProtocol]), groupAPI[k.GroupProtocol], count(entries, other[k.GroupProtocol]), other[k.GroupProtocol])
	}
}

func checkStorm(t *testing.T, c Client, r Result, entries []requestlog.Entry) {
	t.Helper()
	s := c.Storm
	if s == nil {
		return
	}
	if r.Requests != s.Count {
		t.Errorf("%d of %d storm requests done", r.Requests, s.Count)
	}
	conns := map[string]bool{}
	for _, e := range entries {
		conns[e.Connection] = true
	}
	metadata, versions := count(entries, "METADATA"), count(entries, "API_VERSIONS")
	switch s.Pattern {
	case Reconnect:
		// kgo asks ApiVersions with its newest version first, and again
		// with the broker's if that one is refused: one or two each.
		if len(conns) != s.Count || metadata != s.Count || versions < s.Count || versions > 2*s.Count {
			t.Errorf("%d connections, %d Metadata, %d ApiVersions: want %d of each (ApiVersions: up to twice)", len(conns), metadata, versions, s.Count)
		}
	case MetadataAll:
		if len(conns) != 1 || metadata != s.Count {
			t.Errorf("%d connections, %d Metadata: want 1 and %d", len(conns), metadata, s.Count)
		}
		for _, e := range entries {
			var topics []json.RawMessage
			if e.APIName == "METADATA" && requestField(t, e, "topics", &topics) && topics != nil {
				t.Errorf("Metadata v%d names %d topics: want all (null)", e.APIVersion, len(topics))
				return
			}
		}
	}
}
