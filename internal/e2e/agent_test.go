package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/agent"
	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/metrics"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
)

// requestCounter counts the requests a franz-go client wrote, by API:
// what the client sent, to compare with what the agent counted.
type requestCounter struct {
	mu     sync.Mutex
	byName map[string]int
}

func newRequestCounter() *requestCounter { return &requestCounter{byName: map[string]int{}} }

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	c.byName[kmsg.NameForKey(key)]++
	c.mu.Unlock()
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.byName {
		out[k] = v
	}
	return out
}

// agentCLI is a running `kscope agent` and its address.
type agentCLI struct {
	*iotCLI
	base string // http://host:port
}

var servingRE = regexp.MustCompile(`agent: serving http://([^/]+)/metrics`)

// startAgent runs `kscope agent ARGS --listen 127.0.0.1:0` and waits until
// /healthz says ok (or until wantOK is false: only until it serves).
func startAgent(ctx context.Context, t *testing.T, wantOK bool, args ...string) *agentCLI {
	t.Helper()
	c := startCLI(ctx, t, "agent: serving", append([]string{"agent", "--listen", "127.0.0.1:0"}, args...)...)
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
		}
	})
	m := servingRE.FindStringSubmatch(c.errOut())
	if m == nil {
		t.Fatalf("no address in: %s", c.errOut())
	}
	a := &agentCLI{iotCLI: c, base: "http://" + m[1]}
	if wantOK {
		a.waitHealth(t, 30*time.Second, func(s agentStatus) bool { return s.Status == "ok" })
	}
	return a
}

type agentStatus struct {
	Code      int
	Status    string   `json:"status"`
	Degraded  []string `json:"degraded"`
	BrokerPID int      `json:"broker_pid"`
	Capture   struct {
		Up bool `json:"up"`
	} `json:"capture"`
	Trace struct {
		Up bool `json:"up"`
	} `json:"trace"`
}

