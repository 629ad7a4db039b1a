package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// testFleet is issue 17's fleet check on the scenario's cluster: a `kscope
// agent` per broker (its pid, log dir and host-side veth), a real
// Prometheus (scripts/observability-tools.sh) scraping the three, and a
// real OpenTelemetry Collector taking the agents' OTLP traces. Broker 2's
// file system is frozen twice under acks=all load. Prometheus must return
// each broker's series by broker_id with the cluster's id, every query of
// the Grafana dashboard must run without error, and the collector must
// hold traces of slow requests from every broker: broker 2's own appends,
// and the other leaders' waits for follower 2.
func testFleet(ctx context.Context, t *testing.T, c *lab.Cluster) {
	prom, otelcol := obsTool(t, "prometheus"), obsTool(t, "otelcol")
	work := t.TempDir()

	// The collector: OTLP/HTTP in, every trace to a JSON Lines file.
	otlpAddr := freeLoopbackAddr(t)
	tracesFile := filepath.Join(work, "traces.jsonl")
	colCfg := filepath.Join(work, "otelcol.yaml")
	writeFile(t, colCfg, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, otlpAddr, tracesFile))
	col := startServer(ctx, t, "otelcol", otelcol, "--config="+colCfg)
	waitListening(t, otlpAddr, col)

	var agents []*agentCLI
	for _, b := range c.Brokers() {
		port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
		agents = append(agents, startAgent(ctx, t, true, "--pid", strconv.Itoa(b.PID()), "--log-dirs", b.LogDirs()[0], "--iface", b.HostIf(),
			"--port", port, "--out", filepath.Join(work, fmt.Sprintf("slow-%d", b.NodeID())), "--slow", "100ms", "--sched", "--otlp-endpoint", otlpAddr))
	}
	var targets []string
	for _, a := range agents {
		targets = append(targets, strconv.Quote(strings.TrimPrefix(a.base, "http://")))
	}
	promAddr := freeLoopbackAddr(t)
	promCfg := filepath.Join(work, "prometheus.yml")
	writeFile(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kscope
    static_configs:
      - targets: [%s]
`, strings.Join(targets, ", ")))
	pr := startServer(ctx, t, "prometheus", prom, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(work, "tsdb"),
		"--web.listen-address="+promAddr)
	waitListening(t, promAddr, pr)

	mnt := c.Brokers()[impaired-1].MountPoint()
	windows := underClusterLoad(ctx, t, c, func(context.Context) []freezeWindow {
		var ws []freezeWindow
		for range 2 {
			time.Sleep(time.Second)
			ws = append(ws, freezeFor(t, mnt, 500*time.Millisecond))
		}
		time.Sleep(3 * time.Second) // the agents write slow requests 1 s after they end; Prometheus scrapes
		return ws
	})

	// Prometheus: each broker's series by broker_id, all of the cluster.
	api := "http://" + promAddr
	up := promQuery(t, api, "kscope_agent_up")
	byBroker := map[string]string{}
	for _, s := range up {
		byBroker[s.Metric["broker_id"]] = s.Metric["cluster_id"]
	}
	for _, b := range c.Brokers() {
		id := strconv.Itoa(b.NodeID())
		if byBroker[id] != c.ClusterID() {
			t.Errorf("kscope_agent_up{broker_id=%q}: cluster_id %q, want %q (all: %v)", id, byBroker[id], c.ClusterID(), byBroker)
		}
	}
	for _, s := range promQuery(t, api, `sum by (broker_id) (kscope_requests_total{api="Produce"})`) {
		t.Logf("produce requests counted by broker %s: %s", s.Metric["broker_id"], s.Value[1])
	}
	if n := len(promQuery(t, api, `sum by (broker_id) (kscope_requests_total{api="Produce"}) > 0`)); n != len(c.Brokers()) {
		t.Errorf("%d brokers with produce requests in Prometheus, want %d", n, len(c.Brokers()))
	}
	checkDashboardQueries(t, api, c.ClusterID())

	// The agents send what is left when they stop.
	for _, a := range agents {
		if err := a.stop(t, syscall.SIGINT); err != nil {
			t.Errorf("agent ended with %v: %s", err, a.errOut())
		}
	}
	time.Sleep(2 * time.Second) // the collector writes its file
	if d := os.Getenv("KSCOPE_KEEP_FLEET"); d != "" {
		_ = exec.Command("cp", "-a", work, d).Run()
	}
	checkTraces(t, tracesFile, windows)
}

// obsTool returns the path of a real observability server, built (once,
// cached) by scripts/observability-tools.sh.
func obsTool(t *testing.T, name string) string {
	t.Helper()
	script, err := filepath.Abs("../../scripts/observability-tools.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, name).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		labtest.Unavailable(t, "%s: %v: %s", name, err, stderr)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, name+"="); ok {
			return p
		}
	}
	labtest.Unavailable(t, "%s: observability-tools.sh printed no path: %s", name, out)
	return ""
}

// startServer runs a server until the test ends.
func startServer(ctx context.Context, t *testing.T, name, bin string, args ...string) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return &out
}

// freeLoopbackAddr is a 127.0.0.1 port nothing listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitListening waits up to 60 s for addr to accept connections.
func waitListening(t *testing.T, addr string, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s after 60 s: %s", addr, out.String())
}

// promSample is one series of an instant query's result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promQuery runs an instant query; a query error fails the test.
func promQuery(t *testing.T, api, q string) []promSample {
	t.Helper()
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s %s", q, err, r.Status, r.Error)
	}
	var out []promSample
	_ = json.Unmarshal(r.Data.Result, &out) // a scalar or matrix result has no series list
	return out
}

var dashVarRE = regexp.MustCompile(`\$(__rate_interval|cluster|broker|topic|datasource)\b|\$\{(\w+)\}`)

// checkDashboardQueries runs every query of the Grafana dashboard against
// the real Prometheus, its variables filled in as Grafana would (the
// cluster, every broker and topic, a 5 s rate interval): none may fail,
// and the cluster view's must return a series per broker.
func checkDashboardQueries(t *testing.T, api, clusterID string) {
	t.Helper()
	data, err := os.ReadFile("../../deploy/grafana/kscope-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
			Panels []json.RawMessage `json:"panels"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	subst := func(expr string) string {
		return dashVarRE.ReplaceAllStringFunc(expr, func(v string) string {
			switch strings.Trim(v, "${}") {
			case "__rate_interval":
				return "5s"
			case "cluster":
				return regexp.QuoteMeta(clusterID)
			default:
				return ".*"
			}
		})
	}
	queries, withData := 0, 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			res := promQuery(t, api, subst(tg.Expr))
			if len(res) > 0 {
				withData++
			}
			if strings.Contains(tg.Expr, "by (le, broker_id)") || strings.Contains(tg.Expr, "by (broker_id)") || strings.HasPrefix(tg.Expr, "kscope_agent_up{") {
				if strings.Contains(tg.Expr, "journal") {
					continue // the cluster's journal commits may be too few in 5 s windows
				}
				if len(res) < 3 {
					t.Errorf("cluster panel %q: %d series, want one per broker: %s", p.Title, len(res), subst(tg.Expr))
				}
			}
		}
	}
	t.Logf("dashboard: %d queries ran on Prometheus without error, %d returned series", queries, withData)
}

