package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/releases"
	"github.com/kscope-dev/kscope/internal/testkit/clientzoo"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
)

// zooRun is the client zoo's traffic to one broker: the capture, the
// broker's request log of the port, and what each client did.
type zooRun struct {
	pcap    string
	port    int
	entries []requestlog.Entry
	results []clientzoo.Result
}

// runZoo starts a broker of release version with its request log on,
// captures its port while the clients run, and returns the run.
func runZoo(t *testing.T, version string, port int, zoo []clientzoo.Client) zooRun {
	t.Helper()
	labtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tools, err := clientzoo.EnsureTools(ctx, zoo)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	libs, err := lab.EnsureLibsVersion(ctx, version)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	dir := t.TempDir()
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(dir, "broker"), Version: version, LibsDir: libs, Port: port, RequestLog: true})
	pcap := filepath.Join(dir, "zoo.pcap")
	stop := labtest.Capture(t, "lo", port, pcap)
	// A failed check's capture and request log are kept for a look
	// (one run lost a whole librdkafka producer connection).
	t.Cleanup(func() { keepOnFailure(t, pcap); keepOnFailure(t, b.RequestLogPath()) })
	// The lab's readiness probe ran before the capture: the log's
	// timestamps are whole milliseconds.
	captured := time.Now().Truncate(time.Millisecond)
	results, err := clientzoo.Run(ctx, clientzoo.Env{Bootstrap: b.Addr(), BrokerVersion: version, Tools: tools}, zoo)
	if err != nil {
		t.Fatal(err)
	}
	// The broker logs a request once its response is sent, and tcpdump
	// writes the last packets on SIGINT.
	time.Sleep(time.Second)
	stop()
	f, err := os.Open(b.RequestLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := requestlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	run := zooRun{pcap: pcap, port: port, results: results}
	for _, e := range all {
		if _, p, _ := net.SplitHostPort(e.BrokerAddr); p == strconv.Itoa(port) && !e.Time.Before(captured) {
			run.entries = append(run.entries, e)
		}
	}
	return run
}

// clientsOf runs kscope clients on the run's capture.
func (z zooRun) clientsOf(t *testing.T, target string) *clients.Report {
	t.Helper()
	args := []string{"clients", "--format", "json", "-q", "--port", strconv.Itoa(z.port), z.pcap}
	if target != "" {
		args = append(args, "--target-version", target)
	}
	out, errOut, code := runCLI(args)
	if code != 0 {
		t.Fatalf("kscope %v: exit %d: %s", args, code, errOut)
	}
	var rep clients.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("kscope clients JSON: %v", err)
	}
	return &rep
}

// byClientID sums kscope's rows per client id (the zoo's clients all run
// on one address, without SASL), and the log's entries.
type clientTruth struct {
	requests, unanswered int64
	// versions counts requests per "API vN"; software is the
	// clientInformation logged (unknown left out).
	versions map[string]int64
	software map[string]bool
}

func logTruth(entries []requestlog.Entry) map[string]*clientTruth {
	out := map[string]*clientTruth{}
	for _, e := range entries {
		c := out[e.ClientID]
		if c == nil {
			c = &clientTruth{versions: map[string]int64{}, software: map[string]bool{}}
			out[e.ClientID] = c
		}
		c.requests++
		c.versions[fmt.Sprintf("%s v%d", clients.APIName(e.APIKey), e.APIVersion)]++
		if e.SoftwareName != clientzoo.Unknown {
			c.software[e.SoftwareName+"/"+e.SoftwareVersion] = true
		}
	}
	return out
}

func kscopeTruth(rep *clients.Report) map[string]*clientTruth {
	out := map[string]*clientTruth{}
	for _, row := range rep.Clients {
		c := out[row.ClientID]
		if c == nil {
			c = &clientTruth{versions: map[string]int64{}, software: map[string]bool{}}
			out[row.ClientID] = c
		}
		c.requests += row.Requests
		c.unanswered += row.Unanswered
		for _, a := range row.APIs {
			for _, v := range a.Versions {
				c.versions[fmt.Sprintf("%s v%d", a.API, v.Version)] += v.Requests
			}
		}
		for _, s := range row.Software {
			c.software[s] = true
		}
	}
	return out
}

// rowWith returns the client id's row that has f set.
func rowWith(rep *clients.Report, clientID string, f func(*clients.Client) bool) *clients.Client {
	for i := range rep.Clients {
		if r := &rep.Clients[i]; r.ClientID == clientID && f(r) {
			return r
		}
	}
	return nil
}