func (a *agentCLI) health(t *testing.T) agentStatus {
	t.Helper()
	resp, err := http.Get(a.base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer resp.Body.Close()
	var s agentStatus
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	s.Code = resp.StatusCode
	if (s.Status == "ok") != (s.Code == http.StatusOK) {
		t.Errorf("/healthz: status %q with HTTP %d", s.Status, s.Code)
	}
	return s
}

// waitHealth polls /healthz until ok(status), and fails after d.
func (a *agentCLI) waitHealth(t *testing.T, d time.Duration, ok func(agentStatus) bool) agentStatus {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := a.health(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz stayed %+v for %v; agent: %s", s, d, a.errOut())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape reads /metrics with the Prometheus text parser.
func (a *agentCLI) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(a.base + "/metrics")
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// metricSum adds the values (counters, gauges) or the sample counts
// (histograms) of the series of name whose labels include want.
func metricSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// TestAgentMetrics runs `kscope agent` against a real broker under produce
// and consume load and checks /metrics against what the clients sent (their
// own count of requests by API) and what the broker logged: requests per
// API, client and topic; latency histogram counts equal to the requests
// answered; records produced; bytes written to the segments equal to the
// record batch bytes produced.
func TestAgentMetrics(t *testing.T) {
	labtest.RequireRoot(t)
	libs := labtest.RequireKafka(t)
	b := labtest.Broker(t, lab.BrokerConfig{RequestLog: true, LibsDir: libs})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
	slowDir := t.TempDir()
	a := startAgent(ctx, t, true, "--iface", "lo", "--port", port, "--pid", strconv.Itoa(b.PID()),
		"--log-dirs", strings.Join(b.LogDirs(), ","), "--out", slowDir, "--slow", "1ms", "--sched", "--runq-min", "100us")

	const topic, records, producers = "agent-metrics", 2000, 4
	pc, cc := newRequestCounter(), newRequestCounter()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("agent-p"), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.WithHooks(pc))
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for g := range producers {
		wg.Go(func() {
			for i := g; i < records; i += producers {
				r := &kgo.Record{Value: []byte(fmt.Sprintf("agent value %d", i))}
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					errs <- err
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("producing: %v", err)
	}
	prod.Close()

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("agent-c"), kgo.ConsumerGroup("agent-g"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(cc))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < records && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil && ctx.Err() == nil {
			t.Fatalf("consuming: %v", err)
		}
		got += fs.NumRecords()
	}
	cons.Close() // leaves the group, closes its connections: every request answered or ended

	// The last requests reach the capture, and the decoder sees the
	// connections close; then nothing is in flight.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(15 * time.Second)
	for {
		time.Sleep(time.Second)
		fams = a.scrape(t)
		if metricSum(fams, "kscope_agent_requests_in_flight", nil) == 0 &&
			metricSum(fams, "kscope_requests_total", map[string]string{"client_id": "agent-c", "api": "LeaveGroup"}) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests still in flight after the clients closed")
		}
	}

	for client, counter := range map[string]*requestCounter{"agent-p": pc, "agent-c": cc} {
		for api, n := range counter.counts() {
			sel := map[string]string{"client_id": client, "api": api}
			if got := metricSum(fams, "kscope_requests_total", sel); got != float64(n) {
				t.Errorf("kscope_requests_total{client_id=%q,api=%q} = %v, the client sent %d", client, api, got, n)
			}
		}
	}
	produces := pc.counts()["Produce"]
	sel := map[string]string{"api": "Produce", "topic": topic}
	if got := metricSum(fams, "kscope_request_duration_seconds", sel); got != float64(produces) {
		t.Errorf("produce latency histogram count %v, want %d produce requests", got, produces)
	}
	if got := metricSum(fams, "kscope_requests_total", sel); got != float64(produces) {
		t.Errorf("kscope_requests_total{api=Produce,topic=%s} = %v, want %d", topic, got, produces)
	}
	// Every request answered: the histograms count them all.
	if un := metricSum(fams, "kscope_unanswered_requests_total", nil); un != 0 {
		t.Logf("unanswered requests: %v", un)
	}
	all, hist := metricSum(fams, "kscope_requests_total", nil), metricSum(fams, "kscope_request_duration_seconds", nil)
	if un := metricSum(fams, "kscope_unanswered_requests_total", nil); all-un != hist {
		t.Errorf("latency histograms count %v requests; requests %v less unanswered %v", hist, all, un)
	}
	if got := metricSum(fams, "kscope_records_total", sel); got != records {
		t.Errorf("records produced: %v, want %d", got, records)
	}
	if got := metricSum(fams, "kscope_records_total", map[string]string{"api": "Fetch", "topic": topic}); got != records {
		t.Errorf("records fetched: %v, want %d", got, records)
	}
	batchBytes := metricSum(fams, "kscope_record_bytes_total", sel)
	written := metricSum(fams, "kscope_write_bytes_total", map[string]string{"topic": topic})
	if batchBytes == 0 || written != batchBytes {
		t.Errorf("bytes written to %s's segments %v, record batch bytes produced %v: want equal", topic, written, batchBytes)
	}
	if n := metricSum(fams, "kscope_write_duration_seconds", map[string]string{"topic": topic}); n < float64(produces) {
		t.Errorf("%v writes timed, want at least one per produce request (%d)", n, produces)
	}
	// --sched: the broker threads' waits for a CPU of 100 us or more
	// (four producers and the broker on 2 CPUs always have some), by
	// class; the handlers and network threads among them.
	for _, class := range []string{metrics.ThreadHandler, metrics.ThreadNetwork} {
		if n := metricSum(fams, "kscope_run_delay_seconds", map[string]string{"thread": class}); n == 0 {
			t.Errorf("kscope_run_delay_seconds{thread=%q}: no waits for a CPU counted", class)
		}
	}
	for _, name := range []string{"kscope_agent_capture_drops_total", "kscope_agent_skipped_bytes_total",
		"kscope_agent_decode_errors_total", "kscope_agent_ringbuf_drops_total"} {
		if v := metricSum(fams, name, nil); v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}

	// The broker's own log agrees on the produce requests of agent-p.
	f, err := os.Open(b.RequestLogPath())
	if err != nil {
		t.Fatal(err)
	}
	entries, err := requestlog.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	logged := 0
	for _, e := range entries {
		if e.ClientID == "agent-p" && e.APIKey == 0 {
			logged++
		}
	}
	if logged != produces {
		t.Errorf("the broker logged %d produce requests of agent-p, the client counted %d", logged, produces)
	}

	if err := a.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("kscope agent on SIGTERM: %v: %s", err, a.errOut())
	}
	t.Logf("%d produce requests (%d records), %v fetched records, %v bytes written; agent: %s", produces, sent.Load(),
		metricSum(fams, "kscope_records_total", map[string]string{"api": "Fetch"}), written, strings.TrimSpace(a.errOut()))
	checkSlowLog(t, slowDir, metricSum(fams, "kscope_agent_slow_requests_total", nil))
}

// checkSlowLog: the agent's slow-request log is one closed recording of
// produce requests at or over its threshold (and their context), with the
// writes around them, which explain reads with the log's threshold.
func checkSlowLog(t *testing.T, dir string, counted float64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, agent.SegmentPrefix+"*"))
	if len(segs) != 1 {
		t.Fatalf("slow-request log segments %v, want 1", segs)
	}
	meta, err := recording.ReadMeta(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if meta.SlowLog == nil || meta.SlowLog.ThresholdMs != 1 || meta.End.IsZero() || meta.Tool != "kscope agent" {
		t.Fatalf("segment meta: %+v", meta)
	}
	slow, context := 0, 0
	err = recording.Lines(filepath.Join(segs[0], recording.RequestsFile), func(line []byte, _ int64) error {
		var r event.Request
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.API == "Produce" && r.End.Sub(r.Arrival) >= time.Millisecond {
			slow++
		} else {
			context++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A slow request dropped by the rate limit can still be written as the
	// context of a later one (a request it queued behind): it is counted
	// as context, and is slow by latency.
	if slow == 0 || float64(slow) < counted || float64(slow+context) != counted+float64(meta.SlowLog.ContextRequests) {
		t.Errorf("slow log: %d slow produce requests (agent counted %v), %d others (meta says %d context requests)",
			slow, counted, context, meta.SlowLog.ContextRequests)
	}
	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"explain", segs[0], "--summary"}, &out, &errOut); code != 0 {
		t.Fatalf("explain %s: exit %d: %s", segs[0], code, errOut.String())
	}
	if !strings.Contains(out.String(), "agent slow log") {
		t.Errorf("explain did not take the slow log's threshold:\n%s", out.String())
	}
	// --sched: the slow requests' connections' threads and the waits for
	// a CPU around them, which explain counts.
	kinds := map[string]int{}
	clients := map[string]bool{}
	err = recording.Lines(filepath.Join(segs[0], recording.SchedFile), func(line []byte, _ int64) error {
		var k struct{ Kind, Client string }
		if err := json.Unmarshal(line, &k); err != nil {
			return err
		}
		kinds[k.Kind]++
		if k.Kind == event.KindConnThread {
			if clients[k.Client] {
				t.Errorf("connection %s's thread written twice", k.Client)
			}
			clients[k.Client] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if meta.Sched == nil || kinds[event.KindRunDelay] == 0 || kinds[event.KindConnThread] == 0 {
		t.Errorf("slow log's scheduling evidence: meta %+v, events %v", meta.Sched, kinds)
	}
	if m := regexp.MustCompile(`(\d+) run-queue delays`).FindStringSubmatch(out.String()); m == nil || m[1] == "0" {
		t.Errorf("explain counted no run-queue delay in the slow log:\n%s", out.String())
	}
	t.Logf("slow log: %d slow produce requests, %d context requests; explain:\n%s", slow, context, out.String())
}

// TestLabtestHelperProcess runs labtest's helper jobs (the producer in a
// network namespace); in a normal run it does nothing.
func TestLabtestHelperProcess(t *testing.T) { labtest.HelperProcess(t) }

// TestAgentChaos: `kscope agent` keeps serving and recovers while a
// producer in a network namespace writes through a veth to the broker:
// the broker is killed (SIGKILL) and started again, the veth's host end
// goes down and up, then is deleted and created again (a new ifindex,
// which a packet socket never reports). After each, /healthz says what
// is degraded, then ok again, and the agent counts produce requests and
// traced writes again.
func TestAgentChaos(t *testing.T) {
	labtest.RequireRoot(t)
	libs := labtest.RequireKafka(t)
	ns := labtest.NewNetns(t)
	cfg := lab.BrokerConfig{Dir: t.TempDir(), LibsDir: libs, AdvertisedHost: ns.HostIP.String()}
	b := labtest.Broker(t, cfg)
	_, portStr, _ := strings.Cut(b.Addr(), ":")
	cfg.Port, _ = strconv.Atoi(portStr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	a := startAgent(ctx, t, true, "--iface", ns.HostIf, "--port", portStr, "--pid", "auto", "--out", t.TempDir())
	const topic = "agent-chaos"
	prod := labtest.NetnsProducer(ctx, t, ns, labtest.ProducerJob{Addr: ns.HostIP.String() + ":" + portStr, Topic: topic,
		ClientID: "chaos-p", Rate: 200, Duration: 75 * time.Second})

	produce := map[string]string{"api": "Produce", "topic": topic}
	writes := map[string]string{"topic": topic}
	// progress waits until the agent has counted more produce requests
	// (and, with traced, more writes) than before.
	progress := func(what string, traced bool) {
		t.Helper()
		fams := a.scrape(t)
		p0, w0 := metricSum(fams, "kscope_requests_total", produce), metricSum(fams, "kscope_write_duration_seconds", writes)
		deadline := time.Now().Add(30 * time.Second)
		for {
			time.Sleep(500 * time.Millisecond)
			fams = a.scrape(t)
			p, w := metricSum(fams, "kscope_requests_total", produce), metricSum(fams, "kscope_write_duration_seconds", writes)
			if p >= p0+50 && (!traced || w >= w0+50) {
				t.Logf("%s: produce requests %v -> %v, writes %v -> %v", what, p0, p, w0, w)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the agent counted produce requests %v -> %v, writes %v -> %v in 30s; agent: %s; producer: %s",
					what, p0, p, w0, w, a.errOut(), prod.Stderr())
			}
		}
	}
	progress("start", true)

	// The broker is killed and started again on the same port and dir.
	first := b.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s := a.waitHealth(t, 15*time.Second, func(s agentStatus) bool { return !s.Trace.Up })
	if s.Code != http.StatusServiceUnavailable || s.BrokerPID != 0 || len(s.Degraded) == 0 {
		t.Errorf("/healthz with the broker dead: %+v", s)
	}
	for b.Running() {
		time.Sleep(100 * time.Millisecond)
	}
	nb, err := lab.StartBroker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Stop() })
	a.waitHealth(t, 30*time.Second, func(s agentStatus) bool { return s.Status == "ok" && s.BrokerPID == nb.PID() })
	progress("after the broker restarted", true)

	// The capture interface goes down and comes back.
	if err := ns.SetHostLink(false); err != nil {
		t.Fatal(err)
	}
	a.waitHealth(t, 10*time.Second, func(s agentStatus) bool { return !s.Capture.Up && s.Code == http.StatusServiceUnavailable })
	a.scrape(t) // still serving
	time.Sleep(2 * time.Second)
	if err := ns.SetHostLink(true); err != nil {
		t.Fatal(err)
	}
	a.waitHealth(t, 15*time.Second, func(s agentStatus) bool { return s.Status == "ok" })
	progress("after the link came back up", false)

	// The interface is deleted and created again: a new ifindex.
	if err := ns.DeleteLink(); err != nil {
		t.Fatal(err)
	}
	a.waitHealth(t, 10*time.Second, func(s agentStatus) bool { return !s.Capture.Up })
	if err := ns.Recreate(); err != nil {
		t.Fatal(err)
	}
	a.waitHealth(t, 15*time.Second, func(s agentStatus) bool { return s.Status == "ok" })
	recreated := time.Now()
	progress("after the interface was created again", false)

	fams := a.scrape(t)
	if r := metricSum(fams, "kscope_agent_restarts_total", map[string]string{"component": "trace"}); r < 1 {
		t.Errorf("trace restarts %v, want at least 1", r)
	}
	if r := metricSum(fams, "kscope_agent_restarts_total", map[string]string{"component": "capture"}); r < 2 {
		t.Errorf("capture restarts %v, want at least 2 (link down, interface deleted)", r)
	}
	res, err := prod.Wait()
	if err != nil {
		t.Fatalf("producer: %v: %s", err, prod.Stderr())
	}
	if res.AckedAfter(recreated) == 0 {
		t.Errorf("the producer made no progress after the interface came back: %+v", res)
	}
	if err := a.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("kscope agent on SIGTERM: %v: %s", err, a.errOut())
	}
	t.Logf("producer: %d acked, %d failed, %d produce requests; agent produce requests %v; agent: %s", res.Acked, res.Failed,
		res.ProduceRequests, metricSum(fams, "kscope_requests_total", produce), strings.TrimSpace(a.errOut()))

}