// checkTraces reads the collector's file: there must be traces from every
// broker, broker 2's own slow appends (slow-write with an append span)
// and the others' waits for follower 2 (a replication wait span naming
// it), each child span inside its root; ≥ 90% of the other leaders'
// slow requests during the freezes must be explained as replication (the
// agent explains each from the events and follower fetches it holds).
func checkTraces(t *testing.T, path string, windows []freezeWindow) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the collector wrote no traces: %v", err)
	}
	defer f.Close()
	type trace struct {
		broker string
		root   *tracepb.Span
		kids   []*tracepb.Span
	}
	traces := map[string]*trace{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var td tracepb.TracesData
		if err := protojson.Unmarshal(sc.Bytes(), &td); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rs := range td.ResourceSpans {
			var broker string
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "kafka.broker.id" {
					broker = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					id := fmt.Sprintf("%x", sp.TraceId)
					tr := traces[id]
					if tr == nil {
						tr = &trace{broker: broker}
						traces[id] = tr
					}
					if len(sp.ParentSpanId) == 0 {
						tr.root = sp
					} else {
						tr.kids = append(tr.kids, sp)
					}
				}
			}
		}
	}
	attr := func(sp *tracepb.Span, key string) string {
		for _, kv := range sp.Attributes {
			if kv.Key == key {
				return kv.Value.GetStringValue()
			}
		}
		return ""
	}
	perBroker := map[string]int{}
	causes := map[string]int{}
	ownAppends, followerWaits := 0, 0
	during, replication := 0, 0
	for id, tr := range traces {
		if tr.root == nil {
			t.Errorf("trace %s has no root span", id)
			continue
		}
		perBroker[tr.broker]++
		causes["broker "+tr.broker+" "+attr(tr.root, "kscope.cause")]++
		start, end := time.Unix(0, int64(tr.root.StartTimeUnixNano)), time.Unix(0, int64(tr.root.EndTimeUnixNano))
		if tr.broker != strconv.Itoa(int(impaired)) && duringAnyWindow(start, end, windows) {
			during++
			if attr(tr.root, "kscope.cause") == "replication" {
				replication++
			}
		}
		for _, k := range tr.kids {
			if k.StartTimeUnixNano < tr.root.StartTimeUnixNano-uint64(time.Second) || k.EndTimeUnixNano > tr.root.EndTimeUnixNano+uint64(time.Second) {
				t.Errorf("trace %s: span %q lies outside its request", id, k.Name)
			}
			switch {
			case tr.broker == strconv.Itoa(int(impaired)) && attr(tr.root, "kscope.cause") == "slow-write" && strings.HasPrefix(k.Name, "append "+clusterTopic+"-"):
				ownAppends++
			case tr.broker != strconv.Itoa(int(impaired)) && strings.HasPrefix(k.Name, fmt.Sprintf("replication wait: follower %d ", impaired)):
				followerWaits++
			}
		}
	}
	t.Logf("traces by broker %v, by cause %v; broker %d's slow appends: %d spans; waits for follower %d: %d spans", perBroker, causes, impaired, ownAppends, impaired, followerWaits)
	for _, b := range []string{"1", "2", "3"} {
		if perBroker[b] == 0 {
			t.Errorf("no trace from broker %s's agent", b)
		}
	}
	if ownAppends == 0 {
		t.Errorf("no trace of broker %d's own slow append", impaired)
	}
	if followerWaits == 0 {
		t.Errorf("no trace of another leader's wait for follower %d", impaired)
	}
	t.Logf("%d of the other leaders' %d traces during the freezes explained as replication", replication, during)
	if during < 5 || float64(replication) < 0.9*float64(during) {
		t.Errorf("%d of %d traces of the other leaders during the freezes on replication, want >= 90%% of at least 5", replication, during)
	}
}

func duringAnyWindow(a, b time.Time, windows []freezeWindow) bool {
	for _, w := range windows {
		if w.overlaps(a, b, 0) {
			return true
		}
	}
	return false
}