// checkAgainstLog: per client id, the requests, the versions of each API
// and the software kscope read from the wire equal the broker's log (but
// for the APIs unlogged: a SASL listener's authenticator answers
// ApiVersions, SaslHandshake and SaslAuthenticate before the request
// channel, which logs). The
// broker logs a request when it has processed it: a request the client
// sent just before it closed its connection is on the wire with no
// response, and may be missing from the log. Such requests, which kscope
// counts as unanswered, are the only difference allowed.
func checkAgainstLog(t *testing.T, rep *clients.Report, entries []requestlog.Entry, unlogged ...string) {
	t.Helper()
	want, got := logTruth(entries), kscopeTruth(rep)
	dropAPIs(want, unlogged)
	dropAPIs(got, unlogged)
	for _, id := range slices.Sorted(maps.Keys(want)) {
		w, g := want[id], got[id]
		if g == nil {
			t.Errorf("%s: %d requests logged, no row", id, w.requests)
			continue
		}
		if g.requests < w.requests || g.requests-w.requests > g.unanswered || !versionsCover(g.versions, w.versions, g.unanswered) {
			t.Errorf("%s: %d requests (%d unanswered) %v, the log has %d %v", id, g.requests, g.unanswered, g.versions, w.requests, w.versions)
		}
		if g.unanswered > 0 {
			t.Logf("%s: %d requests unanswered, %d not in the log", id, g.unanswered, g.requests-w.requests)
		}
		if !maps.Equal(g.software, w.software) {
			t.Errorf("%s: software %v, the log's clientInformation %v", id, slices.Sorted(maps.Keys(g.software)), slices.Sorted(maps.Keys(w.software)))
		}
	}
	for id, g := range got {
		if want[id] == nil {
			t.Errorf("%s: a row of %d requests the log does not have", id, g.requests)
		}
	}
}

// dropAPIs leaves the APIs named out of every client's counts.
func dropAPIs(m map[string]*clientTruth, apis []string) {
	for _, c := range m {
		for _, api := range apis {
			for v, n := range c.versions {
				if strings.HasPrefix(v, api+" v") {
					delete(c.versions, v)
					c.requests -= n
				}
			}
		}
	}
}

// versionsCover: got has every version of want at least as often, and
// at most as many extra requests as were unanswered.
func versionsCover(got, want map[string]int64, unanswered int64) bool {
	var extra int64
	for v, n := range got {
		if n < want[v] {
			return false
		}
		extra += n - want[v]
	}
	for v := range want {
		if _, ok := got[v]; !ok {
			return false
		}
	}
	return extra <= unanswered
}

// checkRejected: the requests kscope says target rejects are, per client
// id, API and version, exactly those the release's protocol definitions
// (the releases table, checked against its jar) put below its oldest
// accepted version; and, for 4.0.0, exactly those Kafka 3.9 itself marks
// deprecated for removal in 4.0 (requestApiVersionDeprecated).
func checkRejected(t *testing.T, rep *clients.Report, entries []requestlog.Entry, target string, useDeprecated bool) {
	t.Helper()
	rel, err := releases.Lookup(target)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, e := range entries {
		lo, _, served := rel.Range(e.APIKey)
		removed := served && e.APIVersion < lo
		if useDeprecated && removed != e.Deprecated {
			t.Errorf("%s %s v%d: the table says removed=%v, Kafka 3.9 deprecated=%v", e.ClientID, e.APIName, e.APIVersion, removed, e.Deprecated)
		}
		if removed {
			want[fmt.Sprintf("%s %s v%d", e.ClientID, clients.APIName(e.APIKey), e.APIVersion)]++
		}
	}
	got := map[string]int64{}
	for _, row := range rep.Clients {
		for _, rj := range row.Rejected {
			got[fmt.Sprintf("%s %s v%d", row.ClientID, rj.API, rj.Version)] += rj.Requests
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("rejected by %s: kscope %v\nthe definitions over the log %v", target, got, want)
	}
	if len(want) == 0 {
		t.Errorf("no request the target rejects: the check saw nothing")
	}
}

// checkSettings: what kscope recovered from the wire is what each client
// was configured with.
func checkSettings(t *testing.T, rep *clients.Report, c clientzoo.Client) {
	t.Helper()
	if p := c.Producer; p != nil {
		row := rowWith(rep, c.ClientID, func(r *clients.Client) bool { return r.Producer != nil })
		if row == nil {
			t.Errorf("%s: no producer row", c.Kind)
		} else {
			checkProducer(t, c, row.Producer)
		}
	}
	if k := c.Consumer; k != nil {
		row := rowWith(rep, c.ClientID, func(r *clients.Client) bool { return r.Consumer != nil })
		if row == nil {
			t.Errorf("%s: no consumer row", c.Kind)
			return
		}
		cs := row.Consumer
		if w, m := mode(cs.MaxWaitMs), mode(cs.MinBytes); w != int32(k.FetchMaxWaitMs) || m != int32(k.FetchMinBytes) {
			t.Errorf("%s: max_wait_ms %v min_bytes %v, configured %d and %d", c.Kind, cs.MaxWaitMs, cs.MinBytes, k.FetchMaxWaitMs, k.FetchMinBytes)
		}
		grp := rowWith(rep, c.ClientID, func(r *clients.Client) bool { return len(r.Groups) > 0 })
		if grp == nil || !slices.ContainsFunc(grp.Groups, func(g clients.Group) bool { return g.Group == k.Group && g.Protocol == k.GroupProtocol }) {
			t.Errorf("%s: group %s (%s) not found: %+v", c.Kind, k.Group, k.GroupProtocol, grp)
		}
	}
}

func checkProducer(t *testing.T, c clientzoo.Client, p *clients.Producer) {
	t.Helper()
	cfg := c.Producer
	if len(p.Acks) != 1 || p.Acks[cfg.Acks] == 0 {
		t.Errorf("%s: acks %v, configured %d", c.Kind, p.Acks, cfg.Acks)
	}
	if len(p.Codecs) != 1 || p.Codecs[cfg.Compression] == 0 {
		t.Errorf("%s: codecs %v, configured %s", c.Kind, p.Codecs, cfg.Compression)
	}
	idempotent := cfg.Idempotent || cfg.Transactional
	if (p.Idempotent == p.Requests) != idempotent || (p.Idempotent == 0) == idempotent {
		t.Errorf("%s: %d of %d produce requests idempotent, configured %v", c.Kind, p.Idempotent, p.Requests, idempotent)
	}
	if cfg.Transactional != slices.Contains(p.TransactionalIDs, c.TransactionalID()) {
		t.Errorf("%s: transactional ids %v, configured transactional %v", c.Kind, p.TransactionalIDs, cfg.Transactional)
	}
	// batch.size bounds every batch (Sarama's Flush.Bytes is per
	// request, not per batch); linger.ms is the gap between a
	// connection's produce requests while records trickle in, so it lies
	// within their distribution.
	var maxBatch float64
	for _, tp := range p.Topics {
		maxBatch = max(maxBatch, tp.BytesPerBatch.Max)
	}
	if c.Library != clientzoo.Sarama && maxBatch > float64(cfg.BatchSize)*1.02 {
		t.Errorf("%s: a batch of %.0f bytes, batch.size %d", c.Kind, maxBatch, cfg.BatchSize)
	}
	// A producer that sends one request per partition (librdkafka) has
	// gaps of about linger.ms over the partitions.
	// A producer whose records all came at once sent full batches, and
	// its few gaps say nothing of linger.ms.
	switch g := p.GapMs; {
	case g.N < 20:
		t.Logf("%s: %d gaps between produce requests: linger not measured", c.Kind, g.N)
	case float64(cfg.LingerMs) > g.Max || float64(cfg.LingerMs) < g.P50/4:
		t.Errorf("%s: linger.ms %d outside the gaps between its produce requests %+v", c.Kind, cfg.LingerMs, g)
	}
	t.Logf("%-26s acks %v codecs %v idempotent %d/%d records/batch %+v bytes/batch max %.0f gap %+v linger≈%.1f",
		c.Kind, p.Acks, p.Codecs, p.Idempotent, p.Requests, p.Topics[0].RecordsPerBatch, maxBatch, p.GapMs, p.InferredLingerMs)
}

func mode(m map[int32]int64) int32 {
	var best int32
	n := int64(-1)
	for v, c := range m {
		if c > n || (c == n && v < best) {
			best, n = v, c
		}
	}
	return best
}

// TestClients runs real clients of several kinds and ages (the client
// zoo: Java 4.x and 2.0, librdkafka negotiating and pinned to 0.9,
// kafka-python pinned to 0.10.1, franz-go, Sarama pinned to 0.10.2 and to
// 3.9, a reconnect storm and an all-topics Metadata storm) against Kafka
// 3.9.1, which still accepts the versions 4.0 removed, and checks kscope
// clients on the capture against the broker's request log.
func TestClients(t *testing.T) {
	zoo := clientzoo.Default("cz")
	run := runZoo(t, "3.9.1", 19610, zoo)
	for _, r := range run.results {
		if r.Err != nil {
			t.Fatalf("%s failed against Kafka 3.9.1: %v\n%s", r.Client.Kind, r.Err, r.Output)
		}
	}
	rep := run.clientsOf(t, "4.0")
	t.Run("requests and software equal the log", func(t *testing.T) { checkAgainstLog(t, rep, run.entries) })
	t.Run("rejected by 4.0", func(t *testing.T) { checkRejected(t, rep, run.entries, "4.0", false) })
	t.Run("rejected by 4.0.0 as 3.9 deprecates", func(t *testing.T) {
		checkRejected(t, run.clientsOf(t, "4.0.0"), run.entries, "4.0.0", true)
	})
	t.Run("settings", func(t *testing.T) {
		for _, r := range run.results {
			if r.Skipped == "" && r.Client.Library != clientzoo.Storm {
				checkSettings(t, rep, r.Client)
			}
		}
	})
	t.Run("storms ranked first", func(t *testing.T) {
		// Every storm finding comes before any other, each storm client
		// has its own, and no other client has one. (A reconnect loop that
		// asks for metadata on each connection is a metadata storm too.)
		want := map[string]string{"connection-storm": "cz-storm-reconnect", "metadata-storm": "cz-storm-metadata"}
		found := map[string]bool{}
		others := false
		for _, f := range rep.Findings {
			storm := strings.HasSuffix(f.Rule, "-storm")
			switch {
			case storm && others:
				t.Errorf("a storm ranked after other findings: %+v", f)
			case storm && !strings.Contains(f.Client, "cz-storm-"):
				t.Errorf("a storm of a client that does not storm: %+v", f)
			case storm && strings.Contains(f.Client, "`"+want[f.Rule]+"`"):
				found[f.Rule] = true
			case !storm:
				others = true
			}
		}
		if len(found) != len(want) {
			t.Errorf("storms found %v, want %v; findings %+v", found, want, rep.Findings)
		}
	})
	out, _, code := runCLI([]string{"clients", "-q", "--port", strconv.Itoa(run.port), "--target-version", "4.0", run.pcap})
	if code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	t.Logf("kscope clients --target-version 4.0:\n%s", out)
}

// TestClientsKafka4 runs the current clients (a KIP-848 consumer among
// them) and one pinned to Kafka 0.10.2 against the pinned Kafka 4 broker:
// the current ones' rows equal the log, the KIP-848 group is seen as
// such, and the old client, which Kafka 4 turns away without a line in
// its request log, is named with the versions it sent.
func TestClientsKafka4(t *testing.T) {
	zoo := []clientzoo.Client{
		clientzoo.JavaCurrent("k4-java", "k4-java"),
		clientzoo.JavaKIP848("k4-java-kip848", "k4-java-kip848"),
		clientzoo.LibrdkafkaDefaults("k4-librdkafka", "k4-librdkafka"),
		clientzoo.FranzGoClient("k4-franz-go", "k4-franz-go"),
		clientzoo.SaramaOld("k4-sarama-old", "k4-sarama-old"),
	}
	zoo[4].Timeout = 8 * time.Second // it is refused within its first second, then only retries
	run := runZoo(t, lab.KafkaVersion, 19620, zoo)
	rep := run.clientsOf(t, "4.0")
	for _, r := range run.results {
		switch {
		case r.Client.ClientID == "k4-sarama-old":
			if r.Err == nil {
				t.Errorf("Kafka %s served Sarama pinned to 0.10.2", lab.KafkaVersion)
			}
		case r.Err != nil:
			t.Fatalf("%s failed against Kafka %s: %v\n%s", r.Client.Kind, lab.KafkaVersion, r.Err, r.Output)
		default:
			checkSettings(t, rep, r.Client)
		}
	}
	old := &clients.Report{}
	for _, row := range rep.Clients {
		if row.ClientID == "k4-sarama-old" {
			old.Clients = append(old.Clients, row)
		}
	}
	var current []requestlog.Entry
	for _, e := range run.entries {
		if e.ClientID != "k4-sarama-old" {
			current = append(current, e)
		}
	}
	checkAgainstLog(t, withoutClient(rep, "k4-sarama-old"), current)
	// What Kafka 4 refuses, it does not log: kscope names each version,
	// and the log has none of them.
	logged := map[string]int{}
	for _, e := range run.entries {
		if e.ClientID == "k4-sarama-old" {
			logged[fmt.Sprintf("%s v%d", clients.APIName(e.APIKey), e.APIVersion)]++
		}
	}
	var rejected []string
	for _, row := range old.Clients {
		for _, rj := range row.Rejected {
			v := fmt.Sprintf("%s v%d", rj.API, rj.Version)
			rejected = append(rejected, v)
			if logged[v] > 0 {
				t.Errorf("%s: Kafka %s logged %d requests of a version kscope says it rejects", v, lab.KafkaVersion, logged[v])
			}
		}
	}
	if !slices.Contains(rejected, "Produce v2") {
		t.Errorf("the refused client's rejected versions: %v, want Produce v2 among them", rejected)
	}
	t.Logf("the client Kafka %s refused, as kscope saw it: rejected %v; logged of it: %v", lab.KafkaVersion, rejected, logged)
}

// withoutClient is rep without the rows of one client id.
func withoutClient(rep *clients.Report, clientID string) *clients.Report {
	out := *rep
	out.Clients = slices.DeleteFunc(slices.Clone(rep.Clients), func(c clients.Client) bool { return c.ClientID == clientID })
	return &out
}

// checkClientsPrincipals runs kscope clients on a capture of a SASL_SSL
// listener with its key log: every client's requests, versions and
// software equal the log's, and each client id's rows carry the principal
// the broker logged (User:NAME), its pre-authentication requests
// (ApiVersions, SaslHandshake, SaslAuthenticate) included.
func checkClientsPrincipals(t *testing.T, pcap string, port int, keyLog string, entries []requestlog.Entry) {
	t.Helper()
	out, errOut, code := runCLI([]string{"clients", "--format", "json", "-q", "--port", strconv.Itoa(port), "--tls-keylog", keyLog, pcap})
	if code != 0 {
		t.Fatalf("kscope clients: exit %d: %s", code, errOut)
	}
	var rep clients.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	checkAgainstLog(t, &rep, entries, "ApiVersions", "SASLHandshake", "SASLAuthenticate")
	want := map[string]map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Principal, "User:"); ok && name != "ANONYMOUS" {
			if want[e.ClientID] == nil {
				want[e.ClientID] = map[string]bool{}
			}
			want[e.ClientID][name] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("the log names no principal: nothing to check")
	}
	got := map[string]map[string]bool{}
	for _, row := range rep.Clients {
		if got[row.ClientID] == nil {
			got[row.ClientID] = map[string]bool{}
		}
		got[row.ClientID][row.Principal] = true
	}
	for id, names := range want {
		if !maps.Equal(got[id], names) {
			t.Errorf("%s: principals %v, the log's %v", id, got[id], names)
		}
	}
	t.Logf("principals per client id: %v", got)
}

// checkClientsRecording runs kscope clients on a recording: each client
// id named has its principal and produced n requests.
func checkClientsRecording(t *testing.T, dir string, principals map[string]string, n int64) {
	t.Helper()
	out, errOut, code := runCLI([]string{"clients", "--format", "json", "-q", dir})
	if code != 0 {
		t.Fatalf("kscope clients %s: exit %d: %s", dir, code, errOut)
	}
	var rep clients.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	checkClientsProduced(t, "kscope clients on the recording", &rep, principals, n)
}

// checkClientsProduced: each client id's producer row has its principal
// and n produce requests.
func checkClientsProduced(t *testing.T, what string, rep *clients.Report, principals map[string]string, n int64) {
	t.Helper()
	for id, principal := range principals {
		row := rowWith(rep, id, func(r *clients.Client) bool { return r.Producer != nil })
		switch {
		case row == nil:
			t.Errorf("%s: no producer row for %s", what, id)
		case row.Principal != principal || row.Producer.Requests != n || len(row.Software) == 0:
			t.Errorf("%s: %s: principal %q, %d produce requests, software %v; want %q, %d, announced", what, id, row.Principal,
				row.Producer.Requests, row.Software, principal, n)
		}
	}
}
